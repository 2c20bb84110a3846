"""State snapshots on the broker: the state-snapshots topic (issue 16 §2).

The worker publishes a repository's snapshot (`stores.state_snapshot.encode`, the very
bytes it writes to disk) keyed by the repository, on the partition number of its graph
deltas, whenever its `StateKeeper` writes one. A new query replica, or a worker taking a
partition on another machine, reads the partition's latest snapshot of each repository
(`latest`), starts each repository from it and folds only the deltas after it.

A snapshot is one message (django's: 6.5 MB) keyed by its repository, unless it is over
`MAX_SNAPSHOT_BYTES` (the topic's 128 MB ``max.message.bytes``): then it goes out in parts
of `PART_BYTES` (`snapshot_messages`), keyed ``<repo>\0<index>`` on the repository's
partition, each naming the snapshot (its delta and digest), its index and the count, in
order. Compaction keeps the last record per key, so the parts of the newest snapshot all
survive, and a reader joins the parts of one snapshot only (`Latest`): parts of two
snapshots met mid-write, or a part missing, make no snapshot, and an older whole one, or
the log, decides. Parts a smaller snapshot no longer has are tombstoned by the worker that
wrote the larger one; a worker restarted meanwhile leaves them, and readers ignore them
(their snapshot is older, or incomplete).

What a message's header says is checked here (`read_header`: magic, format, contract,
header digest); its body is verified when decoded (`decode_offered`): a message that
cannot be trusted is refused, logged ``state_snapshot_rejected`` with its reason and
``source="topic"``, and the log alone decides.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition

from stores.delta_log import EndOffsets
from stores.state_snapshot import (
    ReaderSnapshot,
    SnapshotHeader,
    SnapshotRejected,
    StateSnapshot,
    decode,
    decode_reader,
    read_header,
)

log = structlog.get_logger(__name__)

MAX_SNAPSHOT_BYTES = 128 * 1024 * 1024 - 64 * 1024
"""The largest snapshot published as one message: the topics' ``max.message.bytes``
(128 MB, the worker's producer's ``max.request.size``) less room for the record batch's
envelope; a larger one goes out in parts."""
PART_BYTES = 64 * 1024 * 1024
"""The bytes of a snapshot each part carries (its envelope aside)."""
PART_MAGIC = b"GZSPART\n"
FETCH_BYTES = 128 * 1024 * 1024
"""What a reader fetches of a partition at once: a whole snapshot, whatever the broker."""
_HEADER_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Offered:
    """A repository's latest snapshot message on the topic, its header checked."""

    header: SnapshotHeader
    raw: bytes


class StateTopic(Protocol):
    """Where the state snapshots of a deployment are read back from."""

    troubled: set[int]
    """The partitions whose last read met a snapshot message it could not take
    (`Latest.troubled`): their repositories are not all known from the topic."""

    async def latest(self, partitions: Sequence[int]) -> dict[str, Offered]:
        """The latest snapshot message (greatest delta, then last in the log) of each
        repository on these partitions, whose header checks."""
        ...

    def latest_each(self, partitions: Sequence[int]) -> AsyncIterator[dict[str, Offered]]:
        """`latest` of each partition in turn: a reader of many holds one partition's
        messages at a time."""
        ...


def snapshot_messages(
    repo: str, raw: bytes, *, part_bytes: int | None = None, limit: int | None = None
) -> list[tuple[bytes, bytes]]:
    """The messages (key, value) that carry a snapshot: itself keyed by the repository,
    or, over ``limit``, its parts in order (``PART_MAGIC``, one JSON line naming the
    snapshot, its index and the count, then its slice of the bytes)."""
    if len(raw) <= (MAX_SNAPSHOT_BYTES if limit is None else limit):
        return [(repo.encode(), raw)]
    size = part_bytes or PART_BYTES
    count = -(-len(raw) // size)
    header = read_header(raw[:_HEADER_BYTES])
    digest = hashlib.sha256(raw).hexdigest()
    messages = []
    for index in range(count):
        about = {"repo": repo, "seq": header.seq, "digest": digest, "index": index, "count": count}
        line = json.dumps(about, sort_keys=True).encode() + b"\n"
        value = PART_MAGIC + line + raw[index * size : (index + 1) * size]
        messages.append((part_key(repo, index), value))
    return messages


def part_key(repo: str, index: int) -> bytes:
    return f"{repo}\0{index}".encode()


@dataclass(slots=True)
class _Parts:
    seq: int
    digest: str
    count: int
    got: dict[int, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class Latest:
    """The latest snapshot of each repository among the messages it is given, in log
    order: whole ones, and parts joined when every part of one snapshot was given (an
    earlier or incomplete set of parts gives way to the newest snapshot's)."""

    found: dict[str, Offered] = field(default_factory=dict)
    _parts: dict[str, _Parts] = field(default_factory=dict)
    refused: int = 0  # messages refused (their repository may be unknown)

    def add(self, raw: bytes, partition: int) -> None:
        if raw.startswith(PART_MAGIC):
            self._add_part(raw, partition)
        elif not keep_latest(self.found, raw, partition):
            self.refused += 1

    @property
    def troubled(self) -> bool:
        """Whether a repository of these partitions may have a snapshot this reader could
        not take (a message refused, or the newest snapshot's parts incomplete): a reader
        then cannot tell the partition's repositories without reading its deltas from
        the start (`stores.delta_seek`)."""
        found = self.found
        return bool(self.refused) or any(
            repo not in found or found[repo].header.seq < parts.seq
            for repo, parts in self._parts.items()
        )

    def _add_part(self, raw: bytes, partition: int) -> None:
        end = raw.find(b"\n", len(PART_MAGIC))
        try:
            about = json.loads(raw[len(PART_MAGIC) : end])
            repo, seq, digest = str(about["repo"]), int(about["seq"]), str(about["digest"])
            index, count = int(about["index"]), int(about["count"])
        except (ValueError, KeyError, TypeError) as exc:
            self.refused += 1
            log.warning(
                "state_snapshot_rejected",
                source="topic",
                partition=partition,
                reason="part",
                detail=repr(exc),
            )
            return
        held = self._parts.get(repo)
        if held is None or (held.seq, held.digest) != (seq, digest):
            if held is not None and seq < held.seq:
                return
            held = self._parts[repo] = _Parts(seq, digest, count)
        held.got[index] = raw[end + 1 :]
        if len(held.got) < held.count or set(held.got) != set(range(held.count)):
            return
        del self._parts[repo]
        whole = b"".join(held.got[i] for i in range(held.count))
        if hashlib.sha256(whole).hexdigest() != digest:
            self.refused += 1
            log.warning(
                "state_snapshot_rejected",
                source="topic",
                partition=partition,
                repo=repo,
                seq=seq,
                reason="parts",
                detail="the joined parts' digest differs",
            )
            return
        if not keep_latest(self.found, whole, partition):
            self.refused += 1


def keep_latest(found: dict[str, Offered], raw: bytes, partition: int) -> bool:
    """Keep ``raw`` if its header checks and it covers at least the delta of the one held
    of its repository (on a broker that does not compact, the older ones stay); False
    when its header does not check (refused, logged)."""
    try:
        header = read_header(raw[:_HEADER_BYTES])
    except SnapshotRejected as rejected:
        log.warning(
            "state_snapshot_rejected",
            source="topic",
            partition=partition,
            reason=rejected.reason,
            detail=rejected.detail,
        )
        return False
    held = found.get(header.repo)
    if held is None or header.seq >= held.header.seq:
        found[header.repo] = Offered(header, raw)
    return True


def decode_offered(offered: Offered, *, references: bool = True) -> StateSnapshot | None:
    """The snapshot of a message, verified whole, or None: refused (logged);
    ``references`` as `stores.state_snapshot.decode` takes it."""
    found = _decoded(offered, lambda raw: ReaderSnapshot(decode(raw, references=references), None))
    return None if found is None else found.snapshot


def read_offered(offered: Offered) -> ReaderSnapshot | None:
    """The snapshot of a message as a read side loads it (`decode_reader`: no references,
    the chunk postings when usable), or None: refused (logged)."""
    return _decoded(offered, decode_reader)


def _decoded(offered: Offered, read: Callable[[bytes], ReaderSnapshot]) -> ReaderSnapshot | None:
    started = time.perf_counter()
    repo = offered.header.repo
    try:
        decoded = read(offered.raw)
    except SnapshotRejected as rejected:
        log.warning(
            "state_snapshot_rejected",
            source="topic",
            repo=repo,
            seq=offered.header.seq,
            reason=rejected.reason,
            detail=rejected.detail,
        )
        return None
    snapshot = decoded.snapshot
    log.info(
        "state_snapshot_loaded",
        source="topic",
        repo=repo,
        seq=snapshot.seq,
        files=len(snapshot.files),
        bytes=len(offered.raw),
        seconds=round(time.perf_counter() - started, 3),
        postings=decoded.postings is not None,
    )
    return decoded


def _note_trouble(troubled: set[int], partitions: Sequence[int], latest: Latest) -> None:
    if latest.troubled:
        troubled.update(partitions)
    else:
        troubled.difference_update(partitions)


class InMemoryStateTopic:
    """A StateTopic over lists (keeps every message, as a broker that does not compact):
    the test double of the Kafka reader."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[bytes]] = {}
        self.troubled: set[int] = set()

    def append(self, partition: int, raw: bytes) -> None:
        self.partitions.setdefault(partition, []).append(raw)

    async def latest(self, partitions: Sequence[int]) -> dict[str, Offered]:
        latest = Latest()
        for partition in partitions:
            for raw in self.partitions.get(partition, []):
                latest.add(raw, partition)
        _note_trouble(self.troubled, partitions, latest)
        return latest.found

    async def latest_each(self, partitions: Sequence[int]) -> AsyncIterator[dict[str, Offered]]:
        for partition in partitions:
            yield await self.latest([partition])


class KafkaStateTopic:
    """The StateTopic of a Kafka-protocol topic: the partitions read with one consumer,
    from their beginning to the end they had when the read started, keeping only the
    latest message per repository as it goes (a broker that does not compact may hold
    many of each)."""

    def __init__(self, bootstrap: str, topic: str, end_offsets: EndOffsets) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self._end_offsets = end_offsets
        self.troubled: set[int] = set()

    async def latest(self, partitions: Sequence[int]) -> dict[str, Offered]:
        found: dict[str, Offered] = {}
        async for each in self._read([list(partitions)]):
            found.update(each)
        return found

    async def latest_each(self, partitions: Sequence[int]) -> AsyncIterator[dict[str, Offered]]:
        async for each in self._read([[p] for p in partitions]):
            yield each

    async def _read(self, groups: Sequence[Sequence[int]]) -> AsyncIterator[dict[str, Offered]]:
        """`latest` of each group of partitions in turn, with one consumer."""
        groups = [group for group in groups if group]
        if not groups:
            return
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=FETCH_BYTES,
            fetch_max_bytes=FETCH_BYTES,
        )
        await consumer.start()
        try:
            every = [TopicPartition(self._topic, p) for group in groups for p in group]
            consumer.assign(every)
            ends = dict(await self._end_offsets(consumer, every))  # one look for all
            for group in groups:
                tps = [TopicPartition(self._topic, p) for p in group]
                yield await self._group(consumer, tps, ends)
        finally:
            await consumer.stop()

    async def _group(
        self,
        consumer: AIOKafkaConsumer,
        tps: list[TopicPartition],
        ends: dict[TopicPartition, int],
    ) -> dict[str, Offered]:
        started = time.perf_counter()
        latest = Latest()
        found = latest.found
        messages = 0
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        pending = {tp for tp in tps if ends[tp] > 0}
        while pending:
            batch = await consumer.getmany(*pending, timeout_ms=1000, max_records=100)
            for tp, records in batch.items():
                for record in records:
                    if record.offset < ends[tp] and record.value is not None:
                        messages += 1
                        latest.add(record.value, tp.partition)
            for tp in list(pending):
                if await consumer.position(tp) >= ends[tp]:
                    pending.discard(tp)
        _note_trouble(self.troubled, [tp.partition for tp in tps], latest)
        (log.info if messages else log.debug)(
            "state_topic_read",
            topic=self._topic,
            partitions=[tp.partition for tp in tps],
            messages=messages,
            repos=len(found),
            bytes=sum(len(o.raw) for o in found.values()),
            seconds=round(time.perf_counter() - started, 3),
        )
        return found
