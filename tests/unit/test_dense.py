"""Dense retrieval in the read model: filled in the background, most important first."""

from __future__ import annotations

import asyncio

import pytest

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.dense import DenseIndex, FillPacing
from query.read_model import ReadModel
from stores.projections.graph_state import FileGraphState
from stores.records import ChunkRecord
from stores.text.embedders import HashingEmbedder
from stores.text.embedding_cache import InMemoryEmbeddingCache
from stores.vectors import InMemoryVectorStore
from tests.factories import Stamp
from tests.unit.test_retrieval_api import FILES


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__(dim=64)
        self.texts = 0

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts += len(texts)
        return super().embed(texts)


def chunk_of(path: str, n: int) -> ChunkRecord:
    return ChunkRecord(
        id=f"{path}#L1-2", path=path, kind="MODULE", line_start=1, line_end=2,
        text=f"value = {n}", content_hash=f"h{n}",
    )  # fmt: skip


def indexed() -> tuple[ReadModel, DenseIndex, CountingEmbedder, RepoIndex, Stamp]:
    embedder = CountingEmbedder()
    dense = DenseIndex(embedder, InMemoryVectorStore(), InMemoryEmbeddingCache(), batch=2)
    model, index, stamp = ReadModel(clock=lambda: 1.0, dense=dense), RepoIndex("app-1"), Stamp()
    for event in [stamp.claim(), *(stamp.changed(p, t, origin="scan") for p, t in FILES.items()),
                  stamp.scan_completed("c1")]:  # fmt: skip
        delta = index.handle(event, now=1.0)
        assert delta is not None
        model.apply_delta(delta)
    return model, dense, embedder, index, stamp


def test_searchable_at_once_by_bm25_and_by_vectors_once_filled() -> None:
    model, dense, _, _, _ = indexed()
    retrieval = model.repos["app-1"].retrieval
    assert retrieval.retrievers == ("bm25", "mentions")
    assert dense.coverage("app-1") == (0, len(retrieval.chunks))
    before = retrieval.search("iterate over the body", limit=3)
    assert all("dense" not in hit.signals for hit in before)

    assert dense.fill() == len(retrieval.chunks)
    assert retrieval.retrievers == ("bm25", "mentions", "dense")
    after = retrieval.search("iterate over the body", limit=3)
    assert "dense" in after[0].signals and after[0].path == "app/models.py"


def test_the_most_important_files_are_embedded_first() -> None:
    model, dense, _, index, _ = indexed()
    snapshot = recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=1.0)
    model.apply_snapshot(snapshot)
    ranked = sorted(snapshot.files, key=lambda f: (-f.importance, f.path))
    picked = dense.next_batch()
    assert picked is not None
    repo, chunks = picked
    assert repo == "app-1" and {c.path for c in chunks} == {ranked[0].path}


def test_a_changed_file_loses_its_vectors_at_once_and_unchanged_chunks_are_not_reembedded() -> None:
    model, dense, embedder, index, stamp = indexed()
    dense.fill()
    changed = FILES["app/models.py"] + "\ndef helper():\n    return 0\n"
    delta = index.handle(stamp.changed("app/models.py", changed), now=2.0)
    assert delta is not None
    model.apply_delta(delta)
    present, known = dense.coverage("app-1")
    assert present < known  # the file's old vectors are gone, its chunks are queued
    hits = dense.search("app-1", "helper", limit=5)
    assert hits is not None and all(path != "app/models.py" for path, _, _ in hits)
    embedded = embedder.texts
    dense.fill()
    assert dense.coverage("app-1") == (known, known)
    assert embedder.texts == embedded + 1  # only the new function; the rest from the cache
    delta = index.handle(stamp.deleted("app/models.py"), now=3.0)
    assert delta is not None
    model.apply_delta(delta)
    assert dense.coverage("app-1")[0] == dense.coverage("app-1")[1] < known


def test_filling_some_files_embeds_their_chunks_and_leaves_the_rest_queued() -> None:
    model, dense, _, _, _ = indexed()
    known = dense.coverage("app-1")[1]
    models_chunks = [c for c in model.repos["app-1"].retrieval.chunks.values()
                     if c.path == "app/models.py"]  # fmt: skip
    assert dense.fill_paths("app-1", ["app/models.py"]) == len(models_chunks)
    assert dense.coverage("app-1") == (len(models_chunks), known)
    hits = dense.search("app-1", "response body", limit=5)
    assert hits is not None and {path for path, _, _ in hits} == {"app/models.py"}
    assert dense.fill() == known - len(models_chunks)


def test_the_fill_yields_to_searches_and_runs_flat_out_when_none_came() -> None:
    now = [100.0]
    dense = DenseIndex(
        CountingEmbedder(),
        InMemoryVectorStore(),
        InMemoryEmbeddingCache(),
        pacing=FillPacing(share=0.25, quiet_s=1.0),
        clock=lambda: now[0],
    )
    assert dense.pause_after(0.8) == 0.0  # no search yet
    assert dense.search("app-1", "anything", limit=5) is None  # no vectors yet: still a search
    now[0] = 100.5
    assert dense.pause_after(0.8) == 0.8 * 0.75 / 0.25  # three times the batch: a quarter
    now[0] = 101.01
    assert dense.pause_after(0.8) == 0.0  # quiet for more than a second
    with pytest.raises(ValueError, match="share"):
        FillPacing(share=0.0)


class RecordingPauses(DenseIndex):
    def __init__(self) -> None:
        super().__init__(CountingEmbedder(), InMemoryVectorStore(), InMemoryEmbeddingCache())
        self.asked: list[float] = []

    def pause_after(self, took_s: float) -> float:
        self.asked.append(took_s)
        return 0.0


async def test_the_fill_asks_for_its_pause_after_each_stored_batch_only() -> None:
    dense = RecordingPauses()
    dense.batch = 2
    for n in range(3):
        dense.file_changed("r", f"f{n}.py", [chunk_of(f"f{n}.py", n)], priority=float(n))
    stop = asyncio.Event()
    batches: list[int] = []
    running = asyncio.create_task(dense.run(stop, idle_s=0.01, on_batch=batches.append))
    while dense.queued() or len(batches) < 2:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # idle rounds: no pause asked for them
    stop.set()
    await running
    assert batches == [2, 1] and len(dense.asked) == 2 and all(t >= 0 for t in dense.asked)
