"""Create the pipeline's topics on a broker, idempotently.

    await ensure_topics(bootstrap, all_topics(partitions), config={"retention.ms": "-1"})

Existing topics are left as they are (a different partition count is logged, not
changed: Tansu has no CreatePartitions, and repartitioning a keyed topic would move
repositories between workers). Topic configs are sent to Apache Kafka. Tansu
accepts them in CreateTopics and ignores them (measured with retention.ms=-1; it
has no retention, compaction or AlterConfigs, DESIGN.md §5), so there they are
dropped with a log line, not sent to be silently ignored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code

from deploy.tansu_quirks import detect_tansu
from producers.topics import TopicSpec

log = structlog.get_logger(__name__)


async def ensure_topics(
    bootstrap: str,
    specs: Iterable[TopicSpec],
    *,
    replication: int = 1,
    config: Mapping[str, str] | None = None,
    broker_is_tansu: bool | None = None,
    visible_within: float = 30.0,
) -> tuple[str, ...]:
    """Create the topics of `specs` that are missing; return the names created.

    Returns once every topic of `specs` is in the broker's metadata with a leader for
    each partition, or raises `TimeoutError` after `visible_within` seconds.
    ``broker_is_tansu=None`` asks the broker (`deploy.tansu_quirks.detect_tansu`)
    when there are configs to send.
    """
    wanted = {spec.name: spec for spec in specs}
    topic_config = dict(config or {})
    if topic_config and broker_is_tansu is None:
        broker_is_tansu = await detect_tansu(bootstrap)
    if topic_config and broker_is_tansu:
        log.info("topic_configs_ignored", broker="tansu", config=topic_config)
        topic_config = {}
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [spec for name, spec in sorted(wanted.items()) if name not in existing]
        created = await _create(admin, missing, replication, topic_config)
        for name in sorted(wanted.keys() & existing):
            log.debug("topic_exists", topic=name)
        await _wait_visible(admin, wanted, visible_within)
    finally:
        await admin.close()
    return created


async def _create(
    admin: AIOKafkaAdminClient,
    specs: list[TopicSpec],
    replication: int,
    config: dict[str, str],
) -> tuple[str, ...]:
    if not specs:
        return ()
    response = await admin.create_topics(
        [NewTopic(spec.name, spec.partitions, replication, topic_configs=config) for spec in specs]
    )
    created = []
    for name, error_code, *_ in response.topic_errors:
        error = for_code(error_code)
        if error_code == 0:
            created.append(name)
            log.info("topic_created", topic=name, partitions=_partitions(specs, name))
        elif error is TopicAlreadyExistsError:  # created by a concurrent caller: fine
            log.debug("topic_exists", topic=name)
        else:
            raise error(f"creating topic {name}: {_message(response, name)}")
    return tuple(sorted(created))


async def _wait_visible(
    admin: AIOKafkaAdminClient, wanted: dict[str, TopicSpec], within: float
) -> None:
    deadline = time.monotonic() + within
    while True:
        described = await admin.describe_topics(sorted(wanted))
        pending = [name for name in sorted(wanted) if not _ready(described, name)]
        if not pending:
            _log_partition_mismatches(described, wanted)
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics not visible in metadata after {within:.0f} s: {pending}")
        await asyncio.sleep(0.1)


def _ready(described: list[dict[str, Any]], name: str) -> bool:
    for topic in described:
        if topic["topic"] == name:
            partitions = topic["partitions"]
            return (
                topic["error_code"] == 0
                and bool(partitions)
                and all(p["error_code"] == 0 and p["leader"] >= 0 for p in partitions)
            )
    return False


def _log_partition_mismatches(
    described: list[dict[str, Any]], wanted: dict[str, TopicSpec]
) -> None:
    for topic in described:
        spec = wanted.get(topic["topic"])
        if spec is not None and len(topic["partitions"]) != spec.partitions:
            log.warning(
                "topic_partitions_differ",
                topic=spec.name,
                wanted=spec.partitions,
                actual=len(topic["partitions"]),
            )


def _partitions(specs: list[TopicSpec], name: str) -> int:
    return next(spec.partitions for spec in specs if spec.name == name)


def _message(response: Any, name: str) -> str | None:
    for topic_name, _, *rest in response.topic_errors:
        if topic_name == name and rest:
            return str(rest[0])
    return None
