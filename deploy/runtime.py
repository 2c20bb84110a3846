"""What every part of the composition root shares: the cluster and the data directory.

``up`` runs everything (broker, producers, worker, query service) as child processes;
each part talks to the others only through the topics, exactly as the distributed
commands ``worker``, ``watch`` and ``serve`` do on their own. Each part lives in a
module of its own (`deploy.worker_part`, `deploy.sources_part`, `deploy.query_part`)
so that a process imports only its own machinery: the producers no faust, the worker
no web framework (issue 20: ``import deploy.cli`` took 2.6 s when it imported them all).

Each part recovers in place from a broker that came back empty (issue 15): the
process's `BrokerWatch` (`Cluster.watch`) tells it, and `deploy.recovery.recover_in_place` ends the
part's current generation, ensures the topics and starts a new one: the worker with a
new faust app, the query service re-reading the new topics into an emptied read model
(its HTTP socket stays bound), the producers with new sessions and full scans.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from deploy import tansu_quirks
from deploy.broker_watch import BrokerWatch
from deploy.embedded_broker import EmbeddedBroker
from deploy.settings import Settings
from deploy.topics_admin import ensure_topics, install_no_topic_auto_creation
from stores.state_files import StateFiles, state_directory
from stores.state_topic import KafkaStateTopic

log = structlog.get_logger(__name__)

MAX_MESSAGE_BYTES = 128 * 1024 * 1024
"""The largest message on any topic: `processors.app.MAX_DELTA_BYTES`, the largest graph
delta the worker sends (tests/unit/test_cli_imports.py keeps the two equal). Written
out here because importing the worker's module imports faust, which the producers and
the query service never need (issue 20)."""

TOPIC_CONFIG = {"max.message.bytes": str(MAX_MESSAGE_BYTES)}
"""For every topic; each topic's retention and compaction are its spec's (producers/topics.py)."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """Where the topics are, and which broker quirks to handle."""

    bootstrap: str
    tansu: bool
    watch: BrokerWatch | None = field(default=None, compare=False)
    """Tells the parts when the broker lost our topics; None: no recovery (benchmarks)."""

    async def end_offsets(
        self, consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        return await tansu_quirks.end_offsets(consumer, partitions, broker_is_tansu=self.tansu)


async def connect(settings: Settings, bootstrap: str) -> Cluster:
    """The broker, its topics ensured (`TopicMismatch` if one has another partition
    count), and a `BrokerWatch` primed with what the broker holds now."""
    install_no_topic_auto_creation()
    tansu = await tansu_quirks.detect_tansu(bootstrap)
    tansu_quirks.install(tansu)
    specs = settings.topics.specs(settings.partitions)
    await ensure_topics(bootstrap, specs, config=TOPIC_CONFIG)
    watch = BrokerWatch(bootstrap, [spec.name for spec in specs])
    await watch.prime()
    cluster = Cluster(bootstrap, tansu, watch)
    log.info("broker_connected", bootstrap=bootstrap, tansu=tansu)
    return cluster


@contextlib.asynccontextmanager
async def cluster_of(settings: Settings) -> AsyncIterator[Cluster]:
    """The cluster ``--broker`` names, else an embedded broker for as long as it is used."""
    if settings.bootstrap is not None:
        yield await connect(settings, settings.bootstrap)
        return
    async with EmbeddedBroker() as broker:
        yield await connect(settings, broker.bootstrap)


def ensurer(settings: Settings, cluster: Cluster) -> Callable[[], Awaitable[object]]:
    """The topics ensured again after a reset (empty ones of another count recreated)."""
    return lambda: ensure_topics(
        cluster.bootstrap,
        settings.topics.specs(settings.partitions),
        config=TOPIC_CONFIG,
        broker_is_tansu=cluster.tansu,
        recreate_empty=True,
    )


def state_files(settings: Settings) -> StateFiles:
    """The deployment's state snapshots (issue 16): written by the worker, read by it and
    by the query service and the producers' read model of this data dir."""
    return StateFiles(state_directory(settings.data_dir, settings.namespace))


def state_topic(settings: Settings, cluster: Cluster) -> KafkaStateTopic:
    """The deployment's state snapshots on the broker (issue 16): published by the
    workers (`Settings.snapshots_on_broker`), read by them and by every query replica."""
    return KafkaStateTopic(cluster.bootstrap, settings.topics.state_snapshots, cluster.end_offsets)


def run_dir(settings: Settings, role: str) -> Path:
    """A private directory per process, so that two runs never share one."""
    path = settings.data_dir / "runs" / f"{role}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


async def send_record(bootstrap: str, topic: str, key: bytes, value: bytes) -> None:
    """One keyed record, acknowledged by every in-sync replica: what the commands that
    write a compacted topic (a ranking profile, a token) send."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()
