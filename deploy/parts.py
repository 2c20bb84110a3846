"""What the verbs that run until stopped share: signals, a stop deadline, supervision.

``up``, ``worker``, ``watch``, ``serve`` and ``broker`` each run their parts on one
event loop until a Ctrl-C or SIGTERM (or, under ``up``, the supervisor's death); a
broker that cannot be reached or whose topics are laid out for another partition
count ends the verb with code 2 and one line saying why.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import signal
import sys
from collections.abc import Awaitable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import structlog
from aiokafka.errors import KafkaConnectionError

from deploy.child_process import watch_parent
from deploy.topics_admin import TopicMismatch

log = structlog.get_logger("gazetteer")

STOP_DEADLINE_S = 10.0
"""How long a requested stop may take before the process exits without the parts."""


def checked_roots(paths: Sequence[Path]) -> list[Path]:
    """The repositories' directories, resolved; SystemExit says which one is not."""
    roots = []
    for path in paths:
        resolved = path.expanduser().resolve()
        if not resolved.is_dir():
            raise SystemExit(f"gazetteer: {path} is not a directory")
        roots.append(resolved)
    if len(set(roots)) != len(roots):
        raise SystemExit("gazetteer: a repository is named twice")
    return roots


_PARENT_WATCH: set[asyncio.Task[None]] = set()


def stop_on_signals(stop: asyncio.Event, parent_pid: int | None = None) -> None:
    """The first SIGINT/SIGTERM sets ``stop``, a second exits at once. With a
    ``parent_pid`` (a part under `up`), the parent's death sets ``stop`` too."""
    loop = asyncio.get_running_loop()
    if parent_pid is not None:
        watching = loop.create_task(watch_parent(parent_pid, stop), name="parent-watch")
        _PARENT_WATCH.add(watching)
        watching.add_done_callback(_PARENT_WATCH.discard)

    def request_stop() -> None:
        if stop.is_set():  # a second Ctrl-C: the user means it
            exit_now(130)
        log.info("stop_requested")
        stop.set()
        loop.call_later(STOP_DEADLINE_S, _overdue)

    def _overdue() -> None:
        """A part still stopping after the deadline: say which, and stop anyway (issue
        15: Ctrl-C always stops within seconds; a part that hangs on its way out leaves
        its evidence in this line)."""
        running = sorted(t.get_name() for t in asyncio.all_tasks(loop) if not t.done())
        log.warning("stop_overdue", after_s=STOP_DEADLINE_S, still_running=running[:20])
        exit_now(0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, request_stop)


def exit_now(code: int) -> None:
    """Exit without waiting for the parts. SystemExit would not do: asyncio.run then waits
    for every cancelled task, and a part stuck on a broker that is gone (a producer sending
    its last status) never finishes. The exit hooks still run: they stop an embedded broker."""
    log.warning("stop_forced")
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def supervise(stop: asyncio.Event, parts: Sequence[Awaitable[None]]) -> None:
    """Run the parts until a stop is requested or one of them fails; then stop all."""
    tasks = [asyncio.ensure_future(p) for p in parts]
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([*tasks, stopping], return_when=asyncio.FIRST_COMPLETED)
    failed = [t for t in done if t is not stopping and t.exception() is not None]
    stop.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    stopping.cancel()
    for task in failed:
        raise task.exception()  # type: ignore[misc]
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            log.error("part_failed", error=repr(result))


def run_part(command: str, main: Coroutine[Any, Any, int | None]) -> int:
    """Run ``main`` to its end: its exit code (0 for None), or 2 with the reason when the
    broker cannot be reached or its topics have another partition count."""
    try:
        return asyncio.run(main) or 0
    except KafkaConnectionError as exc:
        print(f"gazetteer {command}: cannot reach the broker ({exc})", file=sys.stderr)
        return 2
    except TopicMismatch as exc:  # a cluster laid out for another partition count
        print(f"gazetteer {command}: {exc}", file=sys.stderr)
        return 2
