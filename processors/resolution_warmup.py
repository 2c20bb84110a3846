"""A restored repository resolved in the background while the worker is idle (issue 16).

A worker restored from a resolved state snapshot holds the state but not its files'
answers, so its first change used to resolve every file once (~10 s on sympy) before the
agent's edit showed. `warm_up` resolves them a slice at a time instead (`RepoIndex.warm`),
each slice ending once ``slice_s`` is spent (files' costs vary a hundredfold: a count sized
from the last slice's pace overshot to 560 ms on django after a run of cheap files) and
followed by ``asyncio.sleep(0)``, so that events, heartbeats and the fence never wait
longer than a slice and one file; a change that comes first
resolves what is still cold, exactly as before. It stops when the index is no longer
the pipeline's (the partition revoked, the index dropped) or a change ended the warm-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from processors.indexer import RepoIndex
from stores.metrics import RESOLUTION_WARM_SLICE_SECONDS, RESOLUTION_WARMED_FILES

log = structlog.get_logger(__name__)

SLICE_S = 0.02
"""A slice's budget: what an event arriving meanwhile waits for at most, plus one file."""
SLICE_FILES = 4096
"""At most this many files a slice, however cheap (a folder of translations)."""
MAX_MISMATCHES_LOGGED = 20


@dataclass(frozen=True, slots=True)
class WarmUp:
    """What a repository's warm-up did."""

    files: int  # files and folders resolved
    slices: int
    seconds: float  # from its start to its end, waits between slices included
    cpu_s: float  # the slices' own time on the loop's thread
    max_slice_ms: float
    max_slice_cpu_ms: float  # the longest slice on the thread's clock (a loaded machine's
    # scheduler may stretch a slice's wall time)
    completed: bool  # the answers are current (False: stopped, or some left cold)
    mismatched: int = 0


async def warm_up(
    repo: str,
    index: RepoIndex,
    current: Callable[[], bool] = lambda: True,
    *,
    slice_s: float = SLICE_S,
    clock: Callable[[], float] = time.perf_counter,
) -> WarmUp:
    """Warm ``index`` while ``current()`` (the index is still the pipeline's), in slices
    of ``slice_s`` on ``clock`` (at least one file each, at most `SLICE_FILES`); logged
    ``resolution_warmed`` when done, ``resolution_warm_stopped`` when cut short."""
    started = clock()
    files = slices = mismatched = 0
    waiting = -1  # what the last slice left (0: it finished the warm-up)
    cpu = longest = longest_cpu = 0.0
    while current() and index.graph.warmable:
        began, began_cpu = clock(), time.thread_time()
        warmed = index.warm(SLICE_FILES, _until(clock, began + slice_s))
        took, took_cpu = clock() - began, time.thread_time() - began_cpu
        cpu, longest_cpu = cpu + took_cpu, max(longest_cpu, took_cpu)
        files, slices, longest = files + warmed.files, slices + 1, max(longest, took)
        waiting = warmed.waiting
        RESOLUTION_WARMED_FILES.inc(warmed.files)
        RESOLUTION_WARM_SLICE_SECONDS.observe(took)
        if warmed.mismatched:
            mismatched += len(warmed.mismatched)
            log.warning(
                "resolution_warm_mismatched",
                repo=repo,
                owners=list(warmed.mismatched[:MAX_MISMATCHES_LOGGED]),
                count=len(warmed.mismatched),
            )
        await asyncio.sleep(0)
    done = WarmUp(
        files=files,
        slices=slices,
        seconds=round(clock() - started, 3),
        cpu_s=round(cpu, 3),
        max_slice_ms=round(longest * 1000, 1),
        max_slice_cpu_ms=round(longest_cpu * 1000, 1),
        completed=waiting == 0 and mismatched == 0 and index.graph.answers_current,
        mismatched=mismatched,
    )
    keys = ("files", "slices", "seconds", "cpu_s", "max_slice_ms", "max_slice_cpu_ms")
    fields = {k: getattr(done, k) for k in keys}
    if done.completed:
        log.info("resolution_warmed", repo=repo, **fields)
    else:
        reason = (
            "revoked"
            if not current()
            else "mismatched"
            if mismatched
            else "changed"  # a change resolved the rest
            if index.graph.answers_current
            else "scan_waiting"  # its barrier resolves the rest
        )
        log.info("resolution_warm_stopped", repo=repo, reason=reason, **fields)
    return done


def _until(clock: Callable[[], float], deadline: float) -> Callable[[], bool]:
    """Whether ``clock`` has passed ``deadline``: a slice's time is spent."""
    return lambda: clock() >= deadline
