"""A Kafka-protocol broker as a child process: free ports, readiness, a clean stop.

Shared by the embedded Tansu launcher (`deploy.embedded_broker`) and the Apache
Kafka test harness (`deploy.kafka_dist`). The broker runs in its own process
group, so a Ctrl-C in the terminal does not reach it directly: the owner stops it
(`BrokerProcess.stop`, from an ``async with`` exit or a ``finally``), and an
``atexit`` hook stops whatever is still running when the interpreter exits
(SIGTERM, then SIGKILL after the grace period). A ``kill -9`` of the Python
process would leave the broker running: on Linux, a broker spawned from the main
thread gets SIGKILL from the kernel when its parent dies (``PR_SET_PDEATHSIG``,
deploy/child_process.py; from another thread it would fire when that thread ends,
so there it is not set). Elsewhere nothing in user space prevents that portably.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import structlog
from aiokafka import AIOKafkaClient
from aiokafka.errors import KafkaError
from aiokafka.protocol.metadata import MetadataRequest

from deploy.child_process import die_with_parent

LOOPBACK = "127.0.0.1"


log = structlog.get_logger(__name__)


class BrokerStartError(RuntimeError):
    """The broker process exited or did not answer the Kafka protocol in time."""


class PortTakenError(BrokerStartError):
    """Another process took the broker's port between `free_port` and the bind: retry."""


# What Tansu ("AddrInUse") and the JVM ("BindException: Address already in use")
# print when their listener port is taken.
_BIND_FAILURES = ("addrinuse", "address already in use", "address in use")


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port that nothing listens on right now.

    The kernel picks it (bind to port 0), so two launchers on one machine get
    different ports; the small window between closing this socket and the broker
    binding it is covered by `BrokerProcess` callers retrying on a lost race.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def tail(path: Path, lines: int = 40) -> str:
    """The last `lines` lines of a log file, or a note that there is none."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


class BrokerProcess:
    """One broker child process whose output goes to `log_path`."""

    def __init__(self, argv: Sequence[str], log_path: Path, *, cwd: Path | None = None):
        self.argv = tuple(argv)
        self.log_path = log_path
        self._cwd = cwd
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._popen is None:
            raise RuntimeError("the broker process was not started")
        return self._popen.pid

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def spawn(self) -> None:
        # A log file, not a pipe: nobody reads a pipe while the broker runs, and a
        # full pipe would block the broker.
        in_main_thread = threading.current_thread() is threading.main_thread()
        with self.log_path.open("ab") as log:
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self._cwd,
                start_new_session=True,
                preexec_fn=die_with_parent(signal.SIGKILL, os.getpid()) if in_main_thread else None,
            )
        _LIVE.add(self)

    async def wait_until_ready(
        self, bootstrap: str, cluster_id: str, within: float, every_s: float = 0.1
    ) -> None:
        """Wait until the broker answers a Metadata request with our `cluster_id`, asking
        every ``every_s`` (a TCP connect, then the request once it accepts).

        The cluster id tells our broker from another one that won the race for the
        port. Raises `BrokerStartError` with the tail of the broker's log when the
        process exits first or `within` seconds pass.
        """
        host, _, port = bootstrap.rpartition(":")
        deadline = time.monotonic() + within
        while True:
            if not self.running:
                log_tail = tail(self.log_path)
                error = (
                    PortTakenError
                    if any(sign in log_tail.lower() for sign in _BIND_FAILURES)
                    else BrokerStartError
                )
                raise error(
                    f"broker exited with code {self._popen.returncode if self._popen else None}"
                    f" before answering on {bootstrap}: {' '.join(self.argv[:2])} ...\n"
                    f"--- {self.log_path} ---\n{log_tail}"
                )
            # A bare TCP connect first: aiokafka logs every refused bootstrap loudly.
            if await _accepts(host, int(port)) and await _answers_metadata(bootstrap, cluster_id):
                return
            if time.monotonic() > deadline:
                raise BrokerStartError(
                    f"broker did not answer the Kafka protocol on {bootstrap} within"
                    f" {within:.0f} s\n--- {self.log_path} ---\n{tail(self.log_path)}"
                )
            await asyncio.sleep(every_s)

    async def stop(self, grace: float) -> int | None:
        """SIGTERM the process group, SIGKILL it after `grace` seconds; the exit code."""
        if self._popen is None:
            return None
        # Signal before the first await: if this task is cancelled again while
        # waiting, the broker is already on its way down and atexit finishes it.
        self._signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self._popen.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self._popen.poll() is None:
            self._signal(signal.SIGKILL)
            while self._popen.poll() is None:
                await asyncio.sleep(0.05)
        _LIVE.discard(self)
        return self._popen.returncode

    def kill_now(self) -> None:
        """SIGKILL, waiting for nothing (a second Ctrl-C)."""
        if self._popen is not None and self._popen.poll() is None:
            self._signal(signal.SIGKILL)

    def stop_now(self, grace: float = 5.0) -> None:
        """The blocking `stop`, for atexit and other places without an event loop."""
        if self._popen is None or self._popen.poll() is not None:
            _LIVE.discard(self)
            return
        self._signal(signal.SIGTERM)
        try:
            self._popen.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self._popen.wait()
        _LIVE.discard(self)

    def _signal(self, sig: signal.Signals) -> None:
        assert self._popen is not None
        # The broker leads its own process group (start_new_session): signal the
        # group so that anything it spawned goes down with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._popen.pid, sig)


async def _accepts(host: str, port: int) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=1.0)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _answers_metadata(bootstrap: str, cluster_id: str) -> bool:
    client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    try:
        await client.bootstrap()
        response = await client.send(client.get_random_node(), MetadataRequest([]))
    except KafkaError:
        return False
    else:
        if response.cluster_id != cluster_id:
            raise PortTakenError(
                f"another broker (cluster {response.cluster_id!r}) answers on {bootstrap}"
            )
        return bool(response.brokers)
    finally:
        await client.close()


_LIVE: set[BrokerProcess] = set()


@atexit.register
def _stop_leftovers() -> None:
    for process in list(_LIVE):
        process.stop_now()


class LaunchedBroker:
    """What the embedded Tansu and the test suite's Apache Kafka share: a broker process
    on a loopback port, its work directory, and a clean stop (``async with`` works)."""

    kind: str = "broker"

    def __init__(self, *, stop_grace: float) -> None:
        self._stop_grace = stop_grace
        self._process: BrokerProcess | None = None
        self._port: int | None = None
        self._workdir: Path | None = None

    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"``, for ``bootstrap_servers=``."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not running: call start() first")
        return f"{LOOPBACK}:{self._port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    @property
    def running(self) -> bool:
        """False once the broker process has exited (or before it started)."""
        return self._process is not None and self._process.running

    def kill_now(self) -> None:
        if self._process is not None:
            self._process.kill_now()

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        if self._process is None:
            return
        process, port = self._process, self._port
        returncode = await process.stop(self._stop_grace)
        log.info("broker_stopped", kind=self.kind, port=port, pid=process.pid, code=returncode)
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
        self._process = self._port = self._workdir = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
