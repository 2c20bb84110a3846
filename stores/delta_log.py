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

from stores.delta_seek import AnchorCheck, DeltaOffsets, Seek
from stores.deltas import GraphDelta, assemble, decode_delta, encode_delta, peek_seq

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
    start: int = 0  # the offset the read began at (a `Seek`'s, when it held)
    fetched: int = 0  # the messages fetched from the broker


class SkippingDeltaLog(DeltaLog, Protocol):
    """A DeltaLog that can leave out what state snapshots cover (issue 16)."""

    async def read_partition_after(
        self, partition: int, covered: Mapping[str, int], seek: Seek | None = None
    ) -> PartitionRead:
        """`read_partition` without the deltas of a repository of ``covered`` numbered
        before the delta its snapshot covers (repo -> that delta): that one is kept, so
        that the reader can tell whether the log continues the snapshot.

        Given ``seek``, the read begins at its start and fetches nothing before it, once
        its anchors are where they should be (`stores.delta_seek.AnchorCheck`); when one
        is not, the partition is read from 0 instead (logged ``delta_log_seek_refused``).
        ``skipped`` then names, for each anchored repository, the delta before its
        snapshot's: left out, held by the log."""
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
        self, partition: int, covered: Mapping[str, int], seek: Seek | None = None
    ) -> PartitionRead:
        """Offsets are list positions (a delta is one message here)."""
        deltas = self.partitions.get(partition, [])
        if seek is not None:
            check = AnchorCheck(seek)
            for offset in range(seek.start, len(deltas)):
                delta = deltas[offset]
                if not check.see(offset, delta.repo.encode(), encode_delta(delta)):
                    break
            reason = check.end()
            if reason is None:
                after = deltas[seek.start :]
                return PartitionRead(list(after), seek.left_out(), seek.start, len(after))
            refused(reason)(
                "delta_log_seek_refused", partition=partition, start=seek.start, reason=reason
            )
        kept: list[GraphDelta] = []
        skipped: dict[str, int] = {}
        for delta in deltas:
            until = covered.get(delta.repo)
            if until is not None and delta.seq < until:
                skipped[delta.repo] = max(skipped.get(delta.repo, 0), delta.seq)
            else:
                kept.append(delta)
        return PartitionRead(kept, skipped, 0, len(deltas))


class KafkaDeltaLog:
    """The DeltaLog of a Kafka-protocol graph-deltas topic: one partition read from its
    beginning (or a `Seek`'s start) to the end it had when the read started. Given
    ``offsets``, it notes where each repository's last delta begins (`DeltaOffsets`)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        end_offsets: EndOffsets,
        offsets: DeltaOffsets | None = None,
    ) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self._end_offsets = end_offsets
        self._offsets = offsets

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        values = await self._read(partition, None)
        return assemble(decode_delta(value) for value in values)

    async def read_partition_after(
        self, partition: int, covered: Mapping[str, int], seek: Seek | None = None
    ) -> PartitionRead:
        if seek is not None:
            check = AnchorCheck(seek)
            fetched: list[int] = []
            values = await self._read(partition, None, seek.start, check, fetched)
            reason = check.end()
            if reason is None:
                deltas = assemble(decode_delta(value) for value in values)
                log.info(
                    "partition_read_from_snapshots",
                    partition=partition,
                    start=seek.start,
                    fetched=fetched[0],
                )
                return PartitionRead(deltas, seek.left_out(), seek.start, fetched[0])
            refused(reason)(
                "delta_log_seek_refused", partition=partition, start=seek.start, reason=reason
            )
        skipped: dict[str, int] = {}
        count: list[int] = []
        values = await self._read(partition, skipper(covered, skipped), fetched=count)
        deltas = assemble(decode_delta(value) for value in values)
        if skipped:
            log.info("partition_read_after_snapshots", partition=partition, skipped=skipped)
        return PartitionRead(deltas, skipped, 0, count[0] if count else 0)

    async def _read(
        self,
        partition: int,
        keep: Keep | None,
        start: int = 0,
        check: AnchorCheck | None = None,
        fetched: list[int] | None = None,
    ) -> list[bytes]:
        offsets = self._offsets
        begins: dict[str, tuple[int, int]] = {}  # repo -> (seq, offset its delta begins at)

        def note(offset: int, key: bytes | None, value: bytes) -> bool:
            if check is not None and not check.see(offset, key, value):
                return False
            if offsets is not None and key is not None:
                repo = key.decode(errors="replace")
                seq = peek_seq(value, repo)
                if seq is not None and begins.get(repo, (0, 0))[0] != seq:
                    begins[repo] = (seq, offset)
            return True

        values = await read_values(
            self._bootstrap,
            self._topic,
            partition,
            self._end_offsets,
            keep=keep,
            start=start,
            note=note if offsets is not None or check is not None else None,
            fetched=fetched,
        )
        if offsets is not None and (check is None or check.failed is None):
            for repo, (seq, offset) in begins.items():
                offsets.note(repo, seq, offset)
        return values


def refused(reason: str) -> Callable[..., object]:
    """How a refused seek is logged: at info when the log is shorter than the snapshots
    say (a broker that came back empty, as `up`'s embedded one after a restart: the
    partition is then read from 0 as designed), else a warning (another history)."""
    return log.info if reason.startswith("the partition ends before") else log.warning


Keep = Callable[[bytes | None, bytes], bool]
"""Whether `read_values` keeps a message, given its key and value."""
Note = Callable[[int, bytes | None, bytes], bool]
"""Told of every message `read_values` fetches (its offset, key and value) before
``keep``; False stops the read there."""


async def read_values(
    bootstrap: str,
    topic: str,
    partition: int,
    end_offsets: EndOffsets,
    *,
    keep: Keep | None = None,
    start: int = 0,
    note: Note | None = None,
    fetched: list[int] | None = None,
) -> list[bytes]:
    """The values of one partition of a topic, in log order, from ``start`` (0: its
    beginning) up to its current end (those ``keep`` accepts, given one). ``fetched``,
    given, receives the number of messages fetched."""
    tp = TopicPartition(topic, partition)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    count = 0
    try:
        consumer.assign([tp])
        end = (await end_offsets(consumer, [tp]))[tp]
        await consumer.seek_to_beginning(tp)
        if start:
            consumer.seek(tp, min(start, end))
        values: list[bytes] = []
        stopped = False
        while not stopped and await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=1000, max_records=5000)
            for message in batch.get(tp, []):
                if message.offset >= end:
                    break
                count += 1
                if message.value is None:
                    continue
                if note is not None and not note(message.offset, message.key, message.value):
                    stopped = True
                    break
                if keep is None or keep(message.key, message.value):
                    values.append(message.value)
        log.info(
            "partition_read",
            topic=topic,
            partition=partition,
            start=start,
            fetched=count,
            messages=len(values),
        )
        return values
    finally:
        if fetched is not None:
            fetched.append(count)
        await consumer.stop()
