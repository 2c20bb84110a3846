"""The stream side of neighborhoods: follow the worker's deltas, recluster, publish.

`NeighborhoodStream` is the pipeline's DeltaObserver: it folds every acknowledged
delta into the `Reclusterer` of the repositories this worker owns, continues their
snapshots from the neighborhoods topic when a partition is restored, and on each
``tick`` (a faust timer) reclusters the repositories that are due and publishes their
snapshots, retrying a broker that is away. A recluster that fails is a bug: logged with
its traceback, the repository stays as it was and is tried again at its next change.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import structlog

from processors.neighborhoods.reclusterer import Reclusterer
from processors.pipeline import RetryPolicy, with_retry
from stores.deltas import GraphDelta
from stores.metrics import RECLUSTER_FAILURES, RECLUSTER_SECONDS
from stores.neighborhoods import NeighborhoodSnapshot
from stores.repo_state import RepoState
from stores.snapshot_log import SnapshotLog

log = structlog.get_logger(__name__)


class SnapshotSink(Protocol):
    async def publish_snapshot(self, snapshot: NeighborhoodSnapshot) -> None:
        """Send keyed by repository; return once the broker acknowledged it."""
        ...


class InMemorySnapshotSink:
    """A SnapshotSink that appends to a list: the test double."""

    def __init__(self) -> None:
        self.snapshots: list[NeighborhoodSnapshot] = []

    async def publish_snapshot(self, snapshot: NeighborhoodSnapshot) -> None:
        self.snapshots.append(snapshot)


class NeighborhoodStream:
    def __init__(
        self,
        reclusterer: Reclusterer,
        snapshot_log: SnapshotLog,
        sink: SnapshotSink,
        *,
        clock: Callable[[], float] = time.time,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.reclusterer = reclusterer
        self._log = snapshot_log
        self._sink = sink
        self._clock = clock
        self._retry = retry or RetryPolicy()
        self.published = 0
        self.failed = 0
        self._ticking = False

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        latest = await self._log.latest(partition)
        self.reclusterer.restore(states, latest, self._clock())
        log.info("neighborhoods_restored", partition=partition, snapshots=len(latest))

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        now = self._clock()
        for delta in deltas:
            self.reclusterer.observe(delta, now)

    def forget(self, repos: Iterable[str]) -> None:
        self.reclusterer.forget(repos)

    async def tick(self) -> None:
        """Recluster and publish every repository that is due (one tick at a time)."""
        if self._ticking:
            return
        self._ticking = True
        try:
            for repo in self.reclusterer.due(self._clock()):
                with structlog.contextvars.bound_contextvars(repo=repo):
                    await self._recluster(repo)
        finally:
            self._ticking = False

    async def _recluster(self, repo: str) -> None:
        job = self.reclusterer.take(repo, self._clock())
        try:
            with RECLUSTER_SECONDS.time():
                # Off the event loop (up to ~0.3 s on sympy): the worker keeps consuming,
                # heartbeating and folding deltas into the live graph meanwhile.
                computed = await asyncio.to_thread(self.reclusterer.compute, job)
        except Exception:  # a bug: keep the worker going, keep the evidence
            self.failed += 1
            RECLUSTER_FAILURES.inc()
            log.exception("recluster_failed")
            return
        if not self.reclusterer.owns(job):
            log.info("neighborhoods_dropped", reason="repository moved to another worker")
            return
        snapshot = self.reclusterer.settle(job, computed)
        if snapshot is None:
            log.debug("neighborhoods_unchanged")
            return
        send = functools.partial(self._sink.publish_snapshot, snapshot)
        await with_retry(send, log, self._retry)
        self.reclusterer.published(snapshot)
        self.published += 1
        log.info(
            "neighborhoods_published",
            seq=snapshot.seq,
            graph_seq=snapshot.graph_seq,
            neighborhoods=len(snapshot.neighborhoods),
            files=len(snapshot.files),
            changes=len(snapshot.changes),
            modularity=snapshot.modularity,
            recluster_ms=snapshot.recluster_ms,
        )
