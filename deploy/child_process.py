"""Children that never outlive their parent (issue 15): ``gazetteer up`` and its parts.

Two guards, because neither alone is enough:

- On Linux, ``PR_SET_PDEATHSIG`` asks the kernel to signal the child when its parent
  dies, even by ``kill -9``. It fires when the *thread* that forked the child exits,
  so the supervisor forks from its main thread only (never from ``asyncio.to_thread``).
- Everywhere, a child told its parent's pid (``--parent-pid``) watches ``os.getppid()``:
  once it changes, the parent is gone, and the child stops (and exits hard if its stop
  hangs). This also covers a parent that died before the kernel guard was set.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

import structlog

log = structlog.get_logger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
HARD_EXIT_AFTER_S = 20.0
"""A child whose parent died and whose stop takes longer than this exits at once: a
worker's faust stop waits up to twice the session timeout on a broker that is gone."""


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.prctl  # type: ignore[no-any-return]


# Resolved once, in the parent: the code that runs between fork and exec only calls it.
_PRCTL = _load_prctl()


def die_with_parent(sig: signal.Signals, parent_pid: int) -> Callable[[], None] | None:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``sig`` when the forking
    thread of ``parent_pid`` dies; if the parent is already gone, the child ends at once.
    None off Linux (the ``--parent-pid`` watch still applies to our own children)."""
    prctl = _PRCTL
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the guard was set
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


def parent_is_gone(parent_pid: int) -> bool:
    """True once the process that started this one has exited (we were re-parented)."""
    return os.getppid() != parent_pid


async def watch_parent(parent_pid: int, stop: asyncio.Event, every_s: float = 0.5) -> None:
    """Set ``stop`` once the parent is gone, and exit hard if stopping takes longer than
    HARD_EXIT_AFTER_S. Returns when ``stop`` is set for any other reason."""
    while not parent_is_gone(parent_pid):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
        if stop.is_set() and not parent_is_gone(parent_pid):
            return
    log.warning("parent_exited", parent_pid=parent_pid)
    stop.set()
    asyncio.get_running_loop().call_later(HARD_EXIT_AFTER_S, _exit_hard)


def _exit_hard() -> None:
    log.error("stop_timed_out_without_parent", after_s=HARD_EXIT_AFTER_S)
    sys.stderr.flush()
    os._exit(1)
