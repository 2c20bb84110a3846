"""Reclustering driven by graph deltas, debounced per repository.

The worker that owns a repository's partition folds each delta it publishes into the
repository's file graph (`FileGraphState`). A delta that changes files, keywords or
file-to-file arcs makes the repository due once it has been quiet for ``debounce_s``
(or waited ``max_wait_s`` under a steady stream of edits), and never in the middle of a
scan, whose edges arrive at its barrier. A due repository is reclustered warm from its
last snapshot and published, with what changed (possibly nothing but the numbers: a
reader then knows the snapshot is current). After a restart, a repository is
reclustered once and published only if its picture differs from the last snapshot.
Pure: time is passed in, I/O is the caller's (neighborhood_stream.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from processors.neighborhoods.recluster import ReclusterSettings, recluster, same_picture
from stores.deltas import GraphDelta
from stores.neighborhoods import NeighborhoodSnapshot
from stores.projections.graph_state import FileGraphState
from stores.repo_state import RepoState


@dataclass(frozen=True, slots=True)
class Job:
    """One recluster, taken on the event loop and computed anywhere: ``graph`` is a copy
    of the repository's file graph, so deltas folded meanwhile do not touch it."""

    repo: str
    graph: FileGraphState
    previous: NeighborhoodSnapshot | None
    confirm: bool  # after a restart: publish only a picture that differs
    owner: FileGraphState  # the live graph, to tell whether the repository is still ours
    now: float


@dataclass(frozen=True, slots=True)
class Debounce:
    quiet_s: float = 0.5
    max_wait_s: float = 5.0


class Reclusterer:
    def __init__(
        self, settings: ReclusterSettings | None = None, debounce: Debounce | None = None
    ) -> None:
        self.settings = settings or ReclusterSettings()
        self.debounce = debounce or Debounce()
        self.graphs: dict[str, FileGraphState] = {}
        self.snapshots: dict[str, NeighborhoodSnapshot] = {}
        self._pending: dict[str, tuple[float, float]] = {}  # repo -> (first, last) change
        self._unconfirmed: set[str] = set()  # restored, no change observed since

    def restore(
        self,
        states: Iterable[RepoState],
        snapshots: Mapping[str, NeighborhoodSnapshot],
        now: float,
    ) -> None:
        """Take over repositories: their graphs as restored, their last snapshots. Every
        one whose snapshot predates its graph is due (once, warm: a restart republishes
        nothing when nothing moved)."""
        for state in states:
            graph = self.graphs[state.repo] = FileGraphState.of(state)
            snapshot = snapshots.get(state.repo)
            if snapshot is not None:
                self.snapshots[state.repo] = snapshot
            if snapshot is None or snapshot.graph_seq < graph.seq:
                self._pending[state.repo] = (now - self.debounce.max_wait_s, now)
                self._unconfirmed.add(state.repo)

    def forget(self, repos: Iterable[str]) -> None:
        for repo in repos:
            for table in (self.graphs, self.snapshots, self._pending):
                table.pop(repo, None)  # type: ignore[attr-defined]
            self._unconfirmed.discard(repo)

    def observe(self, delta: GraphDelta, now: float) -> None:
        graph = self.graphs.get(delta.repo)
        if graph is None:
            if delta.seq != 1:
                return  # not ours until restored (a partition being taken over)
            graph = self.graphs[delta.repo] = FileGraphState(delta.repo)
        if graph.apply(delta) and graph.changed_seq == delta.seq:
            # A scan's wait starts over with each file: the longest wait counts from
            # the barrier, where the scan's edges arrive.
            first = now if graph.scanning else self._pending.get(delta.repo, (now, now))[0]
            self._pending[delta.repo] = (first, now)
            self._unconfirmed.discard(delta.repo)

    def due(self, now: float) -> list[str]:
        """Repositories to recluster now, in name order."""
        ready = []
        for repo, (first, last) in sorted(self._pending.items()):
            if not self.graphs[repo].settled:
                continue
            if now - last >= self.debounce.quiet_s or now - first >= self.debounce.max_wait_s:
                ready.append(repo)
        return ready

    def run(self, repo: str, now: float) -> NeighborhoodSnapshot | None:
        """Recluster ``repo``; the snapshot to publish, or None after a restart when the
        picture is the last snapshot's. Call `published` once it is acknowledged."""
        job = self.take(repo, now)
        return self.settle(job, self.compute(job))

    def take(self, repo: str, now: float) -> Job:
        """Start reclustering ``repo``: no longer due, its graph as it is now."""
        self._pending.pop(repo, None)
        confirm = repo in self._unconfirmed
        self._unconfirmed.discard(repo)
        graph = self.graphs[repo]
        copy = graph.copy()
        return Job(repo, copy, self.snapshots.get(repo), confirm, graph, now)

    def compute(self, job: Job) -> NeighborhoodSnapshot:
        """The new snapshot; reads nothing but ``job``, so it may run off the event loop."""
        return recluster(job.graph, job.previous, self.settings, now=job.now)

    def owns(self, job: Job) -> bool:
        """Whether ``job``'s repository is still this worker's (not forgotten meanwhile)."""
        return self.graphs.get(job.repo) is job.owner

    def settle(self, job: Job, snapshot: NeighborhoodSnapshot) -> NeighborhoodSnapshot | None:
        """The snapshot to publish: None when the repository is no longer this worker's,
        or, after a restart, when the picture is the last snapshot's."""
        if not self.owns(job):
            return None
        if job.confirm and job.previous is not None and same_picture(job.previous, snapshot):
            return None
        return snapshot

    def published(self, snapshot: NeighborhoodSnapshot) -> None:
        self.snapshots[snapshot.repo] = snapshot
