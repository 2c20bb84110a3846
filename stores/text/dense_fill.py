"""Filling a vector store with chunk vectors: most important files first, in the background.

The one queue both embedding sites share (GAZETTEER_EMBED_IN): the query service's
`query.dense.DenseIndex`, and the worker's `processors.embedding_stream.EmbeddingStream`.
A file's chunks are queued when it changes; they are embedded a batch at a time off the
event loop, the files with the highest importance first (PageRank and keyword
centrality from the neighborhoods), and an unchanged chunk is never embedded twice
(the cache is keyed by content hash). A chunk changed or gone while it was embedded is
not stored. A changed or deleted file's vectors are dropped at once, or, with
``deferred_deletes`` (the worker, whose store is a server that may be away), by the
filling loop before any vector is stored, retried while the store is away.

Every stored point's payload carries the chunk's ``content_hash``: a reader that does
not write (a query replica when the worker embeds) can tell a current vector from one
of an older version of its file.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import structlog

from stores.records import ChunkRecord
from stores.text.chunk_text import embed_text
from stores.text.embedders import Embedder
from stores.text.embedding_cache import CachedEmbedder, EmbeddingCache
from stores.vectors import VectorStore

log = structlog.get_logger(__name__)

TRANSIENT_MODULES = frozenset({"qdrant_client", "httpx", "httpcore", "grpc"})
"""Whose errors mean a server away (the vector store, an embedding endpoint), not a bug."""


def transient(exc: BaseException) -> bool:
    """A server away or overloaded, worth retrying; a request it refused (4xx) is not."""
    if isinstance(exc, TimeoutError | OSError | ConnectionError):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status != 429:
        return False
    return type(exc).__module__.split(".")[0] in TRANSIENT_MODULES


@dataclass
class _Queued:
    priority: float
    chunk: ChunkRecord


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits after a failure: from ``first_s``, doubling, capped at ``max_s``."""

    first_s: float = 1.0
    max_s: float = 30.0


class DenseFill:
    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        cache: EmbeddingCache,
        *,
        batch: int = 16,
        deferred_deletes: bool = False,
        backoff: Backoff = Backoff(),
    ) -> None:
        self.embedder = CachedEmbedder(embedder, cache)
        self.store = store
        self.batch = batch
        self.deferred_deletes = deferred_deletes
        self.backoff = backoff
        self._queue: dict[str, dict[str, _Queued]] = {}  # repo -> chunk id -> queued
        # repo -> path -> chunk id -> content hash: what the vectors must be of
        self._paths: dict[str, dict[str, dict[str, str]]] = {}
        self._deletes: dict[tuple[str, str], None] = {}  # (repo, path), in order
        self.embedded = 0

    # -- following the files ------------------------------------------------------------

    def file_changed(
        self, repo: str, path: str, chunks: Sequence[ChunkRecord], priority: float
    ) -> None:
        self.file_removed(repo, path)
        queue = self._queue.setdefault(repo, {})
        for chunk in chunks:
            queue[chunk.id] = _Queued(priority, chunk)
        self._paths.setdefault(repo, {})[path] = {c.id: c.content_hash for c in chunks}

    def file_removed(self, repo: str, path: str) -> None:
        ids = self._paths.get(repo, {}).pop(path, {})
        queue = self._queue.get(repo, {})
        for chunk_id in ids:
            queue.pop(chunk_id, None)
        if not ids:
            return
        if self.deferred_deletes:
            self._deletes[(repo, path)] = None
        else:
            self.store.delete_by_path(repo, path)

    def holds(self, repo: str, path: str, chunks: Sequence[ChunkRecord]) -> bool:
        """These chunks are the file's already (a scan re-reporting an unchanged file)."""
        held = self._paths.get(repo, {}).get(path)
        return held is not None and held == {c.id: c.content_hash for c in chunks}

    def prioritize(self, repo: str, importance: Mapping[str, float]) -> None:
        """New importance (a neighborhood snapshot): reorder what is still queued."""
        for queued in self._queue.get(repo, {}).values():
            queued.priority = importance.get(queued.chunk.path, queued.priority)

    def forget(self, repo: str) -> None:
        """Stop following a repository (another worker owns it now): its queue and files.
        Its pending deletes are tried once, now, while no one else writes it yet (the
        partition is revoked before it is assigned again); a store away leaves orphan
        vectors, which readers never return (no live chunk has them)."""
        self._queue.pop(repo, None)
        self._paths.pop(repo, None)
        for key in [key for key in self._deletes if key[0] == repo]:
            del self._deletes[key]
            try:
                self.store.delete_by_path(*key)
            except Exception as exc:
                if not transient(exc):
                    log.exception("vectors_delete_failed", repo=repo, path=key[1])
                    continue
                log.warning("vectors_delete_abandoned", repo=repo, path=key[1], error=repr(exc))

    def paths(self, repo: str) -> list[str]:
        """The files of a repository this fill follows, in path order."""
        return sorted(self._paths.get(repo, {}))

    def queued(self) -> int:
        """Chunks waiting to be embedded, in every repository."""
        return sum(len(queue) for queue in self._queue.values())

    def pending_deletes(self) -> list[tuple[str, str]]:
        return list(self._deletes)

    # -- filling ------------------------------------------------------------------------

    def next_batch(self) -> tuple[str, list[ChunkRecord]] | None:
        """The most important queued chunks of one repository (ties: repository, id)."""
        taken = self._take()
        return None if taken is None else (taken[0], [q.chunk for q in taken[1]])

    def _take(self) -> tuple[str, list[_Queued]] | None:
        best: tuple[float, str] | None = None
        for repo, queue in sorted(self._queue.items()):
            if queue:
                top = max(q.priority for q in queue.values())
                if best is None or top > best[0]:
                    best = (top, repo)
        if best is None:
            return None
        queue = self._queue[best[1]]
        # nsmallest is sorted()[:batch] (the keys are unique) in O(n log batch): this runs
        # on the event loop once a batch, over every queued chunk (12k for django).
        picked = heapq.nsmallest(
            self.batch, queue.items(), key=lambda item: (-item[1].priority, item[0])
        )
        taken = [queued for _, queued in picked]
        for queued in taken:
            del queue[queued.chunk.id]
        return best[1], taken

    def _put_back(self, repo: str, taken: Sequence[_Queued]) -> None:
        """Queue again what a failure left unstored, unless its file moved on meanwhile."""
        queue = self._queue.get(repo)
        for queued in taken:
            if queue is not None and self._live(repo, queued.chunk):
                queue.setdefault(queued.chunk.id, queued)

    def _live(self, repo: str, chunk: ChunkRecord) -> bool:
        return self._paths.get(repo, {}).get(chunk.path, {}).get(chunk.id) == chunk.content_hash

    def vectors(self, chunks: Sequence[ChunkRecord]) -> list[list[float]]:
        """The chunks' vectors (from the cache, or the model): run off the event loop."""
        matrix = self.embedder.embed_keyed(
            [c.content_hash for c in chunks], [embed_text(c) for c in chunks]
        )
        return [list(map(float, row)) for row in matrix]

    def store_vectors(
        self, repo: str, chunks: Sequence[ChunkRecord], vectors: Sequence[Sequence[float]]
    ) -> int:
        """On the event loop, where the files are followed: a chunk changed or gone while
        it was embedded is dropped. Returns how many points were stored."""
        points = [
            (c.id, vector, {"path": c.path, "content_hash": c.content_hash})
            for c, vector in zip(chunks, vectors, strict=True)
            if self._live(repo, c)
        ]
        self.store.upsert(repo, points)
        self.embedded += len(points)
        return len(points)

    def flush_deletes(self) -> None:
        """Drop the vectors of files changed or deleted since. A store away raises, and
        what is not done yet stays pending; a delete that fails otherwise (a bug) is
        logged with its traceback and dropped."""
        while self._deletes:
            repo, path = next(iter(self._deletes))
            try:
                self.store.delete_by_path(repo, path)
            except Exception as exc:
                if transient(exc):
                    raise
                log.exception("vectors_delete_failed", repo=repo, path=path)
            self._deletes.pop((repo, path), None)

    async def run(
        self,
        stop: asyncio.Event,
        idle_s: float = 0.2,
        on_batch: Callable[[int], None] | None = None,
    ) -> None:
        """Embed queued chunks until ``stop``; the model runs in a worker thread. A server
        away (store, endpoint) is waited for with capped backoff, its batch queued again;
        any other failure is a bug: logged with its traceback, the batch dropped."""
        delay = self.backoff.first_s
        while not stop.is_set():
            started = time.monotonic()
            try:
                stored = await self._step()
            except _BatchDropped:
                await _wait(stop, self.backoff.first_s)
                continue
            except Exception as exc:
                if not transient(exc):  # a bug in the loop itself: keep the evidence
                    log.exception("embedding_loop_failed")
                    await _wait(stop, self.backoff.first_s)
                    continue
                log.warning("embedding_retried", error=repr(exc), delay_s=delay)
                await _wait(stop, delay)
                delay = min(delay * 2, self.backoff.max_s)
                continue
            delay = self.backoff.first_s
            if stored is None:
                await _wait(stop, idle_s)
                continue
            if on_batch is not None:
                on_batch(stored)
            pause = self.pause_after(time.monotonic() - started)
            if pause > 0:
                await _wait(stop, pause)

    def pause_after(self, took_s: float) -> float:
        """How long to wait after a batch that took ``took_s``: none here (a worker's
        fill runs flat out); the query service's yields to its queries
        (`query.dense.DenseIndex`)."""
        return 0.0

    async def _step(self) -> int | None:
        self.flush_deletes()
        taken = self._take()
        if taken is None:
            return None
        repo, queued = taken
        chunks = [q.chunk for q in queued]
        try:
            vectors = await asyncio.to_thread(self.vectors, chunks)
            return self.store_vectors(repo, chunks, vectors)
        except Exception as exc:
            if transient(exc):
                self._put_back(repo, queued)
                raise
            # an embedder or store bug: keep the evidence, keep the rest going
            log.exception("embedding_failed", repo=repo, chunks=len(chunks))
            raise _BatchDropped from exc

    def fill(self) -> int:
        """Embed everything queued, here and now (tests)."""
        done = 0
        self.flush_deletes()
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

    def coverage(self, repo: str) -> tuple[int, int]:
        """(chunks with vectors, chunks known) of a repository."""
        known = sum(len(ids) for ids in self._paths.get(repo, {}).values())
        return self.store.count(repo), known


class _BatchDropped(Exception):
    """A batch failed for a reason other than a server away, and was logged."""


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return
