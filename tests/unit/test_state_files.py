"""State snapshots on disk (issue 16): atomic files, rejected ones logged with their reason
and left to the log (or a full scan), a worker restored from them, and when it writes."""

from __future__ import annotations

import asyncio
import functools
import os
import threading
import time
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message
from processors.state_keeper import KeepPolicy, StateKeeper
from processors.state_restore import CheckedDeltaLog, SnapshotIndexes
from producers.events import encode as encode_event
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from stores.repo_state import RepoState
from stores.state_files import StateFiles, write_off_loop
from stores.state_snapshot import FORMAT_VERSION, canonical, capture
from tests.factories import Stamp, tiny_parse


def message(event, offset: int) -> Message:  # type: ignore[no-untyped-def]
    return Message(DEFAULT_TOPICS.file_events, 0, offset, event.repo.encode(), encode_event(event))


def pipeline(log: InMemoryDeltaLog, sink: InMemoryDeltaSink, files: StateFiles) -> IndexingPipeline:
    indexes = SnapshotIndexes(
        files,
        restore=functools.partial(RepoIndex.from_snapshot, parse=tiny_parse),
        empty=functools.partial(RepoIndex, parse=tiny_parse),
    )
    return IndexingPipeline(log, sink, clock=lambda: 7.0, new_index=indexes)


async def indexed(files: StateFiles) -> tuple[RepoState, InMemoryDeltaSink]:
    """A session's claim, two files and a full scan's barrier, indexed; its snapshot written."""
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    p = pipeline(log, sink, files)
    s = Stamp()
    events = [s.claim(), s.changed("a.py", "import b\ndef f", origin="scan")]
    events += [s.changed("b.py", "def g", origin="scan"), s.scan_completed("c1")]
    for offset, event in enumerate(events):
        await p.process(message(event, offset))
    index = p.index(0, "app-1")
    assert index is not None
    files.write(capture(index.state))
    return index.state, sink


async def test_a_restart_on_an_empty_log_continues_from_the_snapshot(tmp_path: Path) -> None:
    files = StateFiles(tmp_path)
    state, _ = await indexed(files)
    log = InMemoryDeltaLog()  # the embedded broker came back empty
    sink = InMemoryDeltaSink(log)
    p = pipeline(log, sink, files)
    s = Stamp(producer="p2", epoch=2)  # the next session claims one more
    await p.process(message(s.claim(), 0))
    await p.process(message(s.changed("b.py", "def g2"), 1))
    assert [(d.seq, d.event_kind) for d in sink.deltas] == [
        (5, "lease_claimed"),
        (6, "file_changed"),
    ]
    restored = p.index(0, "app-1")
    assert restored is not None
    assert sorted(restored.state.files) == ["a.py", "b.py"]
    assert restored.state.indexed_commit == "c1"
    assert [s.name for s in restored.state.files["b.py"].symbols] == ["g2"]
    assert [f.lease.producer for f in restored.state.fenced] == ["p1"]
    # A late event of the fenced session is recognised as what it is.
    late = Stamp()
    for _ in range(4):
        late.base()
    await p.process(message(late.changed("a.py", "def h"), 2))
    assert [d.reason.split(":")[0] for d in sink.dead_letters] == ["fenced"]
    assert state.seq == 4


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[:-10], "truncated"),
        (lambda raw: raw[:-3] + b"xyz", "checksum"),
        (
            lambda raw: raw.replace(
                f'"format": {FORMAT_VERSION}'.encode(), f'"format": {FORMAT_VERSION + 1}'.encode()
            ),
            "wrong_version",
        ),
        (lambda raw: b"", "not_a_snapshot"),
    ],
)
async def test_a_damaged_snapshot_is_rejected_logged_and_the_log_decides(
    tmp_path: Path,
    damage,
    reason: str,  # type: ignore[no-untyped-def]
) -> None:
    files = StateFiles(tmp_path)
    state, first = await indexed(files)
    path = files.path_of("app-1")
    path.write_bytes(damage(path.read_bytes()))
    # The log still holds the deltas (a durable broker): the state is folded from it.
    log = InMemoryDeltaLog()
    for delta in first.deltas:
        log.append(0, delta)
    with capture_logs() as logs:
        p = pipeline(log, InMemoryDeltaSink(log), files)
        await p.process(message(Stamp(producer="p2", epoch=2).claim(), 0))
    rejected = [e for e in logs if e["event"] == "state_snapshot_rejected"]
    assert [(e["repo"], e["reason"]) for e in rejected] == [("app-1", reason)]
    index = p.index(0, "app-1")
    assert index is not None and index.state.seq == 5
    assert index.state.fingerprint() == state.fingerprint()
    # The log empty too: nothing is known, so the repository starts from nothing (the
    # producer, learning no indexed commit, scans in full): never a wrong state.
    empty = InMemoryDeltaLog()
    with capture_logs():
        p = pipeline(empty, InMemoryDeltaSink(empty), files)
        await p.process(message(Stamp(producer="p2", epoch=2).claim(), 0))
    index = p.index(0, "app-1")
    assert index is not None and index.state.seq == 1 and index.state.files == {}


def test_files_are_replaced_whole_and_named_by_repository(tmp_path: Path) -> None:
    files = StateFiles(tmp_path / "state" / "ns")
    assert files.load_where(lambda repo: True) == []
    from tests.unit.test_state_snapshot import fold

    index, _ = fold([Stamp().claim()])
    files.write(capture(index.state))
    files.write(capture(index.state, taken_at=3.0))
    assert files.repos() == ["app-1"]
    assert [p.name for p in files.directory.iterdir()] == ["app-1.snap"]
    loaded = files.load("app-1")
    assert loaded is not None and loaded.taken_at == 3.0
    assert canonical(index.state) == capture(index.state).model_dump_json().encode()
    with pytest.raises(ValueError, match="safe file name"):
        files.path_of("../etc")
    with capture_logs() as logs:
        assert files.load("app-2") is None
    assert [e["event"] for e in logs] == ["state_snapshot_missing"]


async def test_the_keeper_writes_quiet_acknowledged_repositories_at_most_every_period(
    tmp_path: Path,
) -> None:
    from tests.unit.test_state_snapshot import fold

    files = StateFiles(tmp_path)
    now = [100.0]
    states: dict[str, RepoState] = {}
    keeper = StateKeeper(
        files,
        states.get,
        lambda repo: None,
        KeepPolicy(quiet_s=1.0, every_s=10.0),
        clock=lambda: now[0],
    )
    s = Stamp()
    index, deltas = fold([s.claim(), s.changed("a.py", "def f")])
    states["app-1"] = index.state
    keeper.observed(deltas[:1])  # delta 2 applied, not acknowledged yet
    now[0] += 2
    await keeper.tick()
    assert keeper.written == 0 and files.repos() == []  # deferred: a delta in flight
    keeper.observed(deltas[1:])
    await keeper.tick()
    assert keeper.written == 0  # not quiet yet
    now[0] += 1
    await keeper.tick()
    assert keeper.written == 1
    loaded = files.load("app-1")
    assert loaded is not None and loaded.seq == 2
    more = index.handle(s.changed("a.py", "def g"), now=3.0)
    assert more is not None
    keeper.observed([more])
    now[0] += 5
    await keeper.tick()
    assert keeper.written == 1  # quiet, but written 5 s ago: waits for the period
    await keeper.flush()  # a clean stop writes it anyway
    loaded = files.load("app-1")
    assert keeper.written == 2 and loaded is not None and loaded.seq == 3
    await keeper.flush()
    assert keeper.written == 2  # nothing changed since


async def test_a_snapshot_of_another_history_than_the_log_is_refused(tmp_path: Path) -> None:
    from tests.unit.test_state_snapshot import fold, history, reader_fold

    files = StateFiles(tmp_path)
    _, mine = fold(history(21, edits=8))
    files.write(capture(reader_fold(mine[:10])))
    _, theirs = fold(history(22, edits=8), clock=0.5)  # a worker's that started over
    log = InMemoryDeltaLog()
    for delta in theirs:
        log.append(0, delta)
    indexes = SnapshotIndexes(
        files,
        restore=functools.partial(RepoIndex.from_snapshot, parse=tiny_parse),
        empty=functools.partial(RepoIndex, parse=tiny_parse),
    )
    p = IndexingPipeline(
        CheckedDeltaLog(log, indexes), InMemoryDeltaSink(log), clock=lambda: 7.0, new_index=indexes
    )
    with capture_logs() as logs:
        await p.process(message(Stamp(producer="p3", epoch=3).claim(), 0))
    rejected = [(e["reason"], e["detail"]) for e in logs if e["event"] == "state_snapshot_rejected"]
    assert rejected == [("other_history", "the log's delta 10 is not the one the snapshot covers")]
    index = p.index(0, "app-1")
    assert index is not None
    theirs_state = reader_fold(theirs)
    assert index.state.seq == theirs_state.seq + 1  # the log's, then the claim
    assert index.state.fingerprint()[1:4] == theirs_state.fingerprint()[1:4]


class SlowFiles(StateFiles):
    """StateFiles whose writes wait for ``release`` (an fsync on a busy disk) and
    record how many run at once."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.release = threading.Event()
        self.running = self.most_at_once = 0
        self.started = threading.Semaphore(0)
        self._count = threading.Lock()

    def write_bytes(self, repo, raw):  # type: ignore[no-untyped-def]
        with self._count:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.started.release()
        try:
            self.release.wait(10)
            return super().write_bytes(repo, raw)
        finally:
            with self._count:
                self.running -= 1


def dirty_keeper(files: StateFiles, now: list[float]) -> tuple[StateKeeper, Stamp]:
    from tests.unit.test_state_snapshot import fold

    states: dict[str, RepoState] = {}
    keeper = StateKeeper(files, states.get, lambda repo: None, clock=lambda: now[0])
    s = Stamp()
    index, deltas = fold([s.claim(), s.changed("a.py", "def f")])
    states["app-1"] = index.state
    keeper.observed(deltas)
    return keeper, s


async def test_a_stops_flush_waits_for_the_write_under_way_and_never_writes_beside_it(
    tmp_path: Path,
) -> None:
    files, now = SlowFiles(tmp_path), [100.0]
    keeper, _ = dirty_keeper(files, now)
    now[0] += 60
    tick = asyncio.create_task(keeper.tick())
    await asyncio.to_thread(files.started.acquire)  # the tick's write is in its fsync
    flush = asyncio.create_task(keeper.flush())
    await asyncio.sleep(0.05)
    assert not flush.done()  # waits for the tick, does not write beside it
    files.release.set()
    await tick
    assert await flush is True
    assert files.most_at_once == 1 and keeper.written == 1  # the tick wrote it; nothing left
    loaded = files.load("app-1")
    assert loaded is not None and loaded.seq == 2
    assert os.listdir(tmp_path) == ["app-1.snap"]  # no temporary file left


async def test_a_stops_flush_stuck_in_a_write_gives_up_at_its_budget(tmp_path: Path) -> None:
    files, now = SlowFiles(tmp_path), [100.0]
    keeper, _ = dirty_keeper(files, now)
    started = time.monotonic()
    with capture_logs() as logs:
        assert await keeper.flush(budget_s=0.2) is False
    assert time.monotonic() - started < 2
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["state_snapshot_flush_cut"]
    assert keeper.written == 0  # not counted: the write never ended
    files.release.set()  # the abandoned write ends in its own thread, whole
    await asyncio.to_thread(lambda: [time.sleep(0.01) for _ in range(200) if not files.repos()])
    loaded = files.load("app-1")
    assert loaded is not None and loaded.seq == 2


async def test_a_write_off_the_loop_hands_back_its_error() -> None:
    def failing() -> int:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        await write_off_loop(failing)
    assert await write_off_loop(lambda: 7) == 7
