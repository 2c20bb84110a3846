"""Dense retrieval for the query service: search, and (``GAZETTEER_EMBED_IN``) who embeds.

``query`` (the default): `DenseIndex` fills the vector store itself, in the background,
most important files first (`stores.text.dense_fill`); a changed or deleted
file's vectors are dropped at once, so a search never returns a stale chunk.

``worker``: the indexing workers embed the repositories they own into the shared store,
once per deployment rather than once per query replica. `DenseReader` neither embeds nor
deletes: it tracks which version of each chunk its own read model holds, and a hit on a
vector written for another version (its file changed since, or is gone) is dropped, so
a search still never returns a stale chunk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence

from stores.records import ChunkRecord
from stores.text.dense_fill import DenseFill
from stores.text.embedders import Embedder
from stores.text.embedding_cache import InMemoryEmbeddingCache
from stores.vectors import VectorHit, VectorStore


class DenseIndex(DenseFill):
    """Fills the store from the read model's files and answers searches."""

    def search(
        self, repo: str, question: str, *, limit: int, path_prefix: str | None = None
    ) -> list[tuple[str, float, str]] | None:
        """Files by their best chunk's cosine: (path, score, chunk id); None when the
        repository has no vectors yet."""
        if self.store.count(repo) == 0:
            return None
        vector = self.embedder.inner.embed([question])[0]  # questions are not cached
        hits = self.store.search(repo, vector, limit * 4, path_prefix=path_prefix)
        best: dict[str, tuple[float, str]] = {}
        for hit in self.current(repo, hits):
            path = str(hit.payload["path"])
            if path not in best:
                best[path] = (hit.score, hit.point_id)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
        return [(path, score, chunk_id) for path, (score, chunk_id) in ranked]

    def current(self, repo: str, hits: Sequence[VectorHit]) -> Sequence[VectorHit]:
        """The hits to answer from: all of them, since this index drops stale vectors
        itself."""
        return hits


class DenseReader(DenseIndex):
    """A query replica's dense index when the workers embed (``GAZETTEER_EMBED_IN=worker``):
    it follows the read model's files only to know which chunk versions are live."""

    def __init__(self, embedder: Embedder, store: VectorStore) -> None:
        # The cache would only serve chunks, which a reader never embeds.
        super().__init__(embedder, store, InMemoryEmbeddingCache(max_entries=1))

    def file_changed(
        self, repo: str, path: str, chunks: Sequence[ChunkRecord], priority: float
    ) -> None:
        self._paths.setdefault(repo, {})[path] = {c.id: c.content_hash for c in chunks}

    def file_removed(self, repo: str, path: str) -> None:
        self._paths.get(repo, {}).pop(path, None)

    def prioritize(self, repo: str, importance: Mapping[str, float]) -> None:
        return  # the workers order their own queues

    async def run(
        self,
        stop: asyncio.Event,
        idle_s: float = 0.2,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        return  # nothing to embed here

    def current(self, repo: str, hits: Sequence[VectorHit]) -> Sequence[VectorHit]:
        """Hits whose vector was written for the chunk version the read model holds."""
        files = self._paths.get(repo, {})
        return [
            hit
            for hit in hits
            if files.get(str(hit.payload["path"]), {}).get(hit.point_id)
            == hit.payload.get("content_hash")
        ]
