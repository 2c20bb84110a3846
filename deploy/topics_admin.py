"""Create the pipeline's topics on a broker, idempotently, each with its own config.

    await ensure_topics(bootstrap, all_topics(partitions), config={"max.message.bytes": n})

A topic is created with ``config`` (for every topic) updated by its `TopicSpec`'s own
(retention, compaction: producers/topics.py). An existing topic keeps its partitions;
on Apache Kafka its configs are converged to those (`deploy.topic_configs.converge`:
IncrementalAlterConfigs of the keys that differ, logged, the others left alone). One
with a different partition count is refused (`TopicMismatch`): Tansu has no
CreatePartitions, and repartitioning a keyed topic would move repositories between
workers, so the operator decides. The one exception is ``recreate_empty=True`` (a
recovery after a broker reset): a mismatched topic whose partitions are all empty (end
offset 0) is deleted and created again with the configured count. That is safe only
when empty: no record is lost, and every client's position on an empty partition is 0
whichever partition it was.

No client of ours lets a metadata request create a topic: aiokafka asks with
``allow_auto_topic_creation=True`` by default, and both Tansu and Kafka (with
``auto.create.topics.enable``, its default) then create it with the broker's default
count (Tansu: 4), which is how a broker that came back empty got 4-partition topics.
`install_no_topic_auto_creation()` makes every aiokafka metadata request say False.

Topic configs are sent to Apache Kafka. Tansu
accepts them in CreateTopics and ignores them (measured with retention.ms=-1; it
has no retention, compaction or AlterConfigs, DESIGN.md §5), so there they are
dropped with one log line (``topic_configs_ignored``), not sent to be silently
ignored: on Tansu every topic keeps every record, in memory, until the broker stops.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError, for_code
from aiokafka.protocol.metadata import MetadataRequest

from deploy.broker_watch import observe
from deploy.tansu_quirks import detect_tansu
from deploy.topic_configs import converge
from producers.topics import TopicSpec

log = structlog.get_logger(__name__)


class TopicMismatch(RuntimeError):
    """A topic of ours exists with another partition count than the one configured."""

    def __init__(self, mismatches: Mapping[str, tuple[int, int]]) -> None:
        self.mismatches = dict(mismatches)  # topic -> (wanted, actual)
        listed = "; ".join(
            f"{topic} has {actual} partitions, {wanted} wanted"
            for topic, (wanted, actual) in sorted(self.mismatches.items())
        )
        counts = sorted({actual for _, actual in self.mismatches.values()})
        super().__init__(
            f"topics with the wrong partition count: {listed}. Gazetteer does not "
            "repartition a keyed topic (it would move repositories between workers). "
            "Delete these topics (their events are replayed by a full scan) or set "
            f"GAZETTEER_PARTITIONS to match ({', '.join(map(str, counts))})."
        )


_NO_AUTO_CREATE = "__gazetteer_no_auto_create__"


def install_no_topic_auto_creation() -> bool:
    """Make every aiokafka metadata request say ``allow_auto_topic_creation=False``
    unless its caller asked otherwise. Idempotent; returns whether this call installed it."""
    original = MetadataRequest.__init__
    if getattr(original, _NO_AUTO_CREATE, False):
        return False

    def __init__(
        self: MetadataRequest,
        topics: list[str] | None = None,
        allow_auto_topic_creation: bool | None = None,
    ) -> None:
        original(
            self, topics, False if allow_auto_topic_creation is None else allow_auto_topic_creation
        )

    setattr(__init__, _NO_AUTO_CREATE, True)
    MetadataRequest.__init__ = __init__  # type: ignore[method-assign]
    return True


async def ensure_topics(
    bootstrap: str,
    specs: Iterable[TopicSpec],
    *,
    replication: int = 1,
    config: Mapping[str, str] | None = None,
    broker_is_tansu: bool | None = None,
    visible_within: float = 30.0,
    recreate_empty: bool = False,
) -> tuple[str, ...]:
    """Create the topics of `specs` that are missing; return the names created.

    Returns once every topic of `specs` is in the broker's metadata with a leader for
    each partition, or raises `TimeoutError` after `visible_within` seconds.
    ``broker_is_tansu=None`` asks the broker (`deploy.tansu_quirks.detect_tansu`)
    when there are configs to send. Raises `TopicMismatch` for a topic with another
    partition count (after recreating the empty ones when ``recreate_empty``). The
    configs of the topics that existed are converged (Apache Kafka only).
    """
    install_no_topic_auto_creation()
    wanted = {spec.name: spec for spec in specs}
    configs = topic_configs(wanted.values(), config or {})
    if any(configs.values()) and broker_is_tansu is None:
        broker_is_tansu = await detect_tansu(bootstrap)
    if any(configs.values()) and broker_is_tansu:
        log.info(
            "topic_configs_ignored",
            broker="tansu",
            config=dict(config or {}),
            topics={name: cfg for name, cfg in configs.items() if cfg},
        )
        configs = {name: {} for name in configs}
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [spec for name, spec in sorted(wanted.items()) if name not in existing]
        created = await _create(admin, missing, replication, configs)
        for name in sorted(wanted.keys() & existing):
            log.debug("topic_exists", topic=name)
        mismatches = await _wait_visible(admin, wanted, visible_within)
        if mismatches and recreate_empty:
            recreated = await _recreate_empty(
                admin, bootstrap, wanted, mismatches, replication, configs
            )
            created += recreated
            mismatches = await _wait_visible(admin, wanted, visible_within)
        if mismatches:
            raise TopicMismatch(mismatches)
        # The topics that existed: their configs may be older than the specs' (those
        # created here, or by a concurrent caller running this code, have them).
        await converge(admin, {name: configs[name] for name in sorted(existing & wanted.keys())})
    finally:
        await admin.close()
    return created


def topic_configs(
    specs: Iterable[TopicSpec], config: Mapping[str, str]
) -> dict[str, dict[str, str]]:
    """Each topic's configs: ``config`` (for every topic) updated by the spec's own."""
    return {spec.name: {**config, **spec.config} for spec in specs}


async def _create(
    admin: AIOKafkaAdminClient,
    specs: list[TopicSpec],
    replication: int,
    configs: dict[str, dict[str, str]],
) -> tuple[str, ...]:
    if not specs:
        return ()
    response = await admin.create_topics(
        [
            NewTopic(spec.name, spec.partitions, replication, topic_configs=configs[spec.name])
            for spec in specs
        ]
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
) -> dict[str, tuple[int, int]]:
    deadline = time.monotonic() + within
    while True:
        described = await admin.describe_topics(sorted(wanted))
        pending = [name for name in sorted(wanted) if not _ready(described, name)]
        if not pending:
            return _partition_mismatches(described, wanted)
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


def _partition_mismatches(
    described: list[dict[str, Any]], wanted: dict[str, TopicSpec]
) -> dict[str, tuple[int, int]]:
    """topic -> (wanted, actual) partition counts, for the topics that differ."""
    mismatches = {}
    for topic in described:
        spec = wanted.get(topic["topic"])
        if spec is not None and len(topic["partitions"]) != spec.partitions:
            mismatches[spec.name] = (spec.partitions, len(topic["partitions"]))
            log.warning(
                "topic_partitions_differ",
                topic=spec.name,
                wanted=spec.partitions,
                actual=len(topic["partitions"]),
            )
    return mismatches


async def _recreate_empty(
    admin: AIOKafkaAdminClient,
    bootstrap: str,
    wanted: dict[str, TopicSpec],
    mismatches: dict[str, tuple[int, int]],
    replication: int,
    configs: dict[str, dict[str, str]],
) -> tuple[str, ...]:
    """Delete and create again the mismatched topics that hold no record."""
    seen = await observe(bootstrap, mismatches)
    empty = sorted(
        topic
        for topic in mismatches
        if all(end == 0 for (name, _), end in seen.end_offsets.items() if name == topic)
    )
    if not empty:
        return ()
    await admin.delete_topics(empty)
    log.warning("empty_topics_recreated", topics=empty, reason="wrong partition count")
    deadline = time.monotonic() + 30
    while set(empty) & set(await admin.list_topics()):  # deletion is asynchronous on Kafka
        if time.monotonic() > deadline:
            raise TimeoutError(f"topics not deleted after 30 s: {empty}")
        await asyncio.sleep(0.2)
    return await _create(admin, [wanted[name] for name in empty], replication, configs)


def _partitions(specs: list[TopicSpec], name: str) -> int:
    return next(spec.partitions for spec in specs if spec.name == name)


def _message(response: Any, name: str) -> str | None:
    for topic_name, _, *rest in response.topic_errors:
        if topic_name == name and rest:
            return str(rest[0])
    return None
