"""State snapshots on the broker (issue 16 §2): the deltas a snapshot covers skipped
undecoded, the log judged one delta at a time, the topic's latest snapshot per
repository, and both readers (a worker taking a partition, a query replica) starting
from it, refusing what cannot be trusted and letting the log decide."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from types import SimpleNamespace

from structlog.testing import capture_logs

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink
from processors.state_keeper import KeepPolicy, StateKeeper
from processors.state_restore import CheckedDeltaLog, SnapshotIndexes
from producers.topics import DEFAULT_TOPICS
from query.materializer import Materializer
from query.read_model import ReadModel
from stores.delta_log import InMemoryDeltaLog, skipper
from stores.deltas import encode_delta, encode_parts, peek_seq
from stores.state_files import StateFiles
from stores.state_snapshot import Continuation, against_log, capture, encode
from stores.state_topic import InMemoryStateTopic, decode_offered, snapshot_messages
from tests.factories import Stamp, graph_delta, tiny_parse
from tests.unit.test_read_side_snapshot import seen, served, served_fold
from tests.unit.test_state_files import message
from tests.unit.test_state_snapshot import fold, history, reader_fold

GRAPH = DEFAULT_TOPICS.graph_deltas


def test_a_deltas_number_is_read_from_its_first_bytes_or_not_at_all() -> None:
    small = encode_delta(graph_delta("app-1", 42))
    assert small.startswith(b'{"v":1,"kind":"graph_delta","repo":"app-1","seq":42,')
    assert peek_seq(small, "app-1") == 42
    assert peek_seq(small, "app-2") is None  # another repository's key
    assert peek_seq(small[: small.index(b"42,") + 1], "app-1") is None  # cut in the number
    assert peek_seq(b'{"seq":42,"v":1}', "app-1") is None  # another encoding: decode it
    assert peek_seq(b'{"v":1,"kind":"graph_delta","repo":"app-1","seq":-1,', "app-1") is None
    big = graph_delta("app-1", 7, files_removed=tuple(f"f{i:06}.py" for i in range(120_000)))
    parts = encode_parts(big)
    assert len(parts) == 2 and [peek_seq(p, "app-1") for p in parts] == [7, 7]


def test_the_log_is_judged_one_delta_at_a_time_as_against_log_judges_it_whole() -> None:
    _, deltas = fold(history(6, edits=6))
    snapshot = capture(reader_fold(deltas[:5]))
    # Deltas 1-4 left out undecoded: the log holds them, so it must hold delta 5 too.
    assert against_log(snapshot, deltas[4:], skipped_to=4) is None
    assert (
        against_log(snapshot, [], skipped_to=4)
        == "the log ends at delta 4, before the snapshot's 5"
    )
    assert against_log(snapshot, deltas[5:], skipped_to=4) == (
        "the log goes from delta 4 to 6 without the snapshot's 5"
    )
    assert against_log(snapshot, deltas[5:]) is None  # begins after it: a retention
    judge = Continuation.of(snapshot)
    for seq in (1, 2, 3):
        judge.skip(seq)
    assert judge.end() == "the log ends at delta 3, before the snapshot's 5"
    assert [judge.see(d) for d in deltas[3:]] == [None] * len(deltas[3:])
    assert judge.confirmed and judge.end() is None
    _, other = fold(history(7, edits=6), clock=0.5)
    judge = Continuation.of(snapshot, skipped_to=4)
    assert judge.see(other[4]) == "the log's delta 5 is not the one the snapshot covers"


def test_the_reader_skips_what_each_repositorys_snapshot_covers_and_keeps_the_rest() -> None:
    skipped: dict[str, int] = {}
    keep = skipper({"app-1": 5}, skipped)
    kept = [
        keep(repo.encode(), encode_delta(graph_delta(repo, seq)))
        for repo, seq in [("app-1", 1), ("app-2", 1), ("app-1", 4), ("app-1", 5), ("app-1", 6)]
    ]
    assert kept == [False, True, False, True, True]
    assert skipped == {"app-1": 4}
    assert keep(None, b"not a delta") and keep(b"app-1", b"not a delta")


def test_the_topic_offers_each_repositorys_latest_snapshot_whose_header_checks() -> None:
    _, deltas = fold(history(8, edits=6))
    topic = InMemoryStateTopic()
    newer = encode(capture(reader_fold(deltas[:6])))
    topic.append(0, newer)
    topic.append(0, encode(capture(reader_fold(deltas[:3]))))  # older, later in the log
    topic.append(0, b"GZSTATE\n{not json\n")

    with capture_logs() as logs:
        offered = asyncio.run(topic.latest([0, 1]))
    assert {repo: o.header.seq for repo, o in offered.items()} == {"app-1": 6}
    assert offered["app-1"].raw == newer
    assert [(e["event"], e["reason"]) for e in logs] == [
        ("state_snapshot_rejected", "not_a_snapshot")
    ]
    damaged = bytearray(newer)
    damaged[-10] ^= 0xFF
    topic.append(0, bytes(damaged))  # its header checks; its body does not
    offered = asyncio.run(topic.latest([0]))
    with capture_logs() as logs:
        assert decode_offered(offered["app-1"]) is None
    assert [(e["event"], e["source"], e["reason"]) for e in logs] == [
        ("state_snapshot_rejected", "topic", "checksum")
    ]


def restoring(files: StateFiles, topic: InMemoryStateTopic) -> SnapshotIndexes:
    return SnapshotIndexes(
        files,
        restore=functools.partial(RepoIndex.from_snapshot, parse=tiny_parse),
        empty=functools.partial(RepoIndex, parse=tiny_parse),
        topic=topic,
    )


async def restored_on_a_worker(
    tmp_path: Path, log: InMemoryDeltaLog, topic: InMemoryStateTopic
) -> tuple[IndexingPipeline, list[dict]]:
    indexes = restoring(StateFiles(tmp_path / "elsewhere"), topic)
    p = IndexingPipeline(
        CheckedDeltaLog(log, indexes), InMemoryDeltaSink(), clock=lambda: 7.0, new_index=indexes
    )
    with capture_logs() as logs:
        await p.process(message(Stamp(producer="p3", epoch=3).claim(), 0))
    return p, logs


async def test_a_worker_on_another_machine_starts_from_the_topic_and_decodes_only_the_rest(
    tmp_path: Path,
) -> None:
    _, deltas = fold(history(9, edits=10))
    log, topic = InMemoryDeltaLog(), InMemoryStateTopic()
    for delta in deltas:
        log.append(0, delta)
    topic.append(0, encode(capture(reader_fold(deltas[:12]))))
    p, logs = await restored_on_a_worker(tmp_path, log, topic)
    events = [e["event"] for e in logs]
    assert "index_restored_from_snapshot" in events and "state_snapshot_rejected" not in events
    assert "delta_log_read_again" not in events
    index = p.index(0, "app-1")
    assert index is not None
    whole = reader_fold(deltas)
    assert index.state.seq == whole.seq + 1  # the log's, then the claim
    assert index.state.fingerprint()[1:4] == whole.fingerprint()[1:4]


async def test_a_worker_refuses_a_damaged_or_foreign_topic_snapshot_and_the_log_decides(
    tmp_path: Path,
) -> None:
    _, deltas = fold(history(9, edits=10))
    _, theirs = fold(history(10, edits=10), clock=0.5)
    whole = reader_fold(deltas)
    damaged = bytearray(encode(capture(reader_fold(deltas[:12]))))
    damaged[-10] ^= 0xFF
    for offered, reason in [
        (bytes(damaged), "checksum"),
        (encode(capture(reader_fold(theirs[:12]))), "other_history"),
    ]:
        log, topic = InMemoryDeltaLog(), InMemoryStateTopic()
        for delta in deltas:
            log.append(0, delta)
        topic.append(0, offered)
        p, logs = await restored_on_a_worker(tmp_path, log, topic)
        refused = [e["reason"] for e in logs if e["event"] == "state_snapshot_rejected"]
        assert refused == [reason]
        assert [e["repos"] for e in logs if e["event"] == "delta_log_read_again"] == [["app-1"]]
        assert "index_restored_from_snapshot" not in [e["event"] for e in logs]
        index = p.index(0, "app-1")
        assert index is not None and index.state.fingerprint()[1:4] == whole.fingerprint()[1:4]


async def test_the_keeper_publishes_what_it_writes_and_again_when_the_topic_is_behind(
    tmp_path: Path,
) -> None:
    files, now, sent = StateFiles(tmp_path), [100.0], []

    async def publish(repo: str, raw: bytes) -> None:
        sent.append((repo, raw))

    index, _ = fold([Stamp().claim(), Stamp().changed("a.py", "def f")])
    keeper = StateKeeper(
        files,
        {"app-1": index.state}.get,
        lambda repo: None,
        KeepPolicy(0.0, 0.0),
        clock=lambda: now[0],
        publish=publish,
        held_of=lambda state: 1,
    )
    await keeper.restored(0, [index.state])  # the topic holds delta 1 of 2: behind
    await keeper.tick()
    assert keeper.published == 1 and [r for r, _ in sent] == ["app-1"]
    assert sent[0][1] == (tmp_path / "app-1.snap").read_bytes()
    await keeper.tick()
    assert keeper.published == 1  # nothing changed since


def fake_consumer(partitions: int) -> SimpleNamespace:
    return SimpleNamespace(partitions_for_topic=lambda topic: set(range(partitions)))


async def test_a_replica_loads_the_topics_snapshot_and_folds_only_the_deltas_after_it() -> None:
    _, deltas = fold(history(11, edits=20))
    whole = ReadModel(clock=lambda: 50.0)
    for delta in deltas:
        whole.apply_delta(delta)
    topic = InMemoryStateTopic()
    topic.append(0, encode(capture(reader_fold(deltas[:15]))))
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_topic=topic)  # type: ignore[arg-type]
    await feeder._load_topic(fake_consumer(1))  # type: ignore[arg-type]
    assert model.repos["app-1"].state.seq == 15
    for delta in deltas:  # the log from its start
        feeder._apply(GRAPH, b"app-1", encode_delta(delta))
    assert feeder._snapshots is not None and not feeder._snapshots.ended()
    assert feeder.skipped == 14
    assert seen(model.repos["app-1"]) == seen(whole.repos["app-1"])
    assert model.deltas_applied == 1 + len(deltas) - 15  # the snapshot, then the rest


async def test_a_replica_refuses_a_snapshot_the_log_does_not_continue_and_reads_it_again() -> None:
    _, mine = fold(history(12, edits=10))
    _, theirs = fold(history(13, edits=10), clock=0.5)
    topic = InMemoryStateTopic()
    topic.append(0, encode(capture(reader_fold(mine[:10]))))
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_topic=topic)  # type: ignore[arg-type]
    await feeder._load_topic(fake_consumer(1))  # type: ignore[arg-type]
    with capture_logs() as logs:
        for delta in theirs[:10]:
            feeder._apply(GRAPH, b"app-1", encode_delta(delta))
    assert [
        (e["reason"], e["detail"]) for e in logs if e["event"] == "state_snapshot_rejected"
    ] == [("other_history", "the log's delta 10 is not the one the snapshot covers")]
    snapshots = feeder._snapshots
    assert snapshots is not None and snapshots.rewind == {"app-1"}
    assert model.repos["app-1"].state.seq == 0
    snapshots.rewind.clear()
    for delta in theirs:  # read again from the start: the log alone
        feeder._apply(GRAPH, b"app-1", encode_delta(delta))
    assert served(model.repos["app-1"]) == served_fold(theirs)
    # A log that ends before the snapshot's delta: refused at the end of the log.
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_topic=topic)  # type: ignore[arg-type]
    await feeder._load_topic(fake_consumer(1))  # type: ignore[arg-type]
    for delta in mine[:6]:
        feeder._apply(GRAPH, b"app-1", encode_delta(delta))
    with capture_logs() as logs:
        assert feeder._snapshots is not None and feeder._snapshots.ended()
    assert [e["detail"] for e in logs if e["event"] == "state_snapshot_rejected"] == [
        "the log ends at delta 6, before the snapshot's 10"
    ]


async def test_a_repository_never_quiet_is_written_once_its_first_change_is_old_enough(
    tmp_path: Path,
) -> None:
    files, now = StateFiles(tmp_path), [100.0]
    s = Stamp()
    index, _ = fold([s.claim()])
    keeper = StateKeeper(
        files,
        {"app-1": index.state}.get,
        lambda repo: None,
        KeepPolicy(quiet_s=1.0, every_s=10.0, busy_every_s=30.0),
        clock=lambda: now[0],
    )
    written_at = []
    for step in range(130):  # a delta every 0.5 s for 65 s: never quiet
        delta = index.handle(s.changed("a.py", f"def f{step}"), now=now[0])
        assert delta is not None
        keeper.observed([delta])
        before = keeper.written
        await keeper.tick()
        if keeper.written > before:
            written_at.append(now[0] - 100.0)
        now[0] += 0.5
    assert written_at == [30.0, 60.5]  # 30 s after the first change since the last


async def test_a_snapshot_the_broker_did_not_take_is_written_and_published_again(
    tmp_path: Path,
) -> None:
    files, now, sent, failing = StateFiles(tmp_path), [100.0], [], [True]

    async def publish(repo: str, raw: bytes) -> None:
        if failing[0]:
            raise ConnectionError("the broker is away")
        sent.append(repo)

    index, deltas = fold([Stamp().claim()])
    keeper = StateKeeper(
        files,
        {"app-1": index.state}.get,
        lambda repo: None,
        KeepPolicy(0.0, 0.0),
        clock=lambda: now[0],
        publish=publish,
    )
    keeper.observed(deltas)
    with capture_logs() as logs:
        await keeper.tick()
    assert [e["event"] for e in logs] == ["state_snapshot_publish_failed"]
    assert keeper.written == 0 and files.load("app-1") is not None
    failing[0] = False
    await keeper.tick()
    assert keeper.written == keeper.published == 1 and sent == ["app-1"]


async def test_a_refused_topic_snapshot_is_published_again_from_the_file(tmp_path: Path) -> None:
    _, deltas = fold(history(9, edits=10))
    files = StateFiles(tmp_path)
    good = capture(reader_fold(deltas))
    files.write(good)
    damaged = bytearray(encode(good))
    damaged[-10] ^= 0xFF
    log, topic = InMemoryDeltaLog(), InMemoryStateTopic()
    for delta in deltas:
        log.append(0, delta)
    topic.append(0, bytes(damaged))
    indexes = restoring(files, topic)
    p = IndexingPipeline(
        CheckedDeltaLog(log, indexes), InMemoryDeltaSink(), clock=lambda: 7.0, new_index=indexes
    )
    with capture_logs() as logs:
        await p.process(message(Stamp(producer="p3", epoch=3).claim(), 0))
    assert [e["reason"] for e in logs if e["event"] == "state_snapshot_rejected"] == ["checksum"]
    index = p.index(0, "app-1")
    assert index is not None and indexes.restored_from == {"app-1": good.seq}
    assert indexes.held(index.state, publishing=False) == good.seq  # the file is whole
    assert indexes.held(index.state, publishing=True) == 0  # the topic's is to replace


def test_a_snapshot_over_the_limit_goes_in_parts_that_join_to_it_whatever_else_is_met() -> None:
    _, deltas = fold(history(8, edits=6))
    older, newer = (encode(capture(reader_fold(deltas[:n]))) for n in (3, 6))
    assert snapshot_messages("app-1", newer) == [(b"app-1", newer)]  # within the limit
    parts = snapshot_messages("app-1", newer, part_bytes=700, limit=0)
    count = -(-len(newer) // 700)
    assert count >= 3 and [k for k, _ in parts] == [f"app-1\0{i}".encode() for i in range(count)]
    old_parts = snapshot_messages("app-1", older, part_bytes=700, limit=0)

    def offered(*values: bytes) -> dict[str, int]:
        topic = InMemoryStateTopic()
        for value in values:
            topic.append(0, value)
        return {repo: o.header.seq for repo, o in asyncio.run(topic.latest([0])).items()}

    news = [v for _, v in parts]
    olds = [v for _, v in old_parts]
    assert offered(*news) == {"app-1": 6}
    topic = InMemoryStateTopic()
    for value in news:
        topic.append(0, value)
    joined = asyncio.run(topic.latest([0]))["app-1"]
    assert joined.raw == newer and decode_offered(joined) is not None
    assert offered(*olds, *news) == {"app-1": 6}  # a broker that keeps everything
    assert offered(*news, older) == {"app-1": 6}  # an older whole one later in the log
    # Mid-write (the new snapshot's first parts, the old one's last) or a part missing:
    # no snapshot of those parts; an older whole one, if any, decides.
    assert offered(*news[:2], *olds[2:]) == {}
    assert offered(older, *news[1:]) == {"app-1": 3}
    with capture_logs() as logs:
        damaged = bytearray(news[1])
        damaged[-5] ^= 0xFF
        assert offered(news[0], bytes(damaged), *news[2:]) == {}
    assert [(e["event"], e["reason"]) for e in logs] == [("state_snapshot_rejected", "parts")]
