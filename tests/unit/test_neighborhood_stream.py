"""Reclustering driven by the worker's deltas: debounce, scans, restore, failures."""

from __future__ import annotations

import asyncio
import threading

from processors.neighborhood_stream import InMemorySnapshotSink, NeighborhoodStream
from processors.neighborhoods.reclusterer import Debounce, Reclusterer
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message
from producers.events import encode
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from stores.snapshot_log import InMemorySnapshotLog
from tests.factories import Stamp

# Two packages, each a triangle of imports with calls, joined by one import a1 -> b1.
FILES = {
    "pkg_a/a1.py": (
        "from pkg_a.a2 import f2\nfrom pkg_b.b1 import g1\ndef f1():\n    f2()\n    g1()\n"
    ),
    "pkg_a/a2.py": "from pkg_a.a3 import f3\ndef f2():\n    f3()\n",
    "pkg_a/a3.py": "from pkg_a.a1 import f1\ndef f3():\n    f1()\n",
    "pkg_b/b1.py": "from pkg_b.b2 import g2\ndef g1():\n    g2()\n",
    "pkg_b/b2.py": "from pkg_b.b3 import g3\ndef g2():\n    g3()\n",
    "pkg_b/b3.py": "from pkg_b.b1 import g1\ndef g3():\n    g1()\n",
}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Worker:
    """A pipeline with its neighborhood stream, over in-memory logs and sinks."""

    def __init__(
        self, log: InMemoryDeltaLog, snapshots: InMemorySnapshotLog, reclusterer=None
    ) -> None:
        self.clock = Clock()
        self.sink = InMemoryDeltaSink(log)
        self.published = InMemorySnapshotSink()
        self.snapshots = snapshots
        self.stream = NeighborhoodStream(
            reclusterer or Reclusterer(debounce=Debounce(quiet_s=0.5, max_wait_s=5.0)),
            snapshots,
            self.published,
            clock=self.clock,
        )
        self.pipeline = IndexingPipeline(log, self.sink, clock=self.clock, observer=self.stream)
        self.offset = 0

    async def send(self, *events) -> None:
        messages = []
        for event in events:
            raw = encode(event)
            messages.append(Message(DEFAULT_TOPICS.file_events, 0, self.offset, b"app-1", raw))
            self.offset += 1
        await self.pipeline.process_batch(messages)

    async def tick(self, after_s: float = 0.0) -> list:
        self.clock.now += after_s
        before = len(self.published.snapshots)
        await self.stream.tick()
        fresh = self.published.snapshots[before:]
        for snapshot in fresh:
            self.snapshots.append(0, snapshot)
        return fresh


async def scanned(worker: Worker, stamp: Stamp) -> None:
    await worker.send(stamp.claim())
    for path, text in FILES.items():
        await worker.send(stamp.changed(path, text, origin="scan"))
    await worker.send(stamp.scan_completed("c1"))


async def test_a_scan_is_clustered_once_settled_and_quiet() -> None:
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog()), Stamp()
    await worker.send(stamp.claim())
    for path, text in list(FILES.items())[:3]:
        await worker.send(stamp.changed(path, text, origin="scan"))
    assert await worker.tick(after_s=60) == []  # mid-scan: the edges come at the barrier
    for path, text in list(FILES.items())[3:]:
        await worker.send(stamp.changed(path, text, origin="scan"))
    await worker.send(stamp.scan_completed("c1"))
    assert await worker.tick(after_s=0.1) == []  # not quiet yet
    (snapshot,) = await worker.tick(after_s=0.5)

    assert (snapshot.seq, snapshot.graph_seq, snapshot.indexed_commit) == (1, 8, "c1")
    groups = {n.label: n for n in snapshot.neighborhoods}
    assert sorted(groups) == ["pkg_a", "pkg_b"]
    assert {f.path: groups_of(snapshot)[f.neighborhood] for f in snapshot.files} == {
        p: p.split("/")[0] for p in FILES
    }
    assert [c.kind for c in snapshot.changes] == ["created", "created"]
    assert [link.weight for link in snapshot.links] == [1.0]  # a1 -> b1, one call
    b1 = next(f for f in snapshot.files if f.path == "pkg_b/b1.py")
    assert (b1.in_degree, b1.out_degree, b1.degree) == (2, 1, 3)
    assert groups["pkg_b"].entry_points[0] == "pkg_b/b1.py"  # the most depended upon


def groups_of(snapshot) -> dict[str, str]:
    return {n.id: n.label for n in snapshot.neighborhoods}


async def test_edits_that_move_no_arc_do_not_recluster_and_a_new_import_does() -> None:
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog()), Stamp()
    await scanned(worker, stamp)
    (first,) = await worker.tick(after_s=1)
    await worker.send(stamp.changed("pkg_b/b2.py", FILES["pkg_b/b2.py"] + "# a comment\n"))
    assert await worker.tick(after_s=1) == []
    # b3 now leans on pkg_a: three calls there, none left in pkg_b.
    moved = "from pkg_a.a1 import f1\nfrom pkg_a.a2 import f2\n"
    moved += "def g3():\n    f1()\n    f2()\n    f2()\n"
    await worker.send(stamp.changed("pkg_b/b3.py", moved))
    (second,) = await worker.tick(after_s=1)

    assert second.seq == 2 and second.graph_seq > first.graph_seq
    assert {n.id for n in second.neighborhoods} == {n.id for n in first.neighborhoods}
    ids = {label: nid for nid, label in groups_of(first).items()}
    assert [
        (c.kind, c.source, c.target, c.paths) for c in second.changes if c.kind == "files_moved"
    ] == [("files_moved", ids["pkg_b"], ids["pkg_a"], ("pkg_b/b3.py",))]


async def test_a_steady_stream_of_edits_still_reclusters_after_the_longest_wait() -> None:
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog()), Stamp()
    await scanned(worker, stamp)
    assert len(await worker.tick(after_s=1)) == 1
    published = 0
    for i in range(30):  # an import edit every 0.3 s: never quiet for 0.5 s
        extra = f"from pkg_b.b{1 + i % 3} import g{1 + i % 3}\n" * (1 + i % 2)
        await worker.send(stamp.changed("pkg_a/a2.py", FILES["pkg_a/a2.py"] + extra))
        published += len(await worker.tick(after_s=0.3))
    assert published == 1  # 30 x 0.3 s = 9 s: one recluster at the 5 s cap


async def test_a_restarted_worker_continues_the_snapshots_and_republishes_nothing() -> None:
    log, snapshots, stamp = InMemoryDeltaLog(), InMemorySnapshotLog(), Stamp()
    worker = Worker(log, snapshots)
    await scanned(worker, stamp)
    (first,) = await worker.tick(after_s=1)

    restarted = Worker(log, snapshots)
    await restarted.send(stamp.changed("pkg_b/b2.py", FILES["pkg_b/b2.py"] + "# edit\n"))
    assert await restarted.tick(after_s=10) == []  # same picture as the last snapshot
    moved = "from pkg_a.a1 import f1\ndef g3():\n    f1()\n    f1()\n"
    await restarted.send(stamp.changed("pkg_b/b3.py", moved))
    (second,) = await restarted.tick(after_s=1)
    assert second.seq == first.seq + 1
    assert {n.id for n in second.neighborhoods} >= {n.id for n in first.neighborhoods}


class BrokenReclusterer(Reclusterer):
    def compute(self, job):  # type: ignore[no-untyped-def]
        raise RuntimeError("a bug in clustering")


async def test_a_recluster_bug_is_logged_and_the_worker_goes_on() -> None:
    worker = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), BrokenReclusterer())
    stamp = Stamp()
    await scanned(worker, stamp)
    assert await worker.tick(after_s=1) == []
    assert worker.stream.failed == 1
    await worker.send(stamp.changed("pkg_a/a2.py", "def f2():\n    pass\n"))
    assert worker.pipeline.processed == 9  # indexing goes on


class GatedReclusterer(Reclusterer):
    """Computes only once the test opens the gate (from another thread)."""

    def __init__(self) -> None:
        super().__init__(debounce=Debounce(quiet_s=0.5, max_wait_s=5.0))
        self.started, self.gate = threading.Event(), threading.Event()

    def compute(self, job):  # type: ignore[no-untyped-def]
        self.started.set()
        assert self.gate.wait(10)
        return super().compute(job)


async def recluster_held(
    reclusterer: GatedReclusterer,
) -> tuple[Worker, Stamp, asyncio.Task[None]]:
    """A scanned worker whose first recluster has started and waits at the gate."""
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), reclusterer), Stamp()
    await scanned(worker, stamp)
    worker.clock.now += 1
    ticking = asyncio.create_task(worker.stream.tick())
    assert await asyncio.to_thread(reclusterer.started.wait, 10)
    return worker, stamp, ticking


async def test_the_worker_goes_on_indexing_while_a_recluster_computes() -> None:
    reclusterer = GatedReclusterer()
    worker, stamp, ticking = await recluster_held(reclusterer)
    # The recluster is blocked in its thread; the event loop still indexes an edit
    # (a new import b3 -> a1), and a second tick does not start another recluster.
    moved = "from pkg_a.a1 import f1\ndef g3():\n    f1()\n"
    await worker.send(stamp.changed("pkg_b/b3.py", moved))
    assert worker.pipeline.processed == 9
    await worker.stream.tick()
    assert not ticking.done()
    reclusterer.gate.set()
    await asyncio.wait_for(ticking, 10)
    # The snapshot is of the graph as it was taken; the edit makes the repository due.
    (first,) = worker.published.snapshots
    assert first.graph_seq == 8
    worker.clock.now += 1
    (second,) = await worker.tick()
    assert second.graph_seq == 9 and second.seq == first.seq + 1


async def test_a_recluster_of_a_repository_revoked_meanwhile_is_not_published() -> None:
    reclusterer = GatedReclusterer()
    worker, _, ticking = await recluster_held(reclusterer)
    worker.stream.forget(["app-1"])  # its partition went to another worker
    reclusterer.gate.set()
    await asyncio.wait_for(ticking, 10)
    assert worker.published.snapshots == [] and worker.stream.failed == 0
