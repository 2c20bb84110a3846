"""A worker restored from a resolved state snapshot resolves its files while idle (issue
16): warmed fully, partially (at every cut point of the warm-up) or not at all, it gives
the deltas of the worker that never stopped, byte for byte; warmed fully, its first change
resolves only what that change affects."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

import pytest
from structlog.testing import capture_logs

from processors.indexer import RepoIndex
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message
from processors.resolution_warmup import warm_up
from producers.events import encode as encode_event
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from stores.deltas import GraphDelta
from stores.state_snapshot import StateSnapshot, canonical, capture, decode, encode
from tests.factories import Stamp

MODULES = {
    "app.py": "app",
    "cli.py": "cli",
    "pkg/__init__.py": "pkg",
    "pkg/core.py": "pkg.core",
    "pkg/util.py": "pkg.util",
    "pkg/sub/__init__.py": "pkg.sub",
    "pkg/sub/deep.py": "pkg.sub.deep",
}
NAMES = ["f0", "f1", "A", "B"]


def source(rng: random.Random) -> str:
    """Real Python: imports of the repository's modules and names (re-exports, wildcards
    and whole modules), functions calling what is imported, classes deriving from it."""
    lines, usable = [], []
    for _ in range(rng.randint(0, 3)):
        module, name = rng.choice(list(MODULES.values())), rng.choice(NAMES)
        roll = rng.random()
        if roll < 0.5:
            lines.append(f"from {module} import {name}")
            usable.append(name)
        elif roll < 0.8:
            lines.append(f"import {module}")
            usable.append(f"{module}.{name}")
        else:
            lines.append(f"from {module} import *")
            usable.append(name)
    for name in rng.sample(NAMES, rng.randint(0, 3)):
        called = rng.choice(usable + NAMES)
        if name[0].isupper():
            base = rng.choice([u for u in usable if u.split(".")[-1][0].isupper()] or ["object"])
            lines += [f"class {name}({base}):", "    def run(self):", f"        return {called}()"]
        else:
            lines += [f"def {name}(x):", f"    return {called}(x)"]
    return "\n".join(lines) + "\n"


def first_sources(seed: int) -> dict[str, str]:
    """The modules' sources as the first session of `sessions` scans them."""
    rng = random.Random(seed)
    return {p: source(rng) for p in MODULES}


def sessions(seed: int, edits: int) -> tuple[list[object], list[object]]:
    """A first session (its claim, a scan of every module, the barrier) and what follows:
    random edits, deletions and re-creations, and a restart's session that fences it and
    scans again (one file changed while no producer watched, or none)."""
    rng = random.Random(seed)
    s = Stamp()
    files = {p: source(rng) for p in MODULES}
    assert files == first_sources(seed)
    first: list[object] = [s.claim(), *(s.changed(p, t, origin="scan") for p, t in files.items())]
    first.append(s.scan_completed("c1"))
    after: list[object] = []
    for at in range(edits):
        path = rng.choice(list(MODULES))
        if at == edits // 2:
            again = Stamp(producer="p2", epoch=2)
            if rng.random() < 0.5 and path in files:
                files[path] = source(rng)
            after.append(again.claim())
            after += [again.changed(p, t, origin="scan") for p, t in files.items()]
            after.append(again.scan_completed("c2", full=True))
            s = again
        elif rng.random() < 0.2 and path in files:
            del files[path]
            after.append(s.deleted(path))
        else:
            files[path] = source(rng)
            after.append(s.changed(path, files[path]))
    return first, after


def handled(index: RepoIndex, events: list[object], clock: float = 0.0) -> list[GraphDelta]:
    """The deltas of ``events`` (their time of application aside)."""
    deltas = [index.handle(e, now=clock + n) for n, e in enumerate(events)]  # type: ignore[arg-type]
    return [d.model_copy(update={"applied_at": 0.0}) for d in deltas if d is not None]


def resolved_per_event(index: RepoIndex, events: list[object]) -> list[int]:
    """How many files each event's change resolved (or patched)."""
    counts = []
    for n, event in enumerate(events):
        before = index.graph.resolved_files
        index.handle(event, now=float(n))  # type: ignore[arg-type]
        counts.append(index.graph.resolved_files - before)
    return counts


def restart(seed: int, edits: int = 14) -> tuple[StateSnapshot, list[object], RepoIndex]:
    """The first session's resolved snapshot, the events after it, and the worker that never
    stopped, left at the snapshot."""
    first, after = sessions(seed, edits)
    index = RepoIndex("app-1")
    handled(index, first)
    assert index.graph.state_resolved
    snapshot = decode(encode(capture(index.state, resolved=index.graph.state_resolved)))
    return snapshot, after, index


def warm_owners(snapshot: StateSnapshot) -> int:
    """How many owners (files, then folders) a whole warm-up of ``snapshot`` resolves."""
    index = RepoIndex.from_snapshot(snapshot)
    warmed = index.warm(10**6)
    assert warmed.waiting == 0 and warmed.mismatched == ()
    assert index.graph.answers_current and not index.graph.warmable
    return warmed.files


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_worker_warmed_to_any_cut_gives_the_deltas_of_one_that_never_stopped(seed: int) -> None:
    snapshot, after, uninterrupted = restart(seed)
    expected = handled(uninterrupted, after, clock=100.0)
    assert any(d.edges_upserted or d.edges_removed for d in expected)
    total = warm_owners(snapshot)
    assert total == len(MODULES) + 3  # the files, then the folders '', pkg and pkg/sub
    for cut in range(total + 1):
        for between in (False, True):
            restored = RepoIndex.from_snapshot(snapshot)
            done = 0
            while done < cut:
                warmed = restored.warm(random.Random(cut).randint(1, 3) if between else 1)
                assert warmed.mismatched == () and warmed.files > 0
                done += warmed.files
            assert restored.graph.answers_current == (done >= total)
            produced = []
            for n, event in enumerate(after):
                produced += handled(restored, [event], clock=100.0 + n)
                if between:  # idle between events: a no-op once a change came
                    restored.warm(1)
            assert produced == expected, f"warmed {cut} of {total} (between: {between})"
            assert canonical(restored.state) == canonical(uninterrupted.state)
            assert restored.graph.answers_current


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_after_a_whole_warm_up_each_change_resolves_what_it_would_have(seed: int) -> None:
    snapshot, after, uninterrupted = restart(seed)
    expected = resolved_per_event(uninterrupted, after)
    cold = RepoIndex.from_snapshot(snapshot)
    assert resolved_per_event(cold, after) != expected  # its first change resolves all
    warmed = RepoIndex.from_snapshot(snapshot)
    while warmed.warm(2).waiting:
        pass
    assert resolved_per_event(warmed, after) == expected
    first_change = next(n for n, count in enumerate(expected) if count)
    assert 0 < expected[first_change] < len(MODULES) or seed != 1


def test_slices_resolve_in_path_order_up_to_their_limit() -> None:
    snapshot, _, _ = restart(1)
    index = RepoIndex.from_snapshot(snapshot)
    assert index.graph.warmable and not index.graph.answers_current
    assert [index.warm(3).waiting, index.warm(3).waiting, index.warm(3).waiting] == [7, 4, 1]
    last = index.warm(3)
    assert (last.files, last.waiting) == (1, 0)
    assert index.graph.answers_current and index.warm(3).files == 0


@pytest.mark.parametrize("seed", [1, 3])
def test_a_takeover_past_the_snapshot_warms_when_its_last_delta_was_resolved(seed: int) -> None:
    """A worker taking the partition over restores the snapshot, then folds the deltas
    published after it: at every cut, it is warmable exactly when the worker that
    published the last of them held a resolved state (not in a scan before its barrier),
    and warmed then, it gives the uninterrupted worker's next deltas, byte for byte."""
    snapshot, after, uninterrupted = restart(seed)
    published = handled(uninterrupted, after)
    # the restart's rescan changed files: from the first of them to its barrier, not
    assert False in [d.resolved for d in published] and published[-1].resolved
    for cut in range(len(after)):
        taker = RepoIndex.from_snapshot(snapshot)
        for delta in published[:cut]:
            assert taker.apply(delta)
        assert taker.graph.warmable == (published[cut - 1].resolved if cut else True)
        if taker.graph.warmable:
            while taker.warm(3).waiting:
                pass
            assert taker.graph.answers_current, f"cut {cut}"
        assert handled(taker, after[cut:]) == published[cut:], f"cut {cut}"
    unsaid = RepoIndex.from_snapshot(snapshot)
    unsaid.apply(published[0].model_copy(update={"resolved": None}))  # an older worker's
    assert not unsaid.graph.warmable


def test_a_slice_stops_once_its_time_is_spent_after_one_file_at_least() -> None:
    snapshot, _, _ = restart(1)
    index = RepoIndex.from_snapshot(snapshot)
    asked: list[int] = []

    def spent_after(n: int) -> Callable[[], bool]:
        def until() -> bool:
            asked.append(n)
            return len(asked) >= n

        return until

    assert index.warm(100, spent_after(3)).files == 3  # asked after the 1st, 2nd, 3rd file
    asked.clear()
    assert index.warm(100, lambda: True).files == 1  # spent at once: one file all the same
    assert index.warm(2, lambda: False).files == 2  # the count still bounds it
    assert index.warm(100).waiting == 0


async def test_a_warm_up_slice_ends_on_its_clock_not_on_a_count() -> None:
    snapshot, _, _ = restart(1)
    index = RepoIndex.from_snapshot(snapshot)
    ticks = iter(range(10**6))
    # every read of the clock is one second later: a slice of 2.5 s reads it at its start,
    # then after each file, so it takes 3 files (then 1 s more to measure it)
    done = await warm_up("app-1", index, slice_s=2.5, clock=lambda: float(next(ticks)))
    assert (done.files, done.slices, done.completed) == (len(MODULES) + 3, 4, True)
    assert done.max_slice_ms == 4000.0


def test_a_snapshot_not_resolved_is_not_warmed() -> None:
    s = Stamp()
    index = RepoIndex("app-1")
    handled(index, [s.claim(), s.changed("a.py", "import b\n", origin="scan")])
    snapshot = capture(index.state, resolved=index.graph.state_resolved)
    restored = RepoIndex.from_snapshot(decode(encode(snapshot)))
    assert not restored.graph.warmable
    assert restored.warm(10).files == 0 and not restored.graph.answers_current


def test_a_state_that_is_not_its_resolution_is_left_to_the_first_change_never_silently() -> None:
    """A snapshot that says resolved of a state that is not (its scan's barrier never came):
    the warm-up says which owners differ and leaves them, and the folders, to the first
    change, whose deltas are then those of a worker that did not warm up."""
    s = Stamp()
    index = RepoIndex("app-1")
    scan = [s.changed("pkg/a.py", "from pkg.b import f0\n", origin="scan")]
    scan.append(s.changed("pkg/b.py", "def f0(x):\n    return x\n", origin="scan"))
    handled(index, [s.claim(), *scan])
    snapshot = decode(encode(capture(index.state, resolved=True)))
    edits = [s.scan_completed("c1"), s.changed("c.py", "import pkg.b\n")]
    expected = handled(RepoIndex.from_snapshot(snapshot), edits)
    restored = RepoIndex.from_snapshot(snapshot)
    warmed = restored.warm(10)
    assert warmed.mismatched == ("pkg/a.py", "/", "/pkg")  # its import edge is not there
    assert warmed.waiting == 0 and not restored.graph.answers_current
    assert handled(restored, edits) == expected


def _message(event: object, offset: int) -> Message:
    raw = encode_event(event)  # type: ignore[arg-type]
    return Message(DEFAULT_TOPICS.file_events, 0, offset, b"app-1", raw)


def _restarted(snapshot: StateSnapshot) -> tuple[IndexingPipeline, InMemoryDeltaSink]:
    """A worker whose repository comes from ``snapshot`` (the data dir's, say)."""
    log = InMemoryDeltaLog()
    sink = InMemoryDeltaSink(log)
    restore = lambda repo: RepoIndex.from_snapshot(snapshot)  # noqa: E731
    return IndexingPipeline(log, sink, clock=lambda: 7.0, new_index=restore), sink


async def test_the_worker_warms_a_restored_repository_in_the_background() -> None:
    """A restart: the new session's claim restores the repository and starts its warm-up,
    which completes while the worker idles; the rescan of unchanged files and the first
    edit then give the uninterrupted worker's deltas, the edit resolving what it affects."""
    snapshot, _, uninterrupted = restart(1)
    again = Stamp(producer="p2", epoch=2)
    events: list[object] = [again.claim()]
    events += [again.changed(p, t, origin="scan") for p, t in first_sources(1).items()]
    events += [again.scan_completed("c2", full=True), again.changed("cli.py", "import app\n")]
    worker, sink = _restarted(snapshot)
    with capture_logs() as logs:
        await worker.process(_message(events[0], 0))
        assert len(worker.warm_ups) == 1
        await asyncio.gather(*worker.warm_ups)
        assert worker.warm_ups == ()
        for offset, event in enumerate(events[1:], 1):
            await worker.process(_message(event, offset))
    warmed = [e for e in logs if e["event"] == "resolution_warmed"]
    assert [(e["repo"], e["files"]) for e in warmed] == [("app-1", len(MODULES) + 3)]
    assert warmed[0]["slices"] >= 1 and warmed[0]["max_slice_ms"] >= 0
    index = worker.index(0, "app-1")
    assert index is not None and index.graph.answers_current
    before = uninterrupted.graph.resolved_files
    expected = handled(uninterrupted, events, clock=7.0)
    assert [d.model_copy(update={"applied_at": 0.0}) for d in sink.deltas] == expected
    assert index.graph.resolved_files == uninterrupted.graph.resolved_files - before
    assert index.graph.resolved_files < len(MODULES)


async def test_a_worker_taking_the_partition_over_warms_what_the_log_continued() -> None:
    """A takeover: the snapshot (the broker's), then the deltas another worker published
    after it in the partition's log. Restoring the assigned partition starts the warm-up,
    and the next edit then gives the uninterrupted worker's delta."""
    snapshot, after, uninterrupted = restart(1)
    published = handled(uninterrupted, after[:5])
    log = InMemoryDeltaLog()
    log.partitions[0] += published
    restore = lambda repo: RepoIndex.from_snapshot(snapshot)  # noqa: E731
    worker = IndexingPipeline(log, InMemoryDeltaSink(log), clock=lambda: 7.0, new_index=restore)
    with capture_logs() as logs:
        await worker.restore_assigned([0])
        assert len(worker.warm_ups) == 1
        await asyncio.gather(*worker.warm_ups)
        await worker.process(_message(after[5], 5))
    owners = len(uninterrupted.state.files) + 3  # two deleted meanwhile; the folders
    assert [e["files"] for e in logs if e["event"] == "resolution_warmed"] == [owners]
    index = worker.index(0, "app-1")
    assert index is not None and index.state.seq == published[-1].seq + 1
    assert log.partitions[0][-1].model_copy(update={"applied_at": 0.0}) == handled(
        uninterrupted, after[5:6]
    )[0].model_copy(update={"applied_at": 0.0})


async def test_a_warm_up_stops_when_the_partition_is_revoked() -> None:
    snapshot, _, _ = restart(2)
    worker, _ = _restarted(snapshot)
    with capture_logs() as logs:
        await worker.process(_message(Stamp(producer="p2", epoch=2).claim(), 0))
        (task,) = worker.warm_ups
        worker.revoke({0})
        done = await task
    assert (done.files, done.completed) == (0, False)
    stopped = [e for e in logs if e["event"] == "resolution_warm_stopped"]
    assert [(e["repo"], e["reason"]) for e in stopped] == [("app-1", "revoked")]


async def test_a_warm_up_gives_the_loop_back_between_slices() -> None:
    snapshot, _, _ = restart(3)
    index = RepoIndex.from_snapshot(snapshot)
    ticks, finished = 0, asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not finished.is_set():
            ticks += 1
            await asyncio.sleep(0)

    running = asyncio.ensure_future(ticker())
    done = await warm_up("app-1", index, slice_s=1e-9)  # one file a slice
    finished.set()
    await running
    assert (done.files, done.slices, done.completed) == (len(MODULES) + 3, len(MODULES) + 3, True)
    assert ticks >= done.slices - 1
