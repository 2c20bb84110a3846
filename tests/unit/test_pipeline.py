"""The consumer boundary: malformed input, bugs, transient failures, restore, replay, and
the lease (issue 15): forged, fenced, unclaimed and out-of-order events are dead-lettered
as rejected and never applied."""

from __future__ import annotations

import asyncio

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message, RetryPolicy
from producers.events import FileChanged, content_hash, encode
from producers.signing import SessionKey
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from tests.factories import Stamp, tiny_parse

FORGER = SessionKey.from_seed(b"f" * 32)


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
    s = Stamp()
    await p.process(message(s.claim(), offset=1))
    await p.process(message(s.changed("a.py", "def f"), offset=2))
    assert [d.failure for d in sink.dead_letters] == ["malformed"]
    letter = sink.dead_letters[0]
    assert letter.reason.startswith("ValidationError") and "repo" in letter.reason
    assert (letter.offset, letter.key, letter.value) == (
        0,
        b"app-1",
        b'{"kind": "file_changed", "v": 1}',
    )
    assert [(d.seq, d.event_kind) for d in sink.deltas] == [
        (1, "lease_claimed"),
        (2, "file_changed"),
    ]


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
    await p.process(message(s.claim(), 0))
    await p.process(message(s.changed("a.py", "def f"), 1))
    await p.process(message(s.changed("boom.py", "def g"), 2))
    await p.process(message(s.changed("b.py", "import a"), 3))
    assert [d.failure for d in sink.dead_letters] == ["bug"]
    assert "RuntimeError: parser bug" in sink.dead_letters[0].reason
    index = p.index(0, "app-1")
    assert index is not None and set(index.state.files) == {"a.py", "b.py"}
    # The failed event is consumed by an empty delta, so the next stays in sequence.
    assert [(d.seq, d.source.seq, d.changes) for d in sink.deltas] == [
        (1, 1, 0),
        (2, 2, 7),
        (3, 3, 0),
        (4, 4, 4),
    ]


async def test_restarted_pipeline_restores_and_skips_what_it_already_published() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    s = Stamp()
    events = [s.claim(), s.changed("a.py", "import b"), s.changed("b.py", "def g")]
    events += [s.scan_completed("c1")]
    first = pipeline(log, sink)
    for offset, event in enumerate(events[:3]):
        await first.process(message(event, offset))
    # A new worker: restored from the delta log, handed the uncommitted events again.
    second = pipeline(log, sink)
    for offset, event in enumerate(events):
        await second.process(message(event, offset))
    assert [d.seq for d in sink.deltas] == [1, 2, 3, 4]
    assert sink.dead_letters == []  # the claim and the events again are silent replays
    restored = second.index(0, "app-1")
    assert restored is not None and restored.state.indexed_commit == "c1"
    assert restored.state.lease is not None and restored.state.lease.key == (1, "p1")


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
    await asyncio.wait_for(p.process(message(Stamp().claim())), 2)
    assert [d.seq for d in sink.deltas] == [1] and sink.failures == 0


async def test_a_path_that_leaves_the_repository_is_malformed() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p = pipeline(log, sink)
    s = Stamp()
    await p.process(message(s.claim(), offset=8))
    good = s.changed("a.py", "def f")
    for offset, bad_path in enumerate(["../etc/passwd", "/etc/passwd", "a/../../b", "a//b"]):
        raw = encode(good).replace(b'"path":"a.py"', f'"path":"{bad_path}"'.encode())
        await p.process(Message(DEFAULT_TOPICS.file_events, 0, offset, b"app-1", raw))
    await p.process(message(good, offset=9))
    assert [d.failure for d in sink.dead_letters] == ["malformed"] * 4
    assert all("path" in d.reason for d in sink.dead_letters)
    assert [d.source.seq for d in sink.deltas] == [1, 2]


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
    events = [s.claim(), s.changed("a.py", "def f"), s.changed("b.py", "def g")]
    events += [s.changed("boom.py", "x")]
    events += [s.changed("c.py", "import a")]
    await p.process_batch([message(e, offset) for offset, e in enumerate(events)])
    # The claim, a and b go out before the index is rebuilt; the bug's empty delta and c.
    assert sink.calls == [3, 2]
    assert [(d.seq, d.source.seq) for d in sink.deltas] == [(i, i) for i in range(1, 6)]
    index = p.index(0, "app-1")
    assert index is not None and set(index.state.files) == {"a.py", "b.py", "c.py"}


async def test_a_delta_the_broker_refuses_is_dead_lettered_and_the_rest_handled_again() -> None:
    from aiokafka.errors import MessageSizeTooLargeError

    log = InMemoryDeltaLog()

    class RefusingSink(InMemoryDeltaSink):
        """Refuses, for good, any delta that carries the file ``big.py``."""

        async def publish_deltas(self, deltas):  # type: ignore[no-untyped-def]
            if any(r.path == "big.py" for d in deltas for r in d.files_upserted):
                raise MessageSizeTooLargeError("too large for the topic")
            await super().publish_deltas(deltas)

    sink = RefusingSink(log)
    p = pipeline(log, sink)
    s = Stamp()
    events = [s.claim(), s.changed("a.py", "def f"), s.changed("big.py", "def huge")]
    events += [s.changed("c.py", "import a")]
    await asyncio.wait_for(
        p.process_batch([message(e, offset) for offset, e in enumerate(events)]), 5
    )
    # The claim and a went out one by one; big's event is consumed without changes; c
    # is handled again on the state restored from the log, so the sequence has no gap.
    assert [(d.seq, d.source.seq, d.files_upserted != ()) for d in sink.deltas] == [
        (1, 1, False),
        (2, 2, True),
        (3, 3, False),
        (4, 4, True),
    ]
    assert [(d.failure, d.offset) for d in sink.dead_letters] == [("rejected", 2)]
    assert "refused by the broker" in sink.dead_letters[0].reason
    index = p.index(0, "app-1")
    assert index is not None and set(index.state.files) == {"a.py", "c.py"}
    assert p.positions[(DEFAULT_TOPICS.file_events, 0)] == 4


async def test_restore_skips_a_delta_that_overtook_its_predecessor() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    s = Stamp()
    first = pipeline(log, sink)
    events = [s.claim(), s.changed("a.py", "def f"), s.changed("b.py", "def g")]
    for offset, event in enumerate(events):
        await first.process(message(event, offset))
    claim, one, two = log.partitions[0]
    # A batch resent after a partial failure: 3 landed before 2, then both again.
    log.partitions[0] = [claim, two, one, two]
    second = pipeline(log, sink)
    await second.process(message(s.changed("c.py", "def h"), 3))
    index = second.index(0, "app-1")
    assert index is not None and index.state.seq == 4
    assert set(index.state.files) == {"a.py", "b.py", "c.py"}


def forged(event: FileChanged, text: str) -> FileChanged:
    """``event`` with other contents, signed by a key that is not the session's."""
    data = text.encode()
    changed = event.model_copy(
        update={"content": data, "content_hash": content_hash(data), "size": len(data)}
    )
    return FORGER.sign(changed)


async def test_a_forged_event_with_the_next_seq_is_dead_lettered_and_the_real_one_applied() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p, s = pipeline(log, sink), Stamp()
    await p.process(message(s.claim(), 0))
    real = s.changed("a.py", "def real")
    await p.process(message(forged(real, "def evil"), 1))
    await p.process(message(real, 2))
    assert [(d.failure, d.offset) for d in sink.dead_letters] == [("rejected", 1)]
    assert sink.dead_letters[0].reason == (
        "forged: signature does not verify against the lease's key"
    )
    assert [(d.seq, d.source.seq, d.event_kind) for d in sink.deltas] == [
        (1, 1, "lease_claimed"),
        (2, 2, "file_changed"),
    ]
    index = p.index(0, "app-1")
    assert index is not None
    assert [s.name for s in index.state.files["a.py"].symbols] == ["real"]


async def test_a_second_producer_fences_the_first_whose_later_events_are_dead_lettered() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p = pipeline(log, sink)
    old, new = Stamp(producer="host-a-1"), Stamp(producer="host-b-2", epoch=2)
    events = [
        old.claim(),
        old.changed("a.py", "def a"),
        old.changed("gone.py", "def gone"),
        old.scan_completed("c1"),
        new.claim(),
        old.changed("late.py", "def late"),  # the old producer has not heard yet
        new.changed("a.py", "def a"),
        new.changed("b.py", "def b"),
        new.scan_completed("c2"),
        old.changed("later.py", "def later"),
    ]
    await p.process_batch([message(e, offset) for offset, e in enumerate(events)])
    assert [(d.failure, d.offset, d.reason) for d in sink.dead_letters] == [
        ("rejected", 5, "fenced: lease (1, host-a-1) is older than the current (2, host-b-2)"),
        ("rejected", 9, "fenced: lease (1, host-a-1) is older than the current (2, host-b-2)"),
    ]
    index = p.index(0, "app-1")
    assert index is not None
    assert set(index.state.files) == {"a.py", "b.py"}  # the new session's full scan
    assert index.state.indexed_commit == "c2"
    assert index.state.lease is not None and index.state.lease.key == (2, "host-b-2")
    assert [(f.lease.key, f.last_seq) for f in index.state.fenced] == [((1, "host-a-1"), 4)]
    # Restored from the log, a worker judges the same way: the old lease stays fenced,
    # and what was applied from it before the claim is a silent replay.
    restored = pipeline(log, sink)
    await restored.process(message(old.changed("x.py", "def x"), 10))
    await restored.process(message(events[1], 11))
    assert [d.offset for d in sink.dead_letters] == [5, 9, 10]


async def test_an_unclaimed_and_an_out_of_order_event_are_dead_lettered_not_applied() -> None:
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p, s = pipeline(log, sink), Stamp()
    await p.process(message(s.changed("early.py", "def e"), 0))  # before any claim
    await p.process(message(s.claim(), 1))
    s.changed("lost.py", "def lost")  # seq 3 never arrives (nor does seq 2 again)
    await p.process(message(s.changed("c.py", "def c"), 2))
    assert [(d.failure, d.reason) for d in sink.dead_letters] == [
        ("rejected", "unclaimed: lease (1, p1) was never claimed (no lease yet)"),
        ("rejected", "out of order: expected seq 2, got 4 (a resend will bring it again)"),
    ]
    assert [d.event_kind for d in sink.deltas] == ["lease_claimed"]


class FlakyLog(InMemoryDeltaLog):
    """A delta log whose partition reads fail ``failures`` times (a restore's hiccup)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    async def read_partition(self, partition: int):  # type: ignore[no-untyped-def]
        if self.failures:
            self.failures -= 1
            raise RuntimeError("the restore failed")
        return await super().read_partition(partition)


def flaky_pipeline(log: FlakyLog) -> tuple[IndexingPipeline, InMemoryDeltaSink]:
    sink = InMemoryDeltaSink(log)
    retry = RetryPolicy(first_delay_s=0.001, max_delay_s=0.002, batch_attempts=3)
    return IndexingPipeline(
        log, sink, retry=retry, new_index=lambda r: RepoIndex(r, tiny_parse)
    ), sink


async def test_a_batch_failing_outside_its_events_is_handled_again_from_the_log() -> None:
    log = FlakyLog(failures=2)
    p, sink = flaky_pipeline(log)
    s = Stamp()
    batch = [message(s.claim(), 0), message(s.changed("a.py", "def f"), 1)]
    await asyncio.wait_for(p.process_batch(batch), 2)
    assert [d.source.seq for d in sink.deltas] == [1, 2] and sink.dead_letters == []
    assert log.failures == 0 and p.positions == {(DEFAULT_TOPICS.file_events, 0): 2}


async def test_a_batch_that_keeps_failing_is_dead_lettered_never_dropped_unseen() -> None:
    log = FlakyLog(failures=10)
    p, sink = flaky_pipeline(log)
    s = Stamp()
    batch = [message(s.claim(), 0), message(s.changed("a.py", "def f"), 1)]
    await asyncio.wait_for(p.process_batch(batch), 2)
    assert sink.deltas == [] and log.failures == 6  # tried 4 times: once and 3 again
    assert [(d.failure, d.offset) for d in sink.dead_letters] == [("bug", 0), ("bug", 1)]
    assert all(d.reason.startswith("its batch failed: ") for d in sink.dead_letters)
    assert p.positions == {(DEFAULT_TOPICS.file_events, 0): 2}


class CountingLog(InMemoryDeltaLog):
    """A delta log that counts its partition reads and may hold one until released."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.gate: asyncio.Event | None = None

    async def read_partition(self, partition: int):  # type: ignore[no-untyped-def]
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        return await super().read_partition(partition)


class Following:
    """An observer that records what it was told."""

    def __init__(self) -> None:
        self.restored_repos: list[tuple[int, list[str]]] = []
        self.forgotten: list[str] = []

    async def restored(self, partition, states) -> None:  # type: ignore[no-untyped-def]
        self.restored_repos.append((partition, [s.repo for s in states]))

    def observed(self, deltas) -> None:  # type: ignore[no-untyped-def]
        pass

    def forget(self, repos) -> None:  # type: ignore[no-untyped-def]
        self.forgotten.extend(repos)


def following_pipeline(log: InMemoryDeltaLog, observer: Following) -> IndexingPipeline:
    return IndexingPipeline(
        log,
        InMemoryDeltaSink(log),
        clock=lambda: 7.0,
        new_index=lambda repo: RepoIndex(repo, parse=tiny_parse),
        observer=observer,
    )


async def indexed_log(log: InMemoryDeltaLog) -> tuple[Stamp, int]:
    s = Stamp()
    first = pipeline(log, InMemoryDeltaSink(log))
    for offset, event in enumerate([s.claim(), s.changed("a.py", "def f")]):
        await first.process(message(event, offset))
    return s, 2


async def test_an_assigned_partition_is_restored_before_its_first_event_and_only_once() -> None:
    log = CountingLog()
    s, offset = await indexed_log(log)
    log.reads = 0
    observer = Following()
    worker = following_pipeline(log, observer)
    await worker.restore_assigned([0])
    assert log.reads == 1 and observer.restored_repos == [(0, ["app-1"])]
    restored = worker.index(0, "app-1")
    assert restored is not None and restored.state.seq == 2
    await worker.process(message(s.changed("b.py", "def g"), offset))
    assert log.reads == 1  # the event found its partition restored
    assert worker.index(0, "app-1").state.seq == 3  # type: ignore[union-attr]


async def test_an_event_arriving_during_an_eager_restore_waits_for_it() -> None:
    log = CountingLog()
    s, offset = await indexed_log(log)
    log.reads, log.gate = 0, asyncio.Event()
    worker = following_pipeline(log, Following())
    eager = asyncio.ensure_future(worker.restore_assigned([0]))
    await asyncio.sleep(0)
    event = asyncio.ensure_future(worker.process(message(s.changed("b.py", "def g"), offset)))
    await asyncio.sleep(0)
    log.gate.set()
    await asyncio.gather(eager, event)
    assert log.reads == 1
    assert worker.index(0, "app-1").state.seq == 3  # type: ignore[union-attr]


async def test_an_eager_restore_of_a_partition_revoked_meanwhile_keeps_nothing() -> None:
    log = CountingLog()
    s, offset = await indexed_log(log)
    log.reads, log.gate = 0, asyncio.Event()
    observer = Following()
    worker = following_pipeline(log, observer)
    eager = asyncio.ensure_future(worker.restore_assigned([0]))
    await asyncio.sleep(0)
    worker.revoke({0})
    log.gate.set()
    await eager
    assert worker.index(0, "app-1") is None
    assert observer.restored_repos == [] and observer.forgotten == ["app-1"]
    # Assigned again: its next event restores it from the log, whole.
    await worker.process(message(s.changed("b.py", "def g"), offset))
    assert log.reads == 2 and worker.index(0, "app-1").state.seq == 3  # type: ignore[union-attr]


async def test_an_eager_restore_that_fails_is_logged_and_the_first_event_restores() -> None:
    class BrokenOnce(CountingLog):
        broken = False

        async def read_partition(self, partition: int):  # type: ignore[no-untyped-def]
            if self.broken:
                self.broken = False
                raise RuntimeError("a bug in the restore")
            return await super().read_partition(partition)

    log = BrokenOnce()
    s, offset = await indexed_log(log)
    log.broken = True
    worker = following_pipeline(log, Following())
    await worker.restore_assigned([0])  # raises nothing
    assert worker.index(0, "app-1") is None
    await worker.process(message(s.changed("b.py", "def g"), offset))
    assert worker.index(0, "app-1").state.seq == 3  # type: ignore[union-attr]
