"""The worker's state snapshots: written when a repository goes quiet, read at restore.

`StateKeeper` is a DeltaObserver of the pipeline (issue 16). It notes the last delta the
broker acknowledged per repository and, on ``tick`` (a faust timer), writes the snapshot
of every repository that changed, has been quiet ``quiet_s`` (a scan or an edit burst
is over) and was last written at least ``every_s`` ago: so a repository under constant
edits costs one snapshot per ``every_s``, and an idle one none. ``flush`` writes the
rest at a clean stop. Only a state whose every delta was acknowledged is written (the
pipeline applies a delta before the broker confirms it): a snapshot never holds a
change the log could lose. One write runs at a time (a stop's flush waits for a tick's
write), off the loop (`stores.state_files.write_off_loop`), and a stop's flush is
bounded (``budget_s``).

`SnapshotIndexes` is the other half: the pipeline's new index of a repository, restored
from its snapshot (the pipeline folds the log's deltas after it, if any), and its last
neighborhoods, which `NeighborhoodsWithState` hands the neighborhood stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

import structlog

from processors.indexer import RepoIndex
from stores.delta_log import DeltaLog
from stores.deltas import GraphDelta
from stores.neighborhoods import NeighborhoodSnapshot
from stores.repo_state import RepoState
from stores.snapshot_log import SnapshotLog, keep_latest
from stores.state_files import STOP_BUDGET_S, StateFiles, flush_within, write_off_loop
from stores.state_snapshot import StateSnapshot, against_log, capture

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class KeepPolicy:
    quiet_s: float = 1.0
    """A repository is written once no delta of it came for this long."""
    every_s: float = 30.0
    """... and at most this often (encoding django's state takes ~1 s on the loop)."""


@dataclass(slots=True)
class _Tracked:
    acked: int = 0  # the last delta the broker acknowledged
    last_delta_at: float = 0.0
    written: int = 0  # the delta the file on disk covers
    written_at: float = float("-inf")


@dataclass
class StateKeeper:
    files: StateFiles
    state_of: Callable[[str], RepoState | None]
    neighborhoods_of: Callable[[str], NeighborhoodSnapshot | None]
    policy: KeepPolicy = KeepPolicy()
    clock: Callable[[], float] = time.monotonic
    _tracked: dict[str, _Tracked] = field(default_factory=dict)
    _writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    written: int = 0

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        for state in states:  # as restored: written again at its next change
            self._tracked.setdefault(state.repo, _Tracked(acked=state.seq, written=state.seq))

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        now = self.clock()
        for delta in deltas:
            tracked = self._tracked.setdefault(delta.repo, _Tracked())
            tracked.acked = max(tracked.acked, delta.seq)
            tracked.last_delta_at = now

    def forget(self, repos: Iterable[str]) -> None:
        for repo in repos:  # another worker owns it now; its file stays for a restart
            self._tracked.pop(repo, None)

    def due(self, now: float) -> list[str]:
        policy = self.policy
        return sorted(
            repo
            for repo, t in self._tracked.items()
            if t.acked > t.written
            and now - t.last_delta_at >= policy.quiet_s
            and now - t.written_at >= policy.every_s
        )

    async def tick(self) -> None:
        """Write the snapshots that are due (skipped while a write is under way)."""
        if self._writing.locked():
            return
        async with self._writing:
            for repo in self.due(self.clock()):
                await self._write(repo)

    async def flush(self, budget_s: float = STOP_BUDGET_S) -> bool:
        """At a clean stop: every repository changed since its last snapshot, after the
        write under way; False when ``budget_s`` ran out first (logged)."""
        return await flush_within(self._flush(), budget_s, "state_snapshot")

    async def _flush(self) -> None:
        async with self._writing:
            for repo in sorted(r for r, t in self._tracked.items() if t.acked > t.written):
                await self._write(repo)

    async def _write(self, repo: str) -> None:
        tracked, state = self._tracked.get(repo), self.state_of(repo)
        if tracked is None or state is None or state.seq < 1:
            return
        if state.seq != tracked.acked:
            log.debug("state_snapshot_deferred", repo=repo, seq=state.seq, acked=tracked.acked)
            return  # deltas in flight: the next tick, once they are acknowledged
        started = time.perf_counter()
        # Captured here, on the loop, where nothing changes the state meanwhile (records
        # are frozen, so the capture holds them as they are); encoded (2.5 s for django)
        # and written (fsynced) in a thread, so that the worker keeps consuming.
        snapshot = capture(state, self.neighborhoods_of(repo), time.time())
        captured = time.perf_counter() - started
        seq = state.seq
        size = await write_off_loop(lambda: self.files.write(snapshot))
        tracked.written, tracked.written_at = seq, self.clock()
        self.written += 1
        log.info(
            "state_snapshot_written",
            repo=repo,
            seq=seq,
            files=len(state.files),
            bytes=size,
            capture_s=round(captured, 3),
            seconds=round(time.perf_counter() - started, 3),
        )


class SnapshotIndexes:
    """The pipeline's ``new_index``: a repository's index restored from its snapshot when
    there is one to trust, else empty; its last neighborhoods wait for the neighborhood
    stream's restore (`NeighborhoodsWithState`). Only repositories that have events are
    loaded, so the snapshots of other deployments on the same data dir stay on disk.

    `CheckedDeltaLog` judges each snapshot against the partition's log first (`judge`):
    one of another history is refused (logged ``state_snapshot_rejected``) and the log
    alone rebuilds the repository."""

    def __init__(
        self,
        files: StateFiles,
        restore: Callable[[StateSnapshot], RepoIndex] = RepoIndex.from_snapshot,
        empty: Callable[[str], RepoIndex] = RepoIndex,
    ) -> None:
        self._files = files
        self._restore = restore
        self._empty = empty
        self._judged: dict[str, StateSnapshot | None] = {}
        self.neighborhoods: dict[str, NeighborhoodSnapshot] = {}

    def judge(self, repo: str, deltas: Sequence[GraphDelta]) -> None:
        """Load the repository's snapshot and keep it for `__call__` if ``deltas`` (its
        deltas in the log) continue it (`against_log`)."""
        snapshot = self._files.load(repo)
        reason = None if snapshot is None else against_log(snapshot, deltas)
        if reason is not None:
            log.warning("state_snapshot_rejected", repo=repo, reason="other_history", detail=reason)
            snapshot = None
        self._judged[repo] = snapshot

    def __call__(self, repo: str) -> RepoIndex:
        snapshot = self._judged.pop(repo) if repo in self._judged else self._files.load(repo)
        if snapshot is None:
            return self._empty(repo)
        if snapshot.neighborhoods is not None:
            self.neighborhoods[repo] = snapshot.neighborhoods
        index = self._restore(snapshot)
        log.info("index_restored_from_snapshot", repo=repo, seq=snapshot.seq)
        return index


class CheckedDeltaLog:
    """A DeltaLog whose partition reads also judge the snapshots of the repositories the
    partition holds deltas of (`SnapshotIndexes.judge`), before the pipeline restores
    them."""

    def __init__(self, inner: DeltaLog, indexes: SnapshotIndexes) -> None:
        self._inner = inner
        self._indexes = indexes

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        deltas = await self._inner.read_partition(partition)
        by_repo: dict[str, list[GraphDelta]] = {}
        for delta in deltas:
            by_repo.setdefault(delta.repo, []).append(delta)
        for repo in sorted(by_repo):
            # Off the loop: decoding a large repository's snapshot takes a second or two.
            await asyncio.to_thread(self._indexes.judge, repo, by_repo[repo])
        return deltas


class NeighborhoodsWithState:
    """A SnapshotLog: the topic's last neighborhoods of a partition, or the ones the state
    snapshots kept when they are newer (an embedded broker restarted empty). Those are
    published again (``republish``) so that every reader of the topic has them too."""

    def __init__(
        self,
        topic: SnapshotLog,
        indexes: SnapshotIndexes,
        partition_of: Callable[[str], int],
        republish: Callable[[NeighborhoodSnapshot], Awaitable[None]],
    ) -> None:
        self._topic = topic
        self._indexes = indexes
        self._partition_of = partition_of
        self._republish = republish

    async def latest(self, partition: int) -> dict[str, NeighborhoodSnapshot]:
        found = await self._topic.latest(partition)
        kept = self._indexes.neighborhoods
        for repo in sorted(r for r in kept if self._partition_of(r) == partition):
            snapshot = kept.pop(repo)
            held = found.get(snapshot.repo)
            if held is None or snapshot.seq > held.seq:
                keep_latest(found, snapshot)
                await self._republish(snapshot)
                log.info("neighborhoods_republished", repo=snapshot.repo, seq=snapshot.seq)
        return found
