"""A worker's repositories restored from their state snapshots (issue 16).

`SnapshotIndexes` is the pipeline's new index of a repository, restored from its
snapshot, the data dir's file or the state-snapshots topic's, whichever is newer and
continued by the log (the pipeline folds the log's deltas after it, if any), and its
last neighborhoods, which `NeighborhoodsWithState` hands the neighborhood stream.
`CheckedDeltaLog` reads a partition's snapshots before its deltas, so that the deltas
they cover are skipped undecoded, and reads the partition again in full when the
snapshot it skipped to is refused: the log then decides. The snapshots are written by
processors/state_keeper.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

import structlog

from processors.indexer import RepoIndex
from stores.delta_log import PartitionRead, SkippingDeltaLog
from stores.delta_seek import Seek, plan
from stores.deltas import GraphDelta
from stores.neighborhoods import NeighborhoodSnapshot
from stores.repo_state import RepoState
from stores.snapshot_log import SnapshotLog, keep_latest
from stores.state_files import StateFiles
from stores.state_snapshot import SnapshotHeader, StateSnapshot, against_log
from stores.state_topic import Offered, StateTopic, decode_offered

log = structlog.get_logger(__name__)


class SnapshotIndexes:
    """The pipeline's ``new_index``: a repository's index restored from its snapshot when
    there is one to trust, else empty; its last neighborhoods wait for the neighborhood
    stream's restore (`NeighborhoodsWithState`). Only repositories that have events are
    loaded, so the snapshots of other deployments on the same data dir stay on disk.

    A snapshot comes from the data dir's file or from the state-snapshots topic
    (``topic``, read by `offer` for a partition): the newer is tried first. `judge`
    weighs each against the partition's log (`against_log`): one of another history is
    refused (logged ``state_snapshot_rejected``, ``other_history``), and the other, or
    the log alone, rebuilds the repository."""

    def __init__(
        self,
        files: StateFiles,
        restore: Callable[[StateSnapshot], RepoIndex] = RepoIndex.from_snapshot,
        empty: Callable[[str], RepoIndex] = RepoIndex,
        *,
        topic: StateTopic | None = None,
        partition_of: Callable[[str], int] = lambda repo: 0,
    ) -> None:
        self._files = files
        self._restore = restore
        self._empty = empty
        self._topic = topic
        self._partition_of = partition_of
        self._judged: dict[str, StateSnapshot | None] = {}
        self._offered: dict[str, Offered] = {}
        self._candidates: dict[str, list[StateSnapshot]] = {}
        self._from_topic: dict[str, StateSnapshot] = {}
        self.on_topic: dict[str, int] = {}  # repo -> the delta its topic snapshot covers
        self.restored_from: dict[str, int] = {}  # repo -> the snapshot's delta it started at
        # (repo, delta) -> where a snapshot of it said its delta begins on the partition
        self._anchored: dict[tuple[str, int], int] = {}
        self.seeks: dict[int, Seek | None] = {}  # partition -> where `offer` says to start
        self.neighborhoods: dict[str, NeighborhoodSnapshot] = {}

    async def offer(self, partition: int) -> dict[str, int]:
        """Read the partition's snapshots on the topic (headers checked, bodies kept for
        `judge`); what each repository's newest snapshot, the file's or the topic's,
        covers (repo -> delta): the log's deltas before it need not be decoded."""
        covered: dict[str, int] = {}
        newest: dict[str, SnapshotHeader] = {}
        unknown = False  # a snapshot this reader cannot take: its repository unknown
        if self._topic is not None:
            for repo, offered in (await self._topic.latest([partition])).items():
                if self._partition_of(repo) != partition:
                    continue  # a message on the wrong partition: another deployment's
                self._offered[repo] = offered
                self.on_topic[repo] = covered[repo] = offered.header.seq
                newest[repo] = self._anchor(offered.header)
            unknown = partition in self._topic.troubled
        for repo in self._files.repos():
            if self._partition_of(repo) == partition:
                header = self._files.header(repo)
                if header is None:
                    unknown = True
                    continue
                self._anchor(header)
                if header.seq >= covered.get(repo, 0):
                    newest[repo] = header
                covered[repo] = max(covered.get(repo, 0), header.seq)
        self.seeks[partition] = None if unknown else plan(newest.values())
        return covered

    def _anchor(self, header: SnapshotHeader) -> SnapshotHeader:
        if header.offset is not None:
            self._anchored[(header.repo, header.seq)] = header.offset
        return header

    def judge(self, repo: str, deltas: Sequence[GraphDelta], skipped_to: int = 0) -> int:
        """Keep for `__call__` the newest of the repository's snapshots that ``deltas`` (its
        deltas in the log, those before ``skipped_to`` and it left out) continue; the
        delta it covers, 0 for none."""
        candidates = self._candidates.get(repo)
        if candidates is None:
            candidates = self._candidates[repo] = self._load(repo)
        self._judged[repo] = None
        for snapshot in list(candidates):
            if snapshot.seq <= skipped_to:
                continue  # its own delta was left out: judged on the log read in full
            # Final: what was left out is numbered before the snapshot's own delta, so the
            # whole log would say the same.
            reason = against_log(snapshot, deltas, skipped_to)
            if reason is None:
                self._judged[repo] = snapshot
                return snapshot.seq
            candidates.remove(snapshot)
            if self._from_topic.get(repo) is snapshot:
                self.on_topic[repo] = 0
            log.warning("state_snapshot_rejected", repo=repo, reason="other_history", detail=reason)
        return 0

    def _load(self, repo: str) -> list[StateSnapshot]:
        """The repository's snapshots that decode, the newest first (the topic's first
        of two of one delta)."""
        found = []
        offered = self._offered.pop(repo, None)
        if offered is not None:
            snapshot = decode_offered(offered)
            if snapshot is None:
                self.on_topic[repo] = 0  # refused: what the topic holds covers nothing
            else:
                self._from_topic[repo] = snapshot
                found.append(snapshot)
        on_disk = self._files.load(repo)
        if on_disk is not None and all(s.seq != on_disk.seq for s in found):
            found.append(on_disk)
        return sorted(found, key=lambda s: -s.seq)

    def __call__(self, repo: str) -> RepoIndex:
        self._candidates.pop(repo, None)
        self._from_topic.pop(repo, None)
        if repo in self._judged:
            snapshot = self._judged.pop(repo)
        else:
            candidates = self._load(repo)
            snapshot = candidates[0] if candidates else None
        if snapshot is None:
            return self._empty(repo)
        if snapshot.neighborhoods is not None:
            self.neighborhoods[repo] = snapshot.neighborhoods
        index = self._restore(snapshot)
        self.restored_from[repo] = snapshot.seq
        log.info("index_restored_from_snapshot", repo=repo, seq=snapshot.seq)
        return index

    def offered_on(self, partition: int) -> set[str]:
        """The repositories of the partition whose topic snapshot `offer` read."""
        return {repo for repo in self.on_topic if self._partition_of(repo) == partition}

    def held_offset(self, state: RepoState, publishing: bool) -> int | None:
        """Where the delta of the snapshot `held` names begins on the partition, when a
        header said so (None: unknown, or no snapshot held)."""
        held = self.held(state, publishing)
        return self._anchored.get((state.repo, held)) if held else None

    def held(self, state: RepoState, publishing: bool) -> int:
        """What the snapshots kept of a restored repository cover: the one it started from
        (0: none), and no more than the topic's when publishing (0 when the topic's was
        refused: published again, so that readers find one they can trust)."""
        held = self.restored_from.get(state.repo, 0)
        return min(held, self.on_topic.get(state.repo, 0)) if publishing else held


class CheckedDeltaLog:
    """A DeltaLog whose partition reads first offer the partition's snapshots
    (`SnapshotIndexes.offer`), leave out undecoded the deltas they cover, and judge the
    snapshots of the repositories the partition holds deltas or snapshots of
    (`SnapshotIndexes.judge`), before the pipeline restores them. A repository whose
    newest snapshot is refused is judged again on the partition read in full: the log
    then decides, or an older snapshot it continues."""

    def __init__(self, inner: SkippingDeltaLog, indexes: SnapshotIndexes) -> None:
        self._inner = inner
        self._indexes = indexes
        self.fetched: dict[int, int] = {}  # partition -> messages its last read fetched

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        covered = await self._indexes.offer(partition)
        seek = self._indexes.seeks.get(partition)
        read = await self._inner.read_partition_after(partition, covered, seek)
        self.fetched[partition] = read.fetched
        again = await self._judge(partition, read, covered)
        if not again:
            return read.deltas
        log.warning("delta_log_read_again", partition=partition, repos=again)
        whole = PartitionRead(await self._inner.read_partition(partition))
        await self._judge(partition, whole, covered, only=set(again))
        return whole.deltas

    async def _judge(
        self,
        partition: int,
        read: PartitionRead,
        covered: Mapping[str, int],
        only: set[str] | None = None,
    ) -> list[str]:
        """Judge each repository; those whose accepted snapshot is not the one the read
        skipped up to (so the log's deltas in between were left out)."""
        by_repo: dict[str, list[GraphDelta]] = {}
        for delta in read.deltas:
            by_repo.setdefault(delta.repo, []).append(delta)
        again = []
        # The topic's repositories without deltas too (a retention that dropped them);
        # a file alone waits for its repository's first event (`__call__`).
        for repo in sorted(only or set(by_repo) | self._indexes.offered_on(partition)):
            skipped = read.skipped.get(repo, 0)
            # Off the loop: decoding a large repository's snapshot takes a second or two.
            taken = await asyncio.to_thread(
                self._indexes.judge, repo, by_repo.get(repo, []), skipped
            )
            if skipped and taken != covered.get(repo):
                again.append(repo)
        return again


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
