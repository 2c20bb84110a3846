"""Each topic is created with its own config, and an existing topic's converge (Apache
Kafka); the embedded Tansu is told nothing and says so (issue 16). A status is keyed by
its session, on its repository's partition."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from structlog.testing import capture_logs

from deploy.embedded_broker import EmbeddedBroker
from deploy.kafka_dist import ApacheKafka
from deploy.topic_configs import describe_topic_configs
from deploy.topics_admin import ensure_topics
from producers.kafka_sink import KafkaSink
from producers.topics import Topics, TopicSpec, status_key
from query.materializer import partition_of
from tests.factories import source_status

pytestmark = pytest.mark.integration

Broker = EmbeddedBroker | ApacheKafka


async def described(bootstrap: str, names: list[str]) -> dict[str, dict[str, str | None]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return await describe_topic_configs(admin, names)
    finally:
        await admin.close()


async def test_every_topic_is_created_with_its_own_config(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    specs = Topics(unique_name("cfg")).specs(2)
    common = {"max.message.bytes": "134217728"}
    with capture_logs() as logs:
        created = await ensure_topics(broker.bootstrap, specs, config=common)
    assert created == tuple(sorted(spec.name for spec in specs))
    ignored = [e for e in logs if e["event"] == "topic_configs_ignored"]
    if broker.kind == "tansu":
        (said,) = ignored  # once, naming every topic's config
        assert said["topics"] == {spec.name: {**common, **spec.config} for spec in specs}
        return
    assert ignored == []
    configs = await described(broker.bootstrap, [spec.name for spec in specs])
    for spec in specs:
        have = configs[spec.name]
        assert {name: have[name] for name in {**common, **spec.config}} == {
            **common,
            **spec.config,
        }, spec.name
    # The numbers, as a reader of `kafka-configs.sh --describe` sees them:
    sources = configs[specs[1].name]
    assert (sources["cleanup.policy"], sources["retention.ms"]) == ("compact,delete", "2592000000")
    assert (sources["min.compaction.lag.ms"], sources["segment.ms"]) == ("600000", "600000")
    assert configs[specs[2].name]["retention.ms"] == "-1"  # graph-deltas: everything


async def test_an_existing_sources_topic_with_the_old_config_converges(
    kafka_broker: ApacheKafka, unique_name: Callable[[str], str]
) -> None:
    sources = Topics(unique_name("old")).specs(2)[1]
    # As a deployment before issue 16 made it, plus an override of the operator's.
    old = TopicSpec(sources.name, 2, {"retention.ms": "-1", "compression.type": "gzip"})
    assert await ensure_topics(kafka_broker.bootstrap, [old]) == (sources.name,)

    with capture_logs() as logs:
        assert await ensure_topics(kafka_broker.bootstrap, [sources]) == ()
    (converged,) = [e for e in logs if e["event"] == "topic_config_converged"]
    assert (converged["topic"], converged["changed"]) == (
        sources.name,
        {
            "cleanup.policy": ["delete", "compact,delete"],
            "min.compaction.lag.ms": ["0", "600000"],
            "retention.ms": ["-1", "2592000000"],
            "segment.ms": ["604800000", "600000"],
        },
    )
    have = (await described(kafka_broker.bootstrap, [sources.name]))[sources.name]
    assert {name: have[name] for name in sources.config} == dict(sources.config)
    assert have["compression.type"] == "gzip"  # not ours: left as the operator set it

    with capture_logs() as again:
        await ensure_topics(kafka_broker.bootstrap, [sources])
    assert [e for e in again if e["event"].startswith("topic_config")] == []


async def test_a_status_lands_on_its_repositorys_partition_under_its_session_key(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topics = Topics(unique_name("keys"))
    await ensure_topics(broker.bootstrap, [topics.specs(5)[1]])
    sink = KafkaSink(broker.bootstrap, topics=topics)
    await sink.start()
    try:
        for repo in ("app-1", "django-0f1e2d3c", "sympy-99999999"):
            await sink.publish_status(source_status(1, repo=repo, producer=f"{repo}-p"))
    finally:
        await sink.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topics.sources, p) for p in range(5)])
        records: list = []
        deadline = time.monotonic() + 20  # a bound on a broken run, not a measurement
        while len(records) < 3 and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                records.extend(batch)
    finally:
        await consumer.stop()
    assert sorted((r.key, r.partition) for r in records) == sorted(
        (status_key(repo, f"{repo}-p"), partition_of(repo, 5))
        for repo in ("app-1", "django-0f1e2d3c", "sympy-99999999")
    )
