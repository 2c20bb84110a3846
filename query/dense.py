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
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from query.question_vectors import QuestionVectors
from stores.records import ChunkRecord
from stores.text.dense_fill import Backoff, DenseFill
from stores.text.embedders import Embedder
from stores.text.embedding_cache import EmbeddingCache, InMemoryEmbeddingCache
from stores.vectors import VectorHit, VectorStore


@dataclass(frozen=True, slots=True)
class FillPacing:
    """How much of a core the background fill takes while queries flow: ``share`` of
    its time (a batch of 16 chunks is about a second of one core with the default
    model), as long as a search came within ``quiet_s``; flat out otherwise.

    Why: the fill's model runs in a thread beside the event loop that answers, and on
    2 cores under 20 clients it held one of them for the whole load (issue 15), while
    the answers, the client and the worker shared the other. Answers do not change
    (vectors are used as they come); the vectors come slower while clients ask."""

    share: float = 0.25
    quiet_s: float = 1.0

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise ValueError(f"a fill's share is in (0, 1], not {self.share}")


class DenseIndex(DenseFill):
    """Fills the store from the read model's files and answers searches; ``questions``:
    the question vectors' bounded cache (`query.question_vectors`)."""

    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        cache: EmbeddingCache,
        *,
        batch: int = 16,
        deferred_deletes: bool = False,
        backoff: Backoff | None = None,
        pacing: FillPacing = FillPacing(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(
            embedder,
            store,
            cache,
            batch=batch,
            deferred_deletes=deferred_deletes,
            backoff=backoff or Backoff(),
        )
        self.questions = QuestionVectors(embedder)
        self.pacing = pacing
        self._clock = clock
        self._searched_at: float | None = None

    def pause_after(self, took_s: float) -> float:
        """While searches come (one within ``pacing.quiet_s``), a pause that leaves the
        fill ``pacing.share`` of its time; none when the service is quiet."""
        searched = self._searched_at
        if searched is None or self._clock() - searched > self.pacing.quiet_s:
            return 0.0
        share = self.pacing.share
        return max(0.0, took_s) * (1 - share) / share

    def search(
        self, repo: str, question: str, *, limit: int, path_prefix: str | None = None
    ) -> list[tuple[str, float, str]] | None:
        """Files by their best chunk's cosine: (path, score, chunk id); None when the
        repository has no vectors yet."""
        self._searched_at = self._clock()
        if self.store.count(repo) == 0:
            return None
        vector = self.questions.vector(question)
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
