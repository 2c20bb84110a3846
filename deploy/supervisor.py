"""Child processes kept running: restarted with capped backoff, given up on when they
keep crashing, stopped within a bounded grace (issue 15).

``gazetteer up`` runs the worker, the producers and the query service as children of
one supervisor, so that CPU work in one part (a parse, a barrier, a recluster, a long
question) never delays another's event loop. The policy is a pure value
(`RestartPolicy.delay`); `Supervisor` is the shell around ``subprocess.Popen``.

Each child leads its own process group: a terminal's Ctrl-C reaches the supervisor
alone, which then stops the children in one place (SIGTERM, SIGKILL after the grace).
Children are forked from the thread that runs the supervisor, the main thread, because
``PR_SET_PDEATHSIG`` (deploy/child_process.py) fires when the forking thread exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import structlog

from deploy.child_process import die_with_parent

log = structlog.get_logger(__name__)


USAGE_EXIT = 2
"""What ``gazetteer`` exits with when it refuses to run (deploy/cli.py)."""


@dataclass(frozen=True, slots=True)
class RestartPolicy:
    """Restart after ``backoff_s``, doubling per recent exit up to ``backoff_cap_s``; give
    up once more than ``max_restarts`` exits fall within ``window_s``."""

    max_restarts: int = 5
    window_s: float = 60.0
    backoff_s: float = 0.5
    backoff_cap_s: float = 10.0

    def delay(self, exits: Sequence[float], now: float) -> float | None:
        """Seconds to wait before the next start, given the times of the exits so far
        (the last one included); None: give up."""
        recent = sum(1 for t in exits if now - t <= self.window_s)
        if recent > self.max_restarts:
            return None
        return min(self.backoff_cap_s, self.backoff_s * 2 ** max(0, recent - 1))


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """One part: its role (for logs), its command, the fds it inherits, what to do with
    each line it prints (None: its stdout is ours), and the paths it leaves behind
    when it dies without cleaning up (by pid)."""

    role: str
    argv: tuple[str, ...]
    pass_fds: tuple[int, ...] = ()
    on_stdout: Callable[[str], None] | None = None
    leftovers: Callable[[int], Sequence[Path]] = lambda pid: ()


class GaveUpError(RuntimeError):
    """A part kept crashing: the supervisor stopped everything."""


@dataclass(slots=True)
class _Running:
    spec: ChildSpec
    popen: subprocess.Popen[str] | None = None
    exits: list[float] = field(default_factory=list)
    restart_at: float | None = None
    starts: int = 0


class Supervisor:
    """Runs the children until ``stop`` is set or one is given up on; then stops them.

    ``check`` runs every tick (the embedded broker's own supervision hooks in there)."""

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        *,
        policy: RestartPolicy = RestartPolicy(),
        grace_s: float = 10.0,
        tick_s: float = 0.1,
        check: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._parts = [_Running(spec) for spec in specs]
        self._policy = policy
        self._grace_s = grace_s
        self._tick_s = tick_s
        self._check = check
        self._pid = os.getpid()

    @property
    def pids(self) -> dict[str, int]:
        return {p.spec.role: p.popen.pid for p in self._parts if p.popen is not None}

    async def run(self, stop: asyncio.Event) -> None:
        """Raises GaveUpError when a part keeps crashing (after stopping the others)."""
        _LIVE.add(self)
        try:
            for part in self._parts:
                self._spawn(part)
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._tick_s)
                if stop.is_set():
                    break
                self._tend(time.monotonic())
                if self._check is not None:
                    await self._check()
        finally:
            await self.stop()
            _LIVE.discard(self)

    def _tend(self, now: float) -> None:
        for part in self._parts:
            if part.restart_at is not None:
                if now >= part.restart_at:
                    part.restart_at = None
                    self._spawn(part)
                continue
            if part.popen is None or (code := part.popen.poll()) is None:
                continue
            pid = part.popen.pid
            self._clean(part, pid)
            part.exits.append(now)
            # Exit code 2 is the CLI's refusal (bad settings, a broker out of reach, topics
            # of another partition count): starting again would only say it again.
            delay = self._policy.delay(part.exits, now)
            log.warning("part_exited", role=part.spec.role, pid=pid, code=code)
            if code == USAGE_EXIT:
                raise GaveUpError(f"the {part.spec.role} refused to run (exit code 2); stopping")
            if delay is None:
                log.error(
                    "part_given_up",
                    role=part.spec.role,
                    exits=len(part.exits),
                    window_s=self._policy.window_s,
                    code=code,
                )
                raise GaveUpError(
                    f"the {part.spec.role} exited {self._policy.max_restarts + 1} times within"
                    f" {self._policy.window_s:.0f} s (last exit code {code}); stopping"
                )
            part.restart_at = now + delay

    def _spawn(self, part: _Running) -> None:
        # Forked from this (the main) thread: see the module docstring.
        spec = part.spec
        part.popen = subprocess.Popen(
            spec.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if spec.on_stdout is not None else None,
            text=True,
            pass_fds=spec.pass_fds,
            process_group=0,
            preexec_fn=die_with_parent(signal.SIGTERM, self._pid),
        )
        part.starts += 1
        if spec.on_stdout is not None and part.popen.stdout is not None:
            threading.Thread(
                target=_relay, args=(part.popen.stdout, spec.on_stdout), daemon=True
            ).start()
        event = "part_started" if part.starts == 1 else "part_restarted"
        log.info(event, role=spec.role, pid=part.popen.pid, start=part.starts)

    async def stop(self) -> None:
        """SIGTERM every child, SIGKILL those still running after the grace; a child that
        exits on its own meanwhile (a terminal's Ctrl-C reached it too) is no crash."""
        running = [p for p in self._parts if p.popen is not None and p.popen.poll() is None]
        for part in running:
            _signal_group(part.popen, signal.SIGTERM)  # type: ignore[arg-type]
        deadline = time.monotonic() + self._grace_s
        while any(p.popen.poll() is None for p in running) and time.monotonic() < deadline:  # type: ignore[union-attr]
            await asyncio.sleep(0.05)
        for part in running:
            assert part.popen is not None
            if part.popen.poll() is None:
                log.warning("part_killed", role=part.spec.role, pid=part.popen.pid)
                _signal_group(part.popen, signal.SIGKILL)
                await asyncio.to_thread(part.popen.wait)
        for part in self._parts:
            if part.popen is not None:
                self._clean(part, part.popen.pid)
                log.info(
                    "part_stopped", role=part.spec.role, pid=part.popen.pid, code=part.popen.poll()
                )
                part.popen = None

    def kill_now(self) -> None:
        """A second Ctrl-C: SIGKILL every child at once, waiting for none."""
        for part in self._parts:
            if part.popen is not None and part.popen.poll() is None:
                _signal_group(part.popen, signal.SIGKILL)
                self._clean(part, part.popen.pid)

    @staticmethod
    def _clean(part: _Running, pid: int) -> None:
        for path in part.spec.leftovers(pid):
            shutil.rmtree(path, ignore_errors=True)


_LIVE: set[Supervisor] = set()


@atexit.register
def _kill_leftovers() -> None:
    """A forced exit (a second Ctrl-C runs the exit hooks, then ``os._exit``) takes the
    children down first; the broker's hook (registered earlier, so run later) follows."""
    for supervisor in list(_LIVE):
        supervisor.kill_now()


def _signal_group(popen: subprocess.Popen[str], sig: signal.Signals) -> None:
    # The child leads its own group (process_group=0): whatever it spawned goes too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(popen.pid, sig)


def _relay(stream: IO[str], on_line: Callable[[str], None]) -> None:
    for line in stream:
        on_line(line)
