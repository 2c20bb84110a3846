"""Apache Kafka 4.x in KRaft mode from Maven Central jars: the production broker, for tests.

No Apache Kafka package exists on PyPI (DESIGN.md §5), but the broker's jars are on
Maven Central. `resolve_kafka_classpath` has Maven copy them (`kafka_dist/pom.xml`)
into a cache once; `ApacheKafka` formats a temporary log dir and runs one JVM that
is both broker and KRaft controller on two free loopback ports. All it needs on a
fresh machine is `mvn`, `java` (17+) and a way to Maven Central.

    async with ApacheKafka() as kafka:
        await ensure_topics(kafka.bootstrap, specs)
"""

from __future__ import annotations

import asyncio
import base64
import fcntl
import hashlib
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import structlog

from deploy.broker_process import (
    LOOPBACK,
    BrokerProcess,
    BrokerStartError,
    LaunchedBroker,
    PortTakenError,
    free_port,
    tail,
)

log = structlog.get_logger(__name__)

POM = Path(__file__).with_name("kafka_dist") / "pom.xml"
DEFAULT_CACHE_DIR = Path.home() / ".cache" / "gazetteer"

# Found in the resolved jars (unzip -l), not guessed: both live in kafka_2.13-4.4.0.jar.
KAFKA_MAIN = "kafka.Kafka"
STORAGE_TOOL_MAIN = "kafka.tools.StorageTool"

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
logger.started.name = kafka.server.KafkaRaftServer
logger.started.level = INFO
"""


def resolve_kafka_classpath(
    cache_dir: Path = DEFAULT_CACHE_DIR, *, pom: Path = POM, mvn: str = "mvn"
) -> list[Path]:
    """The broker's jars, copied from Maven Central by `mvn` on first use and cached.

    The cache is keyed by the pom's content, so changing the Kafka version resolves
    anew; a file lock lets concurrent test sessions share one resolution.
    """
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    jars_dir = cache_dir / f"kafka-jars-{digest}"
    done = jars_dir / ".complete"
    cache_dir.mkdir(parents=True, exist_ok=True)
    with (cache_dir / f".kafka-jars-{digest}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _copy_dependencies(pom, jars_dir, mvn)
            done.touch()
    jars = sorted(jars_dir.glob("*.jar"))
    if not jars:
        raise BrokerStartError(f"no jars in {jars_dir}: delete it and resolve again")
    return jars


def _copy_dependencies(pom: Path, jars_dir: Path, mvn: str) -> None:
    if shutil.which(mvn) is None:
        raise BrokerStartError(f"{mvn!r} is not on PATH: Maven resolves the Kafka jars")
    partial = jars_dir.with_name(jars_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    started = time.monotonic()
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={partial}",
            "-DincludeScope=runtime",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if result.returncode != 0:
        raise BrokerStartError(
            f"mvn could not resolve the Kafka jars (exit {result.returncode}):\n"
            + "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        )
    shutil.rmtree(jars_dir, ignore_errors=True)
    partial.rename(jars_dir)
    log.info(
        "kafka_jars_resolved",
        directory=str(jars_dir),
        jars=len(list(jars_dir.glob("*.jar"))),
        elapsed_ms=round((time.monotonic() - started) * 1000),
    )


def server_properties(
    *,
    broker_port: int,
    controller_port: int,
    log_dir: Path,
    partitions: int = 1,
    extra: Mapping[str, str] | None = None,
) -> str:
    """A single-node KRaft server.properties: broker and controller in one process."""
    properties = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{LOOPBACK}:{controller_port}",
        "listeners": f"PLAINTEXT://{LOOPBACK}:{broker_port},CONTROLLER://{LOOPBACK}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{LOOPBACK}:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": str(partitions),
        # One node: every internal topic with one replica, or they never come up.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        # A first member is assigned at once instead of after 3 s.
        "group.initial.rebalance.delay.ms": "0",
        **(extra or {}),
    }
    return "".join(f"{key}={value}\n" for key, value in properties.items())


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID, base64url without padding (22 characters).

    Never one that starts with "-": the storage tool would read it as an option
    (seen here as a 1-in-64 startup failure; Kafka's own Uuid.randomUuid() redraws
    for the same reason).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class ApacheKafka(LaunchedBroker):
    """Apache Kafka (KRaft, one node) on ``127.0.0.1:<free port>``, as an async context manager."""

    kind: Literal["kafka"] = "kafka"

    def __init__(
        self,
        *,
        partitions: int = 1,
        heap: str = "512m",
        java: str = "java",
        cache_dir: Path = DEFAULT_CACHE_DIR,
        extra_properties: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        stop_grace: float = 15.0,
        port: int | None = None,
        cluster_id: str | None = None,
    ) -> None:
        """``port``: the broker listens there (a restart where clients look for it);
        ``cluster_id``: format the new, empty storage with this id (as an operator
        reformatting a node would) instead of a random one."""
        self._fixed_port = port
        self._cluster_id = cluster_id
        self._partitions = partitions
        self._heap = heap
        self._java = java
        self._cache_dir = cache_dir
        self._extra = dict(extra_properties or {})
        self._startup_timeout = startup_timeout
        super().__init__(stop_grace=stop_grace)

    async def start(self) -> None:
        if self._process is not None:
            raise RuntimeError("ApacheKafka is already running")
        if shutil.which(self._java) is None:
            raise BrokerStartError(f"{self._java!r} is not on PATH: Apache Kafka needs Java 17+")
        classpath = await asyncio.to_thread(resolve_kafka_classpath, self._cache_dir)
        started = time.monotonic()
        for attempt in (1, 2):  # one more try if another process takes a port first
            try:
                await self._start_once(classpath)
            except PortTakenError:
                if attempt == 2 or self._fixed_port:
                    raise
                continue
            break
        assert self._process is not None
        log.info(
            "broker_started",
            kind=self.kind,
            port=self._port,
            pid=self._process.pid,
            startup_ms=round((time.monotonic() - started) * 1000),
        )

    async def _start_once(self, classpath: list[Path]) -> None:
        workdir = Path(tempfile.mkdtemp(prefix="gazetteer-kafka-"))
        broker_port = self._fixed_port or free_port()
        controller_port = free_port()
        while controller_port == broker_port:
            controller_port = free_port()
        config = workdir / "server.properties"
        config.write_text(
            server_properties(
                broker_port=broker_port,
                controller_port=controller_port,
                log_dir=workdir / "data",
                partitions=self._partitions,
                extra=self._extra,
            )
        )
        (workdir / "log4j2.properties").write_text(_LOG4J2)
        jvm = [
            self._java,
            f"-Xmx{self._heap}",
            "-Xms128m",
            # Two cores: the serial collector and no C2 start fastest here.
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={workdir / 'log4j2.properties'}",
            "-cp",
            ":".join(str(jar) for jar in classpath),
        ]
        cluster_id = self._cluster_id or new_cluster_id()
        await _format_storage(jvm, config, cluster_id, workdir / "format.log")
        process = BrokerProcess([*jvm, KAFKA_MAIN, str(config)], workdir / "server.log")
        process.spawn()
        try:
            await process.wait_until_ready(
                f"{LOOPBACK}:{broker_port}", cluster_id, self._startup_timeout
            )
        except BaseException as error:
            await process.stop(self._stop_grace)
            if isinstance(error, PortTakenError):  # retried: nothing to look at
                shutil.rmtree(workdir, ignore_errors=True)
            raise  # other failures keep the workdir: the message points at its logs
        self._process, self._port, self._workdir = process, broker_port, workdir


async def _format_storage(jvm: list[str], config: Path, cluster_id: str, log_path: Path) -> None:
    """``kafka-storage format``: a KRaft log dir must be formatted before the first start."""
    argv = [*jvm, STORAGE_TOOL_MAIN, "format", "-c", str(config), "--cluster-id", cluster_id]
    with log_path.open("wb") as out:
        result = await asyncio.to_thread(
            subprocess.run, argv, stdout=out, stderr=subprocess.STDOUT, timeout=120, check=False
        )
    if result.returncode != 0:
        raise BrokerStartError(
            f"kafka-storage format failed (exit {result.returncode}):\n{tail(log_path)}"
        )
