"""The consumer boundary: malformed input, bugs, transient failures, restore, replay."""

from __future__ import annotations

import asyncio

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message, RetryPolicy
from producers.events import encode
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from tests.factories import Stamp, tiny_parse


def message(event, offset: int = 0, key: bytes | None = None) -> Message:
    raw = encode(event)
    return Message(DEFAULT_TOPICS.file_events, 0, offset, key or event.repo.encode(), raw)


def pipeline(log: InMemoryDeltaLog, sink: InMemoryDeltaSink) -> IndexingPipeline:
    return IndexingPipeline(
        log, sink, clock=lambda: 7.0, new_index=lambda repo: RepoIndex(repo, parse=tiny_parse)
    )


async def test_malformed_message_is_dead_lettered_and_the_next_one_is_processed() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p = pipeline(log, sink)
    await p.process(
        Message(DEFAULT_TOPICS.file_events, 0, 0, b"app-1", b'{"kind": "file_changed", "v": 1}')
    )
    await p.process(message(Stamp().changed("a.py", "def f"), offset=1))
    assert [d.failure for d in sink.dead_letters] == ["malformed"]
    letter = sink.dead_letters[0]
    assert letter.reason.startswith("ValidationError") and "repo" in letter.reason
    assert (letter.offset, letter.key, letter.value) == (
        0,
        b"app-1",
        b'{"kind": "file_changed", "v": 1}',
    )
    assert [d.seq for d in sink.deltas] == [1]


async def test_key_that_is_not_the_events_repository_is_malformed() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    await pipeline(log, sink).process(message(Stamp().changed("a.py", "x"), key=b"other"))
    assert sink.deltas == [] and "is not the event's repository" in sink.dead_letters[0].reason


async def test_non_json_bytes_are_malformed_not_a_crash() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    await pipeline(log, sink).process(
        Message(DEFAULT_TOPICS.file_events, 0, 3, None, b"\xff\xfe not json")
    )
    await pipeline(log, sink).process(Message(DEFAULT_TOPICS.file_events, 0, 4, None, None))
    assert [d.failure for d in sink.dead_letters] == ["malformed", "malformed"]


async def test_a_handler_bug_is_dead_lettered_and_the_index_restored_from_the_log() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    calls = {"n": 0}

    def flaky_parse(path: str, content: bytes):
        calls["n"] += 1
        if path == "boom.py":
            raise RuntimeError("parser bug")
        return tiny_parse(path, content)

    p = IndexingPipeline(
        log, sink, clock=lambda: 7.0, new_index=lambda r: RepoIndex(r, flaky_parse)
    )
    s = Stamp()
    await p.process(message(s.changed("a.py", "def f"), 0))
    await p.process(message(s.changed("boom.py", "def g"), 1))
    await p.process(message(s.changed("b.py", "import a"), 2))
    assert [d.failure for d in sink.dead_letters] == ["bug"]
    assert "RuntimeError: parser bug" in sink.dead_letters[0].reason
    index = p.index(0, "app-1")
    assert index is not None and set(index.state.files) == {"a.py", "b.py"}
    # The failed event is consumed by an empty delta, so the next stays in sequence.
    assert [(d.seq, d.source.seq, d.changes) for d in sink.deltas] == [
        (1, 1, 7),
        (2, 2, 0),
        (3, 3, 4),
    ]


async def test_restarted_pipeline_restores_and_skips_what_it_already_published() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    s = Stamp()
    events = [s.changed("a.py", "import b"), s.changed("b.py", "def g"), s.scan_completed("c1")]
    first = pipeline(log, sink)
    for offset, event in enumerate(events[:2]):
        await first.process(message(event, offset))
    # A new worker: restored from the delta log, handed the uncommitted events again.
    second = pipeline(log, sink)
    for offset, event in enumerate(events):
        await second.process(message(event, offset))
    assert [d.seq for d in sink.deltas] == [1, 2, 3]
    restored = second.index(0, "app-1")
    assert restored is not None and restored.state.indexed_commit == "c1"


async def test_publish_failure_is_retried_in_place_until_it_succeeds() -> None:
    log = InMemoryDeltaLog()

    class FlakySink(InMemoryDeltaSink):
        failures = 2

        async def publish_deltas(self, deltas):  # type: ignore[no-untyped-def]
            if self.failures:
                self.failures -= 1
                raise ConnectionError("broker away")
            await super().publish_deltas(deltas)

    sink = FlakySink(log)
    p = IndexingPipeline(
        log,
        sink,
        retry=RetryPolicy(first_delay_s=0.001, max_delay_s=0.002),
        new_index=lambda r: RepoIndex(r, tiny_parse),
    )
    await asyncio.wait_for(p.process(message(Stamp().changed("a.py", "def f"))), 2)
    assert [d.seq for d in sink.deltas] == [1] and sink.failures == 0


async def test_a_path_that_leaves_the_repository_is_malformed() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p = pipeline(log, sink)
    good = Stamp().changed("a.py", "def f")
    for offset, bad_path in enumerate(["../etc/passwd", "/etc/passwd", "a/../../b", "a//b"]):
        raw = encode(good).replace(b'"path":"a.py"', f'"path":"{bad_path}"'.encode())
        await p.process(Message(DEFAULT_TOPICS.file_events, 0, offset, b"app-1", raw))
    await p.process(message(good, offset=9))
    assert [d.failure for d in sink.dead_letters] == ["malformed"] * 4
    assert all("path" in d.reason for d in sink.dead_letters)
    assert [d.source.seq for d in sink.deltas] == [1]


async def test_a_batch_is_published_together_and_a_bug_flushes_what_came_before() -> None:
    log = InMemoryDeltaLog()

    class CountingSink(InMemoryDeltaSink):
        calls: list[int] = []

        async def publish_deltas(self, deltas):  # type: ignore[no-untyped-def]
            self.calls.append(len(deltas))
            await super().publish_deltas(deltas)

    def parse(path: str, content: bytes):
        if path == "boom.py":
            raise RuntimeError("parser bug")
        return tiny_parse(path, content)

    sink = CountingSink(log)
    p = IndexingPipeline(log, sink, clock=lambda: 7.0, new_index=lambda r: RepoIndex(r, parse))
    s = Stamp()
    events = [s.changed("a.py", "def f"), s.changed("b.py", "def g"), s.changed("boom.py", "x")]
    events += [s.changed("c.py", "import a")]
    await p.process_batch([message(e, offset) for offset, e in enumerate(events)])
    # a and b go out before the index is rebuilt; the bug's empty delta and c together.
    assert sink.calls == [2, 2]
    assert [(d.seq, d.source.seq) for d in sink.deltas] == [(1, 1), (2, 2), (3, 3), (4, 4)]
    index = p.index(0, "app-1")
    assert index is not None and set(index.state.files) == {"a.py", "b.py", "c.py"}


async def test_restore_skips_a_delta_that_overtook_its_predecessor() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    s = Stamp()
    first = pipeline(log, sink)
    for offset, event in enumerate([s.changed("a.py", "def f"), s.changed("b.py", "def g")]):
        await first.process(message(event, offset))
    one, two = log.partitions[0]
    # A batch resent after a partial failure: 2 landed before 1, then both again.
    log.partitions[0] = [two, one, two]
    second = pipeline(log, sink)
    await second.process(message(s.changed("c.py", "def h"), 2))
    index = second.index(0, "app-1")
    assert index is not None and index.state.seq == 3
    assert set(index.state.files) == {"a.py", "b.py", "c.py"}
