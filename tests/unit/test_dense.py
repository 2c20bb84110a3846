"""Dense retrieval in the read model: filled in the background, most important first."""

from __future__ import annotations

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.dense import DenseIndex
from query.read_model import ReadModel
from stores.projections.graph_state import FileGraphState
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
