"""Reading the graph-delta log back: how a worker or a reader restores the state.

The graph-deltas topic is the materialized state's log. A worker that takes over a
partition folds that partition's deltas into fresh indexes before it handles new
events. Reading "to the end" needs the partition's true high watermark, which some
brokers report wrongly through ListOffsets, so the caller injects ``end_offsets``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition

from stores.deltas import GraphDelta, assemble, decode_delta

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


class InMemoryDeltaLog:
    """A DeltaLog over a list: the test double of the Kafka reader."""

    def __init__(self, partitions: int = 1) -> None:
        self.partitions: dict[int, list[GraphDelta]] = {p: [] for p in range(partitions)}

    def append(self, partition: int, delta: GraphDelta) -> None:
        self.partitions.setdefault(partition, []).append(delta)

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        return list(self.partitions.get(partition, []))


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


async def read_values(
    bootstrap: str, topic: str, partition: int, end_offsets: EndOffsets
) -> list[bytes]:
    """The values of one partition of a topic, in log order, up to its current end."""
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
                if message.value is not None:
                    values.append(message.value)
        log.info("partition_read", topic=topic, partition=partition, messages=len(values))
        return values
    finally:
        await consumer.stop()
