"""Dense retrieval, filled in the background: most important files first.

A repository is searchable by BM25 the moment its deltas are applied; its chunks are
queued here and embedded a batch at a time off the event loop, the files with the
highest importance first (PageRank and keyword centrality from the neighborhoods),
and an unchanged chunk is never embedded twice (the cache is keyed by content hash).
A changed or deleted file's vectors are dropped at once, so a search never returns a
stale chunk. Search answers say how much of the repository has vectors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

from processors.retrieval.chunks import embed_text
from processors.retrieval.embedders import Embedder
from processors.retrieval.embedding_cache import CachedEmbedder, EmbeddingCache
from stores.records import ChunkRecord
from stores.vectors import VectorStore

log = structlog.get_logger(__name__)


@dataclass
class _Queued:
    priority: float
    chunk: ChunkRecord


class DenseIndex:
    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        cache: EmbeddingCache,
        *,
        batch: int = 16,
    ) -> None:
        self.embedder = CachedEmbedder(embedder, cache)
        self.store = store
        self.batch = batch
        self._queue: dict[str, dict[str, _Queued]] = {}  # repo -> chunk id -> queued
        self._paths: dict[str, dict[str, tuple[str, ...]]] = {}  # repo -> path -> chunk ids
        self.embedded = 0

    # -- following the files ------------------------------------------------------------

    def file_changed(
        self, repo: str, path: str, chunks: Sequence[ChunkRecord], priority: float
    ) -> None:
        self.file_removed(repo, path)
        queue = self._queue.setdefault(repo, {})
        for chunk in chunks:
            queue[chunk.id] = _Queued(priority, chunk)
        self._paths.setdefault(repo, {})[path] = tuple(c.id for c in chunks)

    def file_removed(self, repo: str, path: str) -> None:
        ids = self._paths.get(repo, {}).pop(path, ())
        queue = self._queue.get(repo, {})
        for chunk_id in ids:
            queue.pop(chunk_id, None)
        if ids:
            self.store.delete_by_path(repo, path)

    def prioritize(self, repo: str, importance: Mapping[str, float]) -> None:
        """New importance (a neighborhood snapshot): reorder what is still queued."""
        for queued in self._queue.get(repo, {}).values():
            queued.priority = importance.get(queued.chunk.path, queued.priority)

    def queued(self) -> int:
        """Chunks waiting to be embedded, in every repository."""
        return sum(len(queue) for queue in self._queue.values())

    # -- filling ------------------------------------------------------------------------

    def next_batch(self) -> tuple[str, list[ChunkRecord]] | None:
        """The most important queued chunks of one repository (ties: repository, id)."""
        best: tuple[float, str] | None = None
        for repo, queue in sorted(self._queue.items()):
            if queue:
                top = max(q.priority for q in queue.values())
                if best is None or top > best[0]:
                    best = (top, repo)
        if best is None:
            return None
        queue = self._queue[best[1]]
        picked = sorted(queue.items(), key=lambda item: (-item[1].priority, item[0]))
        chunks = [queued.chunk for _, queued in picked[: self.batch]]
        for chunk in chunks:
            del queue[chunk.id]
        return best[1], chunks

    def vectors(self, chunks: Sequence[ChunkRecord]) -> list[list[float]]:
        """The chunks' vectors (from the cache, or the model): run off the event loop."""
        matrix = self.embedder.embed_keyed(
            [c.content_hash for c in chunks], [embed_text(c) for c in chunks]
        )
        return [list(map(float, row)) for row in matrix]

    def store_vectors(
        self, repo: str, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]
    ) -> None:
        """On the event loop, where the searches run: a chunk changed or gone while it
        was embedded is dropped."""
        live = self._paths.get(repo, {})
        points = [
            (c.id, vector, {"path": c.path})
            for c, vector in zip(chunks, vectors, strict=True)
            if c.id in live.get(c.path, ())
        ]
        self.store.upsert(repo, points)
        self.embedded += len(points)

    async def run(self, stop: asyncio.Event, idle_s: float = 0.2) -> None:
        """Embed queued chunks until ``stop``; the model runs in a worker thread."""
        while not stop.is_set():
            picked = self.next_batch()
            if picked is None:
                await asyncio.sleep(idle_s)
                continue
            repo, chunks = picked
            try:
                vectors = await asyncio.to_thread(self.vectors, chunks)
            except Exception:  # an embedder bug or an endpoint away: keep the evidence
                log.exception("embedding_failed", repo=repo, chunks=len(chunks))
                await asyncio.sleep(1.0)
                continue
            self.store_vectors(repo, chunks, vectors)

    def fill(self) -> int:
        """Embed everything queued, here and now (tests)."""
        done = 0
        while (picked := self.next_batch()) is not None:
            repo, chunks = picked
            self.store_vectors(repo, chunks, self.vectors(chunks))
            done += len(chunks)
        return done

    def fill_paths(self, repo: str, paths: Sequence[str]) -> int:
        """Embed the queued chunks of these files now, the rest staying queued (the
        evaluation embeds a question's candidate files rather than a whole checkout)."""
        queue = self._queue.get(repo, {})
        wanted = set(paths)
        chunks = [q.chunk for q in queue.values() if q.chunk.path in wanted]
        for start in range(0, len(chunks), self.batch):
            part = chunks[start : start + self.batch]
            for chunk in part:
                queue.pop(chunk.id, None)
            self.store_vectors(repo, part, self.vectors(part))
        return len(chunks)

    # -- answering ----------------------------------------------------------------------

    def coverage(self, repo: str) -> tuple[int, int]:
        """(chunks with vectors, chunks known) of a repository."""
        known = sum(len(ids) for ids in self._paths.get(repo, {}).values())
        return self.store.count(repo), known

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
        for hit in hits:
            path = str(hit.payload["path"])
            if path not in best:
                best[path] = (hit.score, hit.point_id)
        ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
        return [(path, score, chunk_id) for path, (score, chunk_id) in ranked]
