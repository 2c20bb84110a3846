"""A delta too large for one message travels in parts; readers apply only whole deltas,
and a worker that stops between two parts loses nothing."""

from __future__ import annotations

import asyncio

import pytest

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, Message
from producers.events import encode
from producers.topics import DEFAULT_TOPICS
from stores.dead_letters import DeadLetter
from stores.deltas import (
    DeltaAssembler,
    GraphDelta,
    assemble,
    decode_delta,
    encode_delta,
    encode_parts,
)
from stores.repo_state import RepoState
from tests.factories import Stamp, graph_delta, tiny_parse

LIMIT = 4096


def scan_events(stamp: Stamp, files: int = 60) -> list:  # type: ignore[type-arg]
    """A scan whose barrier resolves 60 files importing 4 others each: 30 kB of edges."""
    events = [
        stamp.changed(
            f"pkg/m{i}.py",
            "".join(f"import pkg.m{(i + k) % files}\n" for k in range(1, 5)) + "def f\n",
            origin="scan",
        )
        for i in range(files)
    ]
    return [*events, stamp.scan_completed("c1")]


def barrier() -> GraphDelta:
    index = RepoIndex("app-1", parse=tiny_parse)
    deltas = [index.handle(e, now=1.0) for e in scan_events(Stamp())]
    last = deltas[-1]
    assert last is not None and last.barrier == "scan_completed"
    return last


def test_a_delta_within_the_limit_is_one_message_as_before() -> None:
    delta = graph_delta("app-1", 1, files_removed=("a.py",))
    assert encode_parts(delta, LIMIT) == [encode_delta(delta)]
    assert decode_delta(encode_parts(delta, LIMIT)[0]).part is None


def test_a_large_delta_goes_in_parts_within_the_limit_that_join_to_it_exactly() -> None:
    delta = barrier()
    messages = encode_parts(delta, LIMIT)
    parts = [decode_delta(m) for m in messages]
    assert len(encode_delta(delta)) > 5 * LIMIT
    assert all(len(m) <= LIMIT for m in messages)
    assert [p.part.index for p in parts if p.part] == list(range(len(parts)))
    assert {(p.part.group, p.part.count) for p in parts if p.part} == {
        (parts[0].part.group, len(parts))  # type: ignore[union-attr]
    }
    # Every part carries the delta's own fields: the barrier, its seq, its source.
    assert {(p.seq, p.barrier, p.indexed_commit, p.source) for p in parts} == {
        (delta.seq, "scan_completed", "c1", delta.source)
    }
    assert assemble(parts) == [delta]
    # In any order, a part delivered twice included: still the one delta.
    assert assemble([*reversed(parts), parts[0]]) == [delta]
    # Encoding again (a retried send) yields the same messages.
    assert encode_parts(delta, LIMIT) == messages


def test_a_record_larger_than_the_limit_travels_alone_in_its_part() -> None:
    paths = ("big/" + "x" * (2 * LIMIT), *(f"small/{i:04}.py" for i in range(400)))
    delta = graph_delta("app-1", 3, files_removed=paths)
    messages = encode_parts(delta, LIMIT)
    oversized = [decode_delta(m) for m in messages if len(m) > LIMIT]
    assert [d.files_removed for d in oversized] == [paths[:1]]
    assert assemble(decode_delta(m) for m in messages) == [delta]


def test_parts_are_held_until_the_last_arrives_and_never_applied_alone() -> None:
    delta = barrier()
    parts = [decode_delta(m) for m in encode_parts(delta, LIMIT)]
    assembler = DeltaAssembler()
    assert [assembler.add(p) for p in parts[:-1]] == [None] * (len(parts) - 1)
    assert assembler.incomplete == 1
    assert assembler.add(parts[-1]) == delta
    assert assembler.incomplete == 0


def test_parts_of_a_delta_handled_again_after_a_stop_give_way_to_the_new_one() -> None:
    delta = barrier()
    first = [decode_delta(m) for m in encode_parts(delta, LIMIT)]
    # The worker stopped after two parts; its successor handled the event again, later.
    again = delta.model_copy(update={"applied_at": 2.0})
    second = [decode_delta(m) for m in encode_parts(again, LIMIT)]
    assert first[0].part != second[0].part
    other = [
        decode_delta(m)
        for m in encode_parts(graph_delta("app-2", 1, files_removed=("y" * LIMIT, "z")), LIMIT)
    ]
    assembler = DeltaAssembler()
    stream = [*first[:2], other[0], *second]
    assert [d for d in map(assembler.add, stream) if d is not None] == [again]
    # The stale parts are dropped; another repository's parts wait for their last one.
    assert assembler.incomplete == 1
    assert assembler.add(other[1]) is not None and assembler.incomplete == 0


class StopWorker(BaseException):
    """The worker's process ends here (not an error the pipeline could retry)."""


class BytesLog:
    """The graph-deltas topic as the bytes on it, read back as a worker restores."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        return assemble(decode_delta(m) for m in self.messages)


class BytesSink:
    """Encodes as the Kafka sink does; ``stop_after`` messages, the worker stops."""

    def __init__(self, log: BytesLog, stop_after: int | None = None) -> None:
        self.log, self.stop_after = log, stop_after

    async def publish_deltas(self, deltas: list[GraphDelta]) -> None:
        for delta in deltas:
            for message in encode_parts(delta, LIMIT):
                if self.stop_after is not None and len(self.log.messages) >= self.stop_after:
                    raise StopWorker
                self.log.messages.append(message)

    async def publish_dead_letter(self, letter: DeadLetter) -> None:
        raise AssertionError(f"unexpected dead letter: {letter.reason}")


def worker(log: BytesLog, sink: BytesSink, now: float) -> IndexingPipeline:
    return IndexingPipeline(
        log, sink, clock=lambda: now, new_index=lambda repo: RepoIndex(repo, parse=tiny_parse)
    )


def messages(events: list) -> list[Message]:  # type: ignore[type-arg]
    topic = DEFAULT_TOPICS.file_events
    return [Message(topic, 0, i, e.repo.encode(), encode(e)) for i, e in enumerate(events)]


def test_a_worker_stopped_between_two_parts_of_a_barrier_loses_nothing() -> None:
    events = scan_events(Stamp())
    fresh = RepoIndex("app-1", parse=tiny_parse)
    for event in events:
        fresh.handle(event, now=1.0)
    log = BytesLog()
    files_only = len(events) - 1
    stopped = worker(log, BytesSink(log, stop_after=files_only + 2), now=1.0)
    with pytest.raises(StopWorker):
        asyncio.run(stopped.process_batch(messages(events)))
    assert len(log.messages) == files_only + 2  # two parts of the barrier are out
    # Nothing committed the batch's offsets: the successor restores and gets it again.
    successor = worker(log, BytesSink(log), now=2.0)
    asyncio.run(successor.process_batch(messages(events)))
    restored = successor.index(0, "app-1")
    assert restored is not None
    assert restored.state.fingerprint() == fresh.state.fingerprint()
    read_side = RepoState("app-1")
    deltas = assemble(decode_delta(m) for m in log.messages)
    for delta in deltas:
        assert read_side.apply(delta)
    assert [d.seq for d in deltas] == list(range(1, len(events) + 1))
    assert read_side.fingerprint() == fresh.state.fingerprint()
    assert read_side.scans_completed == 1 and read_side.indexed_commit == "c1"
