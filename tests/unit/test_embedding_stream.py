"""Embedding in the worker (GAZETTEER_EMBED_IN=worker): the worker's embedding stream
follows its deltas into the shared store; a query replica only reads it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest
from qdrant_client.http.exceptions import UnexpectedResponse

from deploy.dense_check import DenseSetupError, check_dense_settings
from deploy.dense_setup import dense_index, worker_fill
from deploy.settings import Settings
from processors.embedding_stream import EmbeddingStream, PrioritizingSink
from processors.neighborhood_stream import InMemorySnapshotSink, NeighborhoodStream
from processors.neighborhoods.reclusterer import Debounce, Reclusterer
from processors.pipeline import DeltaObservers, IndexingPipeline, InMemoryDeltaSink, Message
from producers.events import encode
from producers.topics import DEFAULT_TOPICS
from query.dense import DenseIndex, DenseReader
from query.read_model import ReadModel
from stores.delta_log import InMemoryDeltaLog
from stores.repo_state import RepoState
from stores.snapshot_log import InMemorySnapshotLog
from stores.text.dense_fill import Backoff, DenseFill, transient
from stores.text.embedders import embedder_from_spec
from stores.text.embedding_cache import InMemoryEmbeddingCache
from stores.vectors import InMemoryVectorStore
from tests.factories import Stamp, graph_delta
from tests.unit.test_neighborhood_stream import FILES, Clock

REPO = "app-1"
B2_REWRITTEN = "def g2():\n    return 2\n"  # no import left, a new body: every chunk differs


class Worker:
    """A pipeline whose neighborhood and embedding streams follow its deltas, wired as
    `processors.app.create_app` wires them, over in-memory logs, sinks and store."""

    def __init__(
        self, log: InMemoryDeltaLog, snapshots: InMemorySnapshotLog, store: InMemoryVectorStore
    ) -> None:
        self.clock = Clock()
        self.sink = InMemoryDeltaSink(log)
        self.published = InMemorySnapshotSink()
        self.snapshots = snapshots
        reclusterer = Reclusterer(debounce=Debounce(quiet_s=0.5, max_wait_s=5.0))
        self.fill = DenseFill(
            embedder_from_spec("hash:256"),
            store,
            InMemoryEmbeddingCache(),
            batch=2,
            deferred_deletes=True,
            backoff=Backoff(first_s=0.01, max_s=0.02),
        )
        self.embedding = EmbeddingStream(self.fill, latest=reclusterer.snapshots.get)
        self.neighborhoods = NeighborhoodStream(
            reclusterer,
            snapshots,
            PrioritizingSink(self.published, self.embedding),
            clock=self.clock,
        )
        observers = DeltaObservers(self.neighborhoods, self.embedding)
        self.pipeline = IndexingPipeline(log, self.sink, clock=self.clock, observer=observers)
        self.offset = 0

    async def send(self, *events: object) -> None:
        messages = []
        for event in events:
            raw = encode(event)  # type: ignore[arg-type]
            messages.append(Message(DEFAULT_TOPICS.file_events, 0, self.offset, REPO.encode(), raw))
            self.offset += 1
        await self.pipeline.process_batch(messages)

    async def publish_neighborhoods(self) -> None:
        self.clock.now += 10
        await self.neighborhoods.tick()
        for snapshot in self.published.snapshots:
            self.snapshots.append(0, snapshot)

    def state(self) -> RepoState:
        index = self.pipeline.index(0, REPO)
        assert index is not None
        return index.state


async def scanned(worker: Worker, stamp: Stamp) -> None:
    await worker.send(
        stamp.claim(), *(stamp.changed(path, text, origin="scan") for path, text in FILES.items())
    )
    await worker.send(stamp.scan_completed("c1"))


def chunks_of(state: RepoState) -> dict[str, str]:
    """chunk id -> content hash, of every file of the state."""
    return {c.id: c.content_hash for f in state.files.values() for c in f.chunks}


def points(store: InMemoryVectorStore) -> dict[str, str]:
    """chunk id -> the content hash its stored vector was embedded from."""
    hits = store.search(REPO, [1.0] * 256, limit=1000)
    return {hit.point_id: hit.payload["content_hash"] for hit in hits}


def drain(fill: DenseFill) -> list[list[str]]:
    """The queued chunk ids, batch by batch, in the order they would be embedded."""
    batches = []
    while (picked := fill.next_batch()) is not None:
        batches.append([chunk.id for chunk in picked[1]])
    return batches


async def test_a_scan_is_queued_and_embedded_into_the_store() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    expected = chunks_of(worker.state())
    assert len(expected) == 12 and worker.fill.queued() == 12
    assert worker.fill.fill() == 12
    assert points(store) == expected


async def test_a_restored_partition_queues_its_repositories_and_an_edit_replaces_old_vectors() -> (
    None
):
    log, snapshots, store, stamp = (
        InMemoryDeltaLog(),
        InMemorySnapshotLog(),
        InMemoryVectorStore(),
        Stamp(),
    )
    first = Worker(log, snapshots, store)
    await scanned(first, stamp)
    first.fill.fill()
    before = points(store)

    restarted = Worker(log, snapshots, store)
    await restarted.send(stamp.changed("pkg_b/b2.py", B2_REWRITTEN))  # restores partition 0
    after = chunks_of(restarted.state())
    assert restarted.fill.paths(REPO) == sorted(FILES)
    assert restarted.fill.queued() == len(after) == 11  # b2 lost its module chunk
    assert restarted.fill.pending_deletes() == [(REPO, "pkg_b/b2.py")]
    assert points(store) == before  # deletes wait for the filling loop
    restarted.fill.fill()
    assert points(store) == after
    assert after["pkg_b/b2.py#g2"] != before["pkg_b/b2.py#g2"]


async def test_a_changed_file_is_queued_again_and_its_old_vectors_deleted() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    worker.fill.fill()
    before = points(store)
    await worker.send(stamp.changed("pkg_b/b2.py", B2_REWRITTEN))
    assert drain(worker.fill) == [["pkg_b/b2.py#g2"]]
    assert worker.fill.pending_deletes() == [(REPO, "pkg_b/b2.py")]
    worker.fill.flush_deletes()
    assert points(store) == {c: h for c, h in before.items() if not c.startswith("pkg_b/b2.py#")}


async def test_a_file_upserted_again_unchanged_is_not_queued() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    worker.fill.fill()
    same = worker.state().files["pkg_a/a1.py"]
    seq = worker.state().seq + 1
    worker.embedding.observed([graph_delta(REPO, seq, files_upserted=(same,))])
    assert (worker.fill.queued(), worker.fill.pending_deletes()) == (0, [])


async def test_a_removed_file_has_its_vectors_deleted() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    worker.fill.fill()
    await worker.send(stamp.deleted("pkg_a/a3.py"))
    assert (worker.fill.queued(), worker.fill.pending_deletes()) == (0, [(REPO, "pkg_a/a3.py")])
    assert worker.fill.fill() == 0
    assert points(store) == chunks_of(worker.state())
    assert not any(chunk.startswith("pkg_a/a3.py#") for chunk in points(store))


async def test_a_repository_taken_over_is_forgotten_and_its_vectors_kept() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    worker.fill.fill()
    await worker.send(stamp.deleted("pkg_a/a1.py"), stamp.changed("pkg_b/b2.py", B2_REWRITTEN))
    assert worker.fill.queued() == 1
    assert worker.fill.pending_deletes() == [(REPO, "pkg_a/a1.py"), (REPO, "pkg_b/b2.py")]

    state = worker.state()
    worker.pipeline.revoke({0})
    assert (worker.fill.queued(), worker.fill.pending_deletes(), worker.fill.paths(REPO)) == (
        0,
        [],
        [],
    )
    # What it wrote stays for the new owner, the files it saw change leave at once.
    kept = sorted(c for c in chunks_of(state) if not c.startswith("pkg_b/b2.py#"))
    assert sorted(points(store)) == kept
    assert worker.fill.fill() == 0
    # A delta of a repository not restored here (not its first) is not followed.
    worker.embedding.observed([graph_delta(REPO, 9, files_removed=("pkg_a/a2.py",))])
    assert (worker.fill.queued(), worker.fill.paths(REPO)) == (0, [])


def by_importance(importance: dict[str, float], chunks: dict[str, str]) -> list[list[str]]:
    ranked = sorted(chunks, key=lambda chunk: (-importance[chunk.split("#")[0]], chunk))
    return [ranked[start : start + 2] for start in range(0, len(ranked), 2)]


async def test_a_published_snapshot_orders_the_batches_by_importance() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    await worker.publish_neighborhoods()
    (snapshot,) = worker.published.snapshots
    importance = snapshot.importance()
    expected = by_importance(importance, chunks_of(worker.state()))
    assert expected[0] == ["pkg_b/b1.py#g1", "pkg_b/b1.py#module:1"]  # the most depended upon
    assert expected != [sorted(chunks_of(worker.state()))[i : i + 2] for i in range(0, 12, 2)]
    assert drain(worker.fill) == expected


async def test_a_restored_repository_is_ordered_by_its_last_snapshot() -> None:
    log, snapshots, store, stamp = (
        InMemoryDeltaLog(),
        InMemorySnapshotLog(),
        InMemoryVectorStore(),
        Stamp(),
    )
    first = Worker(log, snapshots, store)
    await scanned(first, stamp)
    await first.publish_neighborhoods()
    (snapshot,) = first.published.snapshots

    restarted = Worker(log, snapshots, store)
    await restarted.send(stamp.changed("pkg_a/a2.py", FILES["pkg_a/a2.py"] + "# edit\n"))
    importance = snapshot.importance()
    assert drain(restarted.fill) == by_importance(importance, chunks_of(restarted.state()))


class FlakyStore(InMemoryVectorStore):
    """A store that is away for its next ``deletes_away`` deletes and ``upserts_away``
    upserts."""

    def __init__(self) -> None:
        super().__init__()
        self.deletes_away = self.upserts_away = 0

    def upsert(self, repo, points):  # type: ignore[no-untyped-def]
        if self.upserts_away > 0:
            self.upserts_away -= 1
            raise ConnectionError("qdrant is away")
        super().upsert(repo, points)

    def delete_by_path(self, repo: str, path: str) -> None:
        if self.deletes_away > 0:
            self.deletes_away -= 1
            raise ConnectionError("qdrant is away")
        super().delete_by_path(repo, path)


async def test_the_background_fill_waits_for_a_store_that_is_away_and_loses_nothing() -> None:
    store = FlakyStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    await scanned(worker, stamp)
    worker.fill.fill()
    await worker.send(stamp.changed("pkg_b/b2.py", B2_REWRITTEN))
    await worker.send(stamp.changed("pkg_a/a1.py", FILES["pkg_a/a1.py"] + "def f9():\n    pass\n"))
    store.deletes_away, store.upserts_away = 2, 2
    stop = asyncio.Event()
    running = asyncio.create_task(worker.embedding.run(stop, idle_s=0.01))
    for _ in range(500):
        if worker.fill.queued() == 0 and (store.deletes_away, store.upserts_away) == (0, 0):
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(running, 5)
    assert worker.fill.pending_deletes() == []
    assert points(store) == chunks_of(worker.state())


async def test_a_replica_reading_the_workers_vectors_drops_stale_hits() -> None:
    store = InMemoryVectorStore()
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), store), Stamp()
    reader = DenseReader(embedder_from_spec("hash:256"), store)
    model = ReadModel(clock=lambda: 1.0, dense=reader)

    def follow() -> None:
        for delta in worker.sink.deltas[model.deltas_applied :]:
            model.apply_delta(delta)

    await scanned(worker, stamp)
    follow()
    retrieval = model.repos[REPO].retrieval
    assert (
        retrieval.retrievers == ("bm25", "mentions") and reader.search(REPO, "g2", limit=3) is None
    )
    worker.fill.fill()
    assert retrieval.retrievers == ("bm25", "mentions", "dense")
    hits = reader.search(REPO, "g2 g3", limit=10)
    assert hits is not None and "pkg_b/b2.py" in {path for path, _, _ in hits}

    await worker.send(stamp.changed("pkg_b/b2.py", B2_REWRITTEN), stamp.deleted("pkg_b/b3.py"))
    follow()  # the replica is ahead of the worker's embedding
    stale = {hit.payload["path"] for hit in store.search(REPO, [1.0] * 256, limit=100)}
    assert {"pkg_b/b2.py", "pkg_b/b3.py"} <= stale  # the store still has the old vectors
    hits = reader.search(REPO, "g2 g3", limit=10)
    assert hits is not None and {path for path, _, _ in hits} == {
        "pkg_a/a1.py",
        "pkg_a/a2.py",
        "pkg_a/a3.py",
        "pkg_b/b1.py",
    }
    assert (reader.queued(), reader.embedded, reader.fill()) == (0, 0, 0)  # it never writes

    worker.fill.fill()
    hits = reader.search(REPO, "g2", limit=10)
    assert hits is not None and ("pkg_b/b2.py", "pkg_b/b2.py#g2") in {(p, c) for p, _, c in hits}


def test_worker_embedding_needs_a_shared_qdrant(tmp_path: Path) -> None:
    common: dict[str, object] = {"embedder": "hash:256", "data_dir": tmp_path, "qdrant_url": None}
    settings = Settings(embed_in="worker", **common)  # type: ignore[arg-type]
    for build in (worker_fill, dense_index):
        with pytest.raises(
            DenseSetupError, match="GAZETTEER_EMBED_IN=worker needs GAZETTEER_QDRANT_URL"
        ):
            build(settings)
    shared = InMemoryVectorStore()
    fill, reader = worker_fill(settings, shared), dense_index(settings, shared)
    assert isinstance(fill, DenseFill) and fill.store is shared and fill.deferred_deletes
    assert type(reader) is DenseReader and reader.store is shared
    query = Settings(embed_in="query", **common)  # type: ignore[arg-type]
    assert worker_fill(query) is None and type(dense_index(query)) is DenseIndex
    # no embedder, nothing to share: the default needs no Qdrant wherever it "embeds"
    check_dense_settings(Settings(**{**common, "embedder": "none", "embed_in": "worker"}))  # type: ignore[arg-type]


def test_a_server_away_is_retried_and_a_refused_request_is_not() -> None:
    def refused(status: int) -> UnexpectedResponse:
        return UnexpectedResponse(status, "", b"", httpx.Headers())

    retried = [ConnectionError("down"), TimeoutError(), refused(503), refused(429)]
    assert [transient(exc) for exc in retried] == [True, True, True, True]
    assert [transient(exc) for exc in (refused(400), ValueError("dim"))] == [False, False]
