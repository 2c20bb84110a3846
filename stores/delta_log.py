"""Reading the graph-delta log back: how a worker or a reader restores the state.

The graph-deltas topic is the materialized state's log. A worker that takes over a
partition folds that partition's deltas into fresh indexes before it handles new
events. Reading "to the end" needs the partition's true high watermark, which some
brokers report wrongly through ListOffsets, so the caller injects ``end_offsets``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition

from stores.deltas import GraphDelta, assemble, decode_delta, peek_seq

log = structlog.get_logger(__name__)

EndOffsets = Callable[
    [AIOKafkaConsumer, Sequence[TopicPartition]], Awaitable[Mapping[TopicPartition, int]]
]


class DeltaLog(Protocol):
    """Where the graph deltas of a partition are read back from: a worker that takes a
    partition over restores its repositories' states by folding them."""

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        """Every whole delta of one partition, in log order, up to its current end (the
        parts of a delta sent in parts joined; those of one never completed left out)."""
        ...


@dataclass(frozen=True, slots=True)
class PartitionRead:
    """A partition's whole deltas in log order, but those that state snapshots cover,
    left out undecoded: ``skipped`` holds, per repository, the highest one left out."""

    deltas: list[GraphDelta]
    skipped: dict[str, int] = field(default_factory=dict)


class SkippingDeltaLog(DeltaLog, Protocol):
    """A DeltaLog that can leave out what state snapshots cover (issue 16)."""

    async def read_partition_after(
        self, partition: int, covered: Mapping[str, int]
    ) -> PartitionRead:
        """`read_partition` without the deltas of a repository of ``covered`` numbered
        before the delta its snapshot covers (repo -> that delta): that one is kept, so
        that the reader can tell whether the log continues the snapshot."""
        ...


def skipper(covered: Mapping[str, int], skipped: dict[str, int]) -> Keep:
    """The `read_values` filter of `read_partition_after`: a message of a covered
    repository whose delta number (`peek_seq`) is before its snapshot's is left out, and
    noted in ``skipped``; any other is kept (and decoded)."""

    def keep(key: bytes | None, value: bytes) -> bool:
        if key is None:
            return True
        repo = key.decode(errors="replace")
        until = covered.get(repo)
        if until is None:
            return True
        seq = peek_seq(value, repo)
        if seq is None or seq >= until:
            return True
        skipped[repo] = max(skipped.get(repo, 0), seq)
        return False

    return keep


class InMemoryDeltaLog:
    """A DeltaLog over a list: the test double of the Kafka reader."""

    def __init__(self, partitions: int = 1) -> None:
        self.partitions: dict[int, list[GraphDelta]] = {p: [] for p in range(partitions)}

    def append(self, partition: int, delta: GraphDelta) -> None:
        self.partitions.setdefault(partition, []).append(delta)

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        return list(self.partitions.get(partition, []))

    async def read_partition_after(
        self, partition: int, covered: Mapping[str, int]
    ) -> PartitionRead:
        kept: list[GraphDelta] = []
        skipped: dict[str, int] = {}
        for delta in self.partitions.get(partition, []):
            until = covered.get(delta.repo)
            if until is not None and delta.seq < until:
                skipped[delta.repo] = max(skipped.get(delta.repo, 0), delta.seq)
            else:
                kept.append(delta)
        return PartitionRead(kept, skipped)


class KafkaDeltaLog:
    """The DeltaLog of a Kafka-protocol graph-deltas topic: one partition read from its
    beginning to the end it had when the read started."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        end_offsets: EndOffsets,
    ) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self._end_offsets = end_offsets

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        values = await read_values(self._bootstrap, self._topic, partition, self._end_offsets)
        return assemble(decode_delta(value) for value in values)

    async def read_partition_after(
        self, partition: int, covered: Mapping[str, int]
    ) -> PartitionRead:
        skipped: dict[str, int] = {}
        keep = skipper(covered, skipped)
        values = await read_values(
            self._bootstrap, self._topic, partition, self._end_offsets, keep=keep
        )
        deltas = assemble(decode_delta(value) for value in values)
        if skipped:
            log.info("partition_read_after_snapshots", partition=partition, skipped=skipped)
        return PartitionRead(deltas, skipped)


Keep = Callable[[bytes | None, bytes], bool]
"""Whether `read_values` keeps a message, given its key and value."""


async def read_values(
    bootstrap: str,
    topic: str,
    partition: int,
    end_offsets: EndOffsets,
    *,
    keep: Keep | None = None,
) -> list[bytes]:
    """The values of one partition of a topic, in log order, up to its current end (those
    ``keep`` accepts, given one)."""
    tp = TopicPartition(topic, partition)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    try:
        consumer.assign([tp])
        end = (await end_offsets(consumer, [tp]))[tp]
        await consumer.seek_to_beginning(tp)
        values: list[bytes] = []
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=5000)
            for message in batch.get(tp, []):
                if message.offset >= end:
                    break
                if message.value is not None and (keep is None or keep(message.key, message.value)):
                    values.append(message.value)
        log.info("partition_read", topic=topic, partition=partition, messages=len(values))
        return values
    finally:
        await consumer.stop()
