"""The stream side of dense retrieval: the worker embeds the repositories it owns.

With ``GAZETTEER_EMBED_IN=worker``, `EmbeddingStream` is a DeltaObserver of the pipeline
beside the neighborhood stream: every chunk is embedded once per deployment, by the one
worker that owns its repository, into the vector store the query replicas share (issue
5: with M replicas each embedding everything, the same idempotent upserts were done M
times). It queues the chunks of the repositories a restored partition brings and of
every acknowledged delta (an unchanged file, re-reported by a scan, is not queued
again), has a changed or deleted file's old vectors dropped, stops following the
repositories another worker took over, and orders its queue by the importance of each
repository's latest neighborhood snapshot: the one restored, then each one published
(`PrioritizingSink`). ``run`` embeds off the event loop (`DenseFill.run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence

import structlog

from processors.neighborhood_stream import SnapshotSink
from stores.deltas import GraphDelta
from stores.metrics import WORKER_EMBEDDED_CHUNKS, WORKER_EMBEDDING_QUEUE
from stores.neighborhoods import NeighborhoodSnapshot
from stores.records import FileRecord
from stores.repo_state import RepoState
from stores.text.dense_fill import DenseFill

log = structlog.get_logger(__name__)


def importance_of(snapshot: NeighborhoodSnapshot | None) -> dict[str, float]:
    return {} if snapshot is None else snapshot.importance()


class EmbeddingStream:
    """``latest``: a repository's latest neighborhood snapshot this worker knows (the
    reclusterer's, restored before this stream is: see `DeltaObservers`)."""

    def __init__(
        self,
        fill: DenseFill,
        *,
        latest: Callable[[str], NeighborhoodSnapshot | None] = lambda repo: None,
    ) -> None:
        self.fill = fill
        self._latest = latest
        self._importance: dict[str, dict[str, float]] = {}  # followed repo -> path -> importance

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        for state in states:
            self._importance[state.repo] = importance_of(self._latest(state.repo))
            held = set(self.fill.paths(state.repo))
            for path in sorted(held.difference(state.files)):
                self.fill.file_removed(state.repo, path)
            for path in sorted(state.files):
                self._file(state.repo, state.files[path])
        self._report()
        log.info(
            "embedding_restored",
            partition=partition,
            repos=len(states),
            queued=self.fill.queued(),
        )

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        for delta in deltas:
            if delta.repo not in self._importance:
                if delta.seq != 1:
                    continue  # not ours until restored (a partition being taken over)
                self._importance[delta.repo] = {}
            for path in delta.files_removed:
                self.fill.file_removed(delta.repo, path)
            for record in delta.files_upserted:
                self._file(delta.repo, record)
        self._report()

    def forget(self, repos: Iterable[str]) -> None:
        for repo in repos:
            self._importance.pop(repo, None)
            self.fill.forget(repo)
        self._report()

    def prioritized(self, snapshot: NeighborhoodSnapshot) -> None:
        """A snapshot was published: what is still queued follows its importance."""
        if snapshot.repo not in self._importance:
            return
        importance = self._importance[snapshot.repo] = importance_of(snapshot)
        self.fill.prioritize(snapshot.repo, importance)

    def importance(self, repo: str) -> Mapping[str, float]:
        return self._importance.get(repo, {})

    async def run(self, stop: asyncio.Event, idle_s: float = 0.2) -> None:
        """Embed until ``stop`` (the model in a worker thread)."""
        await self.fill.run(stop, idle_s, on_batch=self._stored)

    def _file(self, repo: str, record: FileRecord) -> None:
        if not self.fill.holds(repo, record.path, record.chunks):
            priority = self._importance[repo].get(record.path, 0.0)
            self.fill.file_changed(repo, record.path, record.chunks, priority)

    def _stored(self, count: int) -> None:
        WORKER_EMBEDDED_CHUNKS.inc(count)
        self._report()

    def _report(self) -> None:
        WORKER_EMBEDDING_QUEUE.set(self.fill.queued())


class PrioritizingSink:
    """A SnapshotSink that publishes, then reorders the embedding queue by the snapshot."""

    def __init__(self, sink: SnapshotSink, stream: EmbeddingStream) -> None:
        self._sink = sink
        self._stream = stream

    async def publish_snapshot(self, snapshot: NeighborhoodSnapshot) -> None:
        await self._sink.publish_snapshot(snapshot)
        self._stream.prioritized(snapshot)
