"""A delta too large for one message travels in parts; readers apply only whole deltas,
and a worker that stops between two parts loses nothing."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, Message
from producers.events import encode
from producers.topics import DEFAULT_TOPICS
from stores.dead_letters import DeadLetter
from stores.deltas import (
    _ELEMENT,
    _LISTS,
    DELTA_PART_BYTES,
    SPLIT_ABOVE,
    DeltaAssembler,
    DeltaPart,
    GraphDelta,
    assemble,
    decode_delta,
    encode_delta,
    encode_parts,
)
from stores.records import ChunkRecord, FileRecord
from stores.repo_state import RepoState
from tests.factories import (
    Stamp,
    file_record,
    graph_delta,
    import_edge,
    symbol_record,
    tiny_parse,
)
from tests.generated_code import CONTENT_CAP, generated_module

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
    return [stamp.claim(), *events, stamp.scan_completed("c1")]


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


def test_a_record_larger_than_the_limit_is_cut_into_pieces_within_the_limit() -> None:
    # A path of 3 limits of quotes, backslashes and 3-byte characters: one record.
    big = "big/" + ('q"\\€' * (LIMIT // 2))
    paths = (big, *(f"small/{i:04}.py" for i in range(400)))
    delta = graph_delta("app-1", 3, files_removed=paths)
    messages = encode_parts(delta, LIMIT)
    parts = [decode_delta(m) for m in messages]
    assert max(len(m) for m in messages) <= LIMIT
    # Its escapes double its size inside a piece: 7 parts for 12 kB, then the rest.
    assert len(messages) == 9 and bound(delta, LIMIT) == 10
    pieces = [(i, piece.at) for i, p in enumerate(parts) for piece in p.part.pieces]  # type: ignore[union-attr]
    assert pieces == [(i, 0) for i in range(7)]
    assert [len(p.files_removed) for p in parts] == [0, 0, 0, 0, 0, 0, 27, 226, 147]
    assert assemble(parts) == [delta]
    assert assemble([*reversed(parts), parts[2]]) == [delta]


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


def bound(delta: GraphDelta, limit: int) -> int:
    """encode_parts' bound: ceil((n + q) / (C - s - 64)), recomputed from its definition."""
    empty = {name: () for name in _LISTS}
    part = DeltaPart(group="0" * 32, index=10**9, count=10**9)
    room = limit - len(encode_delta(delta.model_copy(update={**empty, "part": part})))
    small = min(SPLIT_ABOVE, room // 16)
    w = 0
    for name in _LISTS:
        for record in getattr(delta, name):
            raw = _ELEMENT[name].dump_json(record)
            w += len(raw) + 1
            if len(raw) + 1 > small:  # may be cut: count its escapes
                w += raw.count(b'"') + raw.count(b"\\")
    return math.ceil(w / (room - small - 64))


def big_file(path: str, megabytes: float) -> FileRecord:
    """A parsed file whose record encodes to about ``megabytes`` MB (chunks of code)."""
    body = 'def f(x):\n    return x["key"] + "\\\\n"\n' * 40  # 1,360 bytes
    count = int(megabytes * 1_000_000 / 2_080)
    chunks = tuple(
        ChunkRecord(
            id=f"{path}#L{i}",
            path=path,
            kind="FUNCTION",
            line_start=i + 1,
            line_end=i + 1,
            text=body,
            content_hash=f"{i:064x}",
        )
        for i in range(count)
    )
    return file_record(path).model_copy(update={"chunks": chunks})


def test_one_record_of_3_mb_and_many_small_ones_at_the_real_limit() -> None:
    record = big_file("gen/big_pb2.py", 3)
    small = [import_edge(f"m{i}.py", f"m{i + 1}.py") for i in range(20_000)]
    delta = graph_delta(
        "app-1", 7, files_upserted=(file_record("a.py"), record), edges_upserted=tuple(small)
    )
    assert len(_ELEMENT["files_upserted"].dump_json(record)) == 2_999_242
    # 12 bytes an edge more than before issue 20's call sites: `,"line":null`; 16 more
    # since a delta says whether its state is resolved: `,"resolved":null`
    assert len(encode_delta(delta)) == 5_217_726
    messages = encode_parts(delta)
    sizes = [len(m) for m in messages]
    assert max(sizes) <= DELTA_PART_BYTES
    assert (len(messages), bound(delta, DELTA_PART_BYTES)) == (6, 7)
    assert sizes == [1_048_555, 1_048_556, 1_048_556, 1_048_480, 1_048_473, 828_474]
    parts = [decode_delta(m) for m in messages]
    # The small file and the big one's first piece share the first part; its last piece
    # leads the first edges.
    shape = [(len(p.files_upserted), len(p.part.pieces), len(p.edges_upserted)) for p in parts]  # type: ignore[union-attr]
    assert shape == [(1, 1, 0), (0, 1, 0), (0, 1, 0), (0, 1, 3_127), (0, 0, 9_480), (0, 0, 7_393)]
    assert assemble(parts) == [delta]
    assert encode_parts(delta) == messages


def test_a_generated_file_under_the_cap_is_a_few_messages_within_the_limit() -> None:
    source = generated_module()
    assert CONTENT_CAP - 1_000 - 200 <= len(source.encode()) <= CONTENT_CAP
    stamp = Stamp()
    index = RepoIndex("app-1")
    stamp.claimed(index)
    delta = index.handle(stamp.changed("gen/messages_pb2.py", source), now=1.0)
    assert delta is not None
    n = len(encode_delta(delta))
    messages = encode_parts(delta)
    assert max(len(m) for m in messages) <= DELTA_PART_BYTES
    assert len(messages) <= bound(delta, DELTA_PART_BYTES)
    assert len(messages) <= math.ceil(1.1 * n / (DELTA_PART_BYTES - SPLIT_ABOVE)) + 1
    assert (n, len(messages)) == (7_640_098, 8)  # with `,"resolved":true`
    assert assemble(decode_delta(m) for m in messages) == [delta]


WORDS = ["a", "pkg/mod.py", 'q"uote', "back\\slash", "€uro", "\U0001f600", "line\nbreak", ""]


def random_string(rng: random.Random, size: int) -> str:
    return "".join(rng.choices(WORDS, k=size))


def random_delta(rng: random.Random, repo: str, seq: int) -> GraphDelta:
    """Records of every list; some larger than the limit (a file's chunks, one string)."""
    files = []
    for i in range(rng.randrange(0, 4)):
        path = f"f{i}/" + random_string(rng, rng.randrange(1, 4))
        record = file_record(path, symbols=(symbol_record(f"s{i}"),))
        if rng.random() < 0.5:
            chunks = tuple(
                ChunkRecord(
                    id=f"{path}#{k}",
                    path=path,
                    kind="FUNCTION",
                    line_start=1,
                    line_end=1,
                    text=random_string(rng, rng.randrange(0, 3 * LIMIT // 4)),
                    content_hash="h",
                )
                for k in range(rng.randrange(0, 6))
            )
            record = record.model_copy(update={"chunks": chunks})
        files.append(record)
    sizes = [rng.choice([3, 30, 300, 3 * LIMIT]) for _ in range(rng.randrange(0, 30))]
    return graph_delta(
        repo,
        seq,
        files_upserted=tuple(files),
        files_removed=tuple(random_string(rng, s) for s in sizes),
        nodes_removed=tuple(f"n{i}" for i in range(rng.randrange(0, 50))),
        edges_upserted=tuple(
            import_edge(random_string(rng, 4), f"t{i}") for i in range(rng.randrange(0, 300))
        ),
        edges_removed=tuple(("a", f"b{i}", "CALLS") for i in range(rng.randrange(0, 100))),
    )


def test_random_deltas_join_back_exactly_in_any_order_duplicated_and_interleaved() -> None:
    rng = random.Random(15)
    cut = 0
    for case in range(120):
        one, two = random_delta(rng, "app-1", case + 1), random_delta(rng, "app-2", case + 1)
        sent = {delta.repo: encode_parts(delta, LIMIT) for delta in (one, two)}
        first = [decode_delta(m) for m in sent[one.repo]]
        second = [decode_delta(m) for m in sent[two.repo]]
        for delta, parts in ((one, first), (two, second)):
            messages = sent[delta.repo]
            assert max(len(m) for m in messages) <= LIMIT
            assert len(messages) <= max(1, bound(delta, LIMIT))
            assert all(len(p.part.pieces) <= 2 for p in parts if p.part is not None)
            cut += sum(len(p.part.pieces) for p in parts if p.part is not None)
        # Both repositories' parts interleaved, shuffled, some delivered twice.
        stream = [*first, *second, *rng.sample(first, len(first) // 2)]
        rng.shuffle(stream)
        joined = assemble(stream)
        assert sorted(joined, key=lambda d: d.repo) == [one, two]
    assert cut > 500  # the cases did cut records, many times
