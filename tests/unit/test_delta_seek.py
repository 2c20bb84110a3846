"""Readers seek past what the state snapshots cover (issue 16 §2): a snapshot says where
its own delta begins on the partition and from where the partition must be read; a
replica or a worker then fetches nothing the snapshots cover, checks each snapshot's own
delta where it should be, and falls back to the whole partition when it is not. Loaded
that way, the state equals the state folded from the whole log, at every cut."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink
from processors.state_keeper import KeepPolicy, StateKeeper
from processors.state_restore import CheckedDeltaLog, SnapshotIndexes
from producers.topics import DEFAULT_TOPICS
from query.materializer import Materializer
from query.read_model import ReadModel
from stores.delta_log import InMemoryDeltaLog
from stores.delta_seek import Anchor, AnchorCheck, DeltaOffsets, Seek, plan
from stores.deltas import Envelope, GraphDelta, encode_delta, encode_parts, peek_envelope
from stores.repo_state import RepoState
from stores.state_files import StateFiles
from stores.state_snapshot import SnapshotHeader, capture, decode, encode, read_header
from stores.state_topic import InMemoryStateTopic
from tests.factories import Stamp, tiny_parse
from tests.unit.test_read_side_snapshot import seen
from tests.unit.test_state_files import message
from tests.unit.test_state_snapshot import fold, history, reader_fold
from tests.unit.test_state_topic import fake_consumer

GRAPH = DEFAULT_TOPICS.graph_deltas


def header(repo: str, seq: int, offset: int | None, floor: int | None = None) -> SnapshotHeader:
    return SnapshotHeader(repo, seq, None, 0, 0, 0, "", offset, floor)


def test_the_partition_starts_at_the_newest_snapshots_floor_or_at_zero() -> None:
    a, b = header("a", 9, 40, floor=40), header("b", 5, 70, floor=40)
    assert plan([a, b]) == Seek(40, (Anchor("a", 9, 40), Anchor("b", 5, 70)))
    # The newest snapshot's writer held no snapshot of a repository of the partition.
    assert plan([a, header("b", 5, 70)]) is None
    # A snapshot of an older build (no offset): its repository needs the whole log.
    assert plan([a, header("b", 5, None)]) is None
    # A floor below every snapshot: a repository without one started before them.
    assert plan([header("a", 9, 40, floor=12)]) == Seek(12, (Anchor("a", 9, 40),))
    assert plan([header("a", 1, 0, floor=0)]) is None  # nothing to gain
    assert plan([]) is None


def test_each_snapshots_own_delta_must_be_where_its_header_says() -> None:
    seek = Seek(3, (Anchor("a", 4, 3), Anchor("b", 2, 5)))

    def check(messages: list[tuple[int, str, int]]) -> str | None:
        anchors = AnchorCheck(seek)
        for offset, repo, seq in messages:
            if not anchors.see(offset, repo.encode(), encode_delta(delta(repo, seq))):
                break
        return anchors.end()

    assert check([(3, "a", 4), (4, "a", 5), (5, "b", 2), (6, "a", 6)]) is None
    assert check([(3, "b", 4)]) == "the message at offset 3 is not a's"
    assert check([(3, "a", 3)]) == "the message at offset 3 is not delta 4 of a"
    assert check([(3, "a", 4), (6, "b", 2)]) == "no message at offset 5 (b)"
    assert check([(3, "a", 4), (4, "a", 5)]) == "the partition ends before offset 5 (b)"


def delta(repo: str, seq: int) -> GraphDelta:
    from tests.factories import graph_delta

    return graph_delta(repo, seq)


def as_repo(deltas: list[GraphDelta], repo: str) -> list[GraphDelta]:
    return [d.model_copy(update={"repo": repo}) for d in deltas]


def interleaved(*histories: list[GraphDelta]) -> list[GraphDelta]:
    """One partition's log: the histories' deltas in turn, each in its order."""
    log: list[GraphDelta] = []
    rest = [list(h) for h in histories]
    while any(rest):
        for h in rest:
            if h:
                log.append(h.pop(0))
    return log


def snapshots_of(log: list[GraphDelta], cuts: dict[str, int]) -> dict[str, bytes]:
    """Each repository's snapshot at its cut, as a worker writing them in log order would:
    its offset, and the floor once every repository of the partition has one."""
    firsts: dict[tuple[str, int], int] = {}
    for i, d in enumerate(log):
        firsts.setdefault((d.repo, d.seq), i)
    raws: dict[str, bytes] = {}
    kept: dict[str, int] = {}
    for repo in sorted(cuts, key=lambda r: firsts[(r, cuts[r])]):
        offset = firsts[(repo, cuts[repo])]
        kept[repo] = offset
        floor = min(kept.values()) if len(kept) == len(cuts) else None
        state = reader_fold(
            [d for d in log if d.repo == repo and d.seq <= cuts[repo]], RepoState(repo)
        )
        raws[repo] = encode(capture(state), offset=offset, floor=floor)
    return raws


def replica_reads(feeder: Materializer, log: list[GraphDelta], start: int) -> int:
    """The materializer's loop over one partition from ``start``: back to offset 0 when
    a seek is refused or a snapshot is; the messages it fetched."""
    snapshots = feeder._snapshots
    assert snapshots is not None
    offset, fetched = start, 0
    while True:
        while offset < len(log):
            key, value = log[offset].repo.encode(), encode_delta(log[offset])
            fetched += 1
            if not snapshots.anchored(0, offset, key, value):
                snapshots.unseek.clear()
                snapshots.from_start([0])
                offset = 0
                continue
            feeder._apply(GRAPH, key, value)
            offset += 1
            if snapshots.rewind:
                snapshots.rewind.clear()
                snapshots.from_start([0])
                offset = 0
        if not snapshots.ended():
            return fetched
        snapshots.rewind.clear()
        snapshots.unseek.clear()
        snapshots.from_start([0])
        offset = 0


async def replica_of(raws: list[bytes] | dict[str, bytes]) -> Materializer:
    topic = InMemoryStateTopic()
    for raw in raws.values() if isinstance(raws, dict) else raws:
        topic.append(0, raw)
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_topic=topic)  # type: ignore[arg-type]
    await feeder._load_topic(fake_consumer(1))  # type: ignore[arg-type]
    return feeder


def whole_fold(log: list[GraphDelta]) -> ReadModel:
    whole = ReadModel(clock=lambda: 50.0)
    for d in log:
        whole.apply_delta(d)
    return whole


@pytest.mark.parametrize("seed", [21, 22])
async def test_a_replica_seeking_past_the_covered_deltas_equals_the_whole_fold(seed: int) -> None:
    _, one = fold(history(seed, edits=8))
    _, two = fold(history(seed + 100, edits=5), clock=0.25)
    log = interleaved(one, as_repo(two, "app-2"))
    whole = whole_fold(log)
    for cut_one in range(1, len(one) + 1, 3):
        for cut_two in range(1, len(two) + 1, 2):
            raws = snapshots_of(log, {"app-1": cut_one, "app-2": cut_two})
            feeder = await replica_of(raws)
            assert feeder._snapshots is not None
            seek = feeder._snapshots.seeks.get(0)  # none when the start would be 0
            start = min(
                i
                for i, d in enumerate(log)
                if (d.repo, d.seq) in {("app-1", cut_one), ("app-2", cut_two)}
            )
            assert (seek.start if seek is not None else 0) == start
            fetched = replica_reads(feeder, log, start)
            cut = f"cut at {cut_one} and {cut_two}"
            # Nothing before the first snapshot's own delta was fetched.
            assert fetched == len(log) - start, cut
            assert feeder.skipped == sum(
                1 for d in log[start:] if d.seq < {"app-1": cut_one, "app-2": cut_two}[d.repo]
            )
            for repo in ("app-1", "app-2"):
                assert seen(feeder.model.repos[repo]) == seen(whole.repos[repo]), cut


async def test_a_replica_reads_from_zero_when_a_repository_has_no_usable_snapshot() -> None:
    _, one = fold(history(23, edits=6))
    _, two = fold(history(24, edits=6), clock=0.25)
    log = interleaved(one, as_repo(two, "app-2"))
    whole = whole_fold(log)
    raws = snapshots_of(log, {"app-1": 8, "app-2": 9})
    # app-2's snapshot written by an older build (no offset); then none at all for it.
    state = reader_fold([d for d in log if d.repo == "app-2" and d.seq <= 9], RepoState("app-2"))
    for others in ([encode(capture(state))], []):
        feeder = await replica_of([raws["app-1"], *others])
        assert feeder._snapshots is not None and feeder._snapshots.seeks == {}
        assert replica_reads(feeder, log, 0) == len(log)
        for repo in ("app-1", "app-2"):
            assert seen(feeder.model.repos[repo]) == seen(whole.repos[repo])


async def test_a_replica_whose_seek_lands_elsewhere_reads_the_partition_from_zero() -> None:
    _, one = fold(history(25, edits=6))
    _, two = fold(history(26, edits=6), clock=0.25)
    log = interleaved(one, as_repo(two, "app-2"))
    whole = whole_fold(log)
    raws = snapshots_of(log, {"app-1": 8, "app-2": 9})
    shifted = [None, *log]  # the offsets of another log: every message one further
    feeder = await replica_of(raws)
    assert feeder._snapshots is not None
    start = feeder._snapshots.seeks[0].start
    with capture_logs() as logs:
        fetched = replica_reads_shifted(feeder, shifted, start)
    refused = [e["reason"] for e in logs if e["event"] == "graph_deltas_seek_refused"]
    assert len(refused) == 1 and "is not" in refused[0]
    assert "state_snapshot_rejected" not in [e["event"] for e in logs]
    assert fetched > len(log)  # read again, whole
    for repo in ("app-1", "app-2"):
        assert seen(feeder.model.repos[repo]) == seen(whole.repos[repo])


def replica_reads_shifted(feeder: Materializer, log: list[GraphDelta | None], start: int) -> int:
    """`replica_reads` over a log whose offset 0 holds nothing."""
    snapshots = feeder._snapshots
    assert snapshots is not None
    offset, fetched = start, 0
    while True:
        while offset < len(log):
            d = log[offset]
            fetched += 1
            key, value = (None, None) if d is None else (d.repo.encode(), encode_delta(d))
            if not snapshots.anchored(0, offset, key, value):
                snapshots.unseek.clear()
                snapshots.from_start([0])
                offset = 0
                continue
            if value is not None:
                feeder._apply(GRAPH, key, value)
            offset += 1
        if not snapshots.ended():
            return fetched
        snapshots.rewind.clear()
        snapshots.unseek.clear()
        snapshots.from_start([0])
        offset = 0


async def restored(
    tmp_path: Path, log: InMemoryDeltaLog, topic: InMemoryStateTopic
) -> tuple[IndexingPipeline, CheckedDeltaLog, list[dict]]:
    indexes = SnapshotIndexes(
        StateFiles(tmp_path / "elsewhere"),
        restore=functools.partial(RepoIndex.from_snapshot, parse=tiny_parse),
        empty=functools.partial(RepoIndex, parse=tiny_parse),
        topic=topic,
    )
    checked = CheckedDeltaLog(log, indexes)
    p = IndexingPipeline(checked, InMemoryDeltaSink(), clock=lambda: 7.0, new_index=indexes)
    with capture_logs() as logs:
        await p.process(message(Stamp(producer="p3", epoch=3).claim(), 0))
    return p, checked, logs


async def test_a_worker_taking_the_partition_fetches_only_the_snapshots_delta_and_after(
    tmp_path: Path,
) -> None:
    _, deltas = fold(history(27, edits=10))
    whole = reader_fold(deltas)
    for cut in (1, 6, 12, len(deltas)):
        log, topic = InMemoryDeltaLog(), InMemoryStateTopic()
        for d in deltas:
            log.append(0, d)
        topic.append(0, encode(capture(reader_fold(deltas[:cut])), offset=cut - 1, floor=cut - 1))
        p, checked, logs = await restored(tmp_path / str(cut), log, topic)
        events = [e["event"] for e in logs]
        assert "state_snapshot_rejected" not in events and "delta_log_read_again" not in events
        assert checked.fetched == {0: len(deltas) - (cut - 1 if cut > 1 else 0)}
        index = p.index(0, "app-1")
        assert index is not None
        assert index.state.seq == whole.seq + 1  # the log's, then the claim
        assert index.state.fingerprint()[1:4] == whole.fingerprint()[1:4]


async def test_a_worker_refuses_a_foreign_snapshot_found_at_its_offset_and_the_log_decides(
    tmp_path: Path,
) -> None:
    _, deltas = fold(history(28, edits=10))
    _, theirs = fold(history(29, edits=10), clock=0.5)
    whole = reader_fold(deltas)
    for raw, refusal in [
        # Another history's delta 12 at the offset its snapshot names: the log decides.
        (encode(capture(reader_fold(theirs[:12])), offset=11, floor=11), "state_snapshot_rejected"),
        # An offset where another delta is: the partition is read from 0, the same snapshot
        # judged there (it is ours: taken).
        (encode(capture(reader_fold(deltas[:12])), offset=9, floor=9), "delta_log_seek_refused"),
    ]:
        log, topic = InMemoryDeltaLog(), InMemoryStateTopic()
        for d in deltas:
            log.append(0, d)
        topic.append(0, raw)
        p, checked, logs = await restored(tmp_path / refusal, log, topic)
        assert refusal in [e["event"] for e in logs]
        if refusal == "delta_log_seek_refused":  # the partition then read whole
            assert checked.fetched == {0: len(deltas)}
        index = p.index(0, "app-1")
        assert index is not None and index.state.fingerprint()[1:4] == whole.fingerprint()[1:4]


def test_the_header_carries_the_offset_and_floor_and_old_headers_read_without() -> None:
    _, deltas = fold(history(30, edits=4))
    snapshot = capture(reader_fold(deltas))
    raw = encode(snapshot, offset=120, floor=80)
    head = read_header(raw)
    assert (head.offset, head.floor) == (120, 80)
    assert decode(raw) == snapshot
    assert encode(snapshot) == encode(snapshot, offset=None, floor=5)  # no offset: neither
    old = read_header(encode(snapshot))
    assert (old.offset, old.floor) == (None, None)
    assert read_header(encode(snapshot, offset=3, floor=9)).floor == 3  # never past itself


async def test_the_keeper_writes_the_floor_once_every_repository_of_the_partition_is_kept(
    tmp_path: Path,
) -> None:
    files, now = StateFiles(tmp_path), [100.0]
    one, _ = fold([Stamp().claim(), Stamp().changed("a.py", "def f")])
    two, _ = fold([Stamp().claim()])
    two.state.repo = "app-2"
    offsets = DeltaOffsets()
    offsets.note("app-1", 2, 40)
    offsets.note("app-2", 1, 10)
    states = {"app-1": one.state, "app-2": two.state}
    keeper = StateKeeper(
        files,
        states.get,
        lambda repo: None,
        KeepPolicy(0.0, 0.0),
        clock=lambda: now[0],
        offset_of=offsets.of,
    )
    keeper.observed([delta("app-1", 2), delta("app-2", 1)])
    await keeper.tick()  # app-1 first: app-2, on its partition, had nothing kept yet
    assert (files.header("app-1").offset, files.header("app-1").floor) == (40, None)  # type: ignore[union-attr]
    assert (files.header("app-2").offset, files.header("app-2").floor) == (10, 10)  # type: ignore[union-attr]
    offsets.note("app-1", 3, 55)
    one.state.seq = 3
    keeper.observed([delta("app-1", 3)])
    now[0] += 1
    await keeper.tick()
    assert (files.header("app-1").offset, files.header("app-1").floor) == (55, 10)  # type: ignore[union-attr]


async def test_the_snapshots_own_delta_is_judged_by_its_envelope_part_by_part() -> None:
    _, deltas = fold(history(31, edits=4))
    big = deltas[-1].model_copy(
        update={"files_removed": tuple(f"gone/f{i:06}.py" for i in range(120_000))}
    )
    deltas = [*deltas[:-1], big]
    parts = encode_parts(big)
    assert len(parts) >= 2
    assert {peek_envelope(p) for p in parts} == {
        Envelope(big.repo, big.seq, big.source, big.applied_at)
    }
    assert peek_envelope(b"not json") is None
    feeder = await replica_of([encode(capture(reader_fold(deltas)))])
    snapshots = feeder._snapshots
    assert snapshots is not None
    for d in deltas[:-1]:
        feeder._apply(GRAPH, b"app-1", encode_delta(d))
    for part in parts:  # left out undecoded, each checked: none folded
        feeder._apply(GRAPH, b"app-1", part)
    assert (snapshots.skipped, snapshots.checked) == (len(deltas) - 1, len(parts))
    assert feeder.model.deltas_applied == 1 and not snapshots.ended()
    # Another event under the snapshot's number: refused at its first part.
    other = big.model_copy(update={"applied_at": big.applied_at + 1})
    feeder = await replica_of([encode(capture(reader_fold(deltas)))])
    with capture_logs() as logs:
        feeder._apply(GRAPH, b"app-1", encode_parts(other)[0])
    assert feeder._snapshots is not None and feeder._snapshots.rewind == {"app-1"}
    assert [e["detail"] for e in logs if e["event"] == "state_snapshot_rejected"] == [
        f"the log's delta {big.seq} is not the one the snapshot covers"
    ]


async def test_a_snapshot_kept_without_offset_is_written_again_once_the_log_says_where(
    tmp_path: Path,
) -> None:
    index, _ = fold([Stamp().claim(), Stamp().changed("a.py", "def f")])
    offsets = DeltaOffsets()
    keeper = StateKeeper(
        StateFiles(tmp_path),
        {"app-1": index.state}.get,
        lambda repo: None,
        KeepPolicy(0.0, 0.0),
        clock=lambda: 100.0,
        held_of=lambda state: state.seq,  # kept, but by a build that wrote no offset
        offset_of=offsets.of,
    )
    await keeper.restored(0, [index.state])
    await keeper.tick()
    assert keeper.written == 0  # where its delta begins is unknown: nothing to gain
    offsets.note("app-1", index.state.seq, 17)  # the restore read it
    keeper.forget(["app-1"])
    await keeper.restored(0, [index.state])
    await keeper.tick()
    assert keeper.written == 1
    header = StateFiles(tmp_path).header("app-1")
    assert header is not None and (header.offset, header.floor) == (17, 17)
