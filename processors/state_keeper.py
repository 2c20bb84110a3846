"""The worker's state snapshots: written when a repository goes quiet, read at restore.

`StateKeeper` is a DeltaObserver of the pipeline (issue 16). It notes the last delta the
broker acknowledged per repository and, on ``tick`` (a faust timer), writes the snapshot
of every repository that changed, has been quiet ``quiet_s`` (a scan or an edit burst
is over) and was last written at least ``every_s`` ago: so a repository edited in bursts
costs at most one snapshot per ``every_s``, and an idle one none; one never quiet (edited
more often than every ``quiet_s``) is written once its first change since the last
snapshot is ``busy_every_s`` old. ``flush`` writes the
rest at a clean stop. Only a state whose every delta was acknowledged is written (the
pipeline applies a delta before the broker confirms it): a snapshot never holds a
change the log could lose. One write runs at a time (a stop's flush waits for a tick's
write), off the loop (`stores.state_files.write_off_loop`), and a stop's flush is
bounded (``budget_s``). Given ``publish``, each snapshot written is also published on
the state-snapshots topic (stores/state_topic.py), the same bytes, so that a replica or
a worker on another machine starts from it too.

`SnapshotIndexes` is the other half: the pipeline's new index of a repository, restored
from its snapshot, the file's or the topic's, whichever is newer and continued by the
log (the pipeline folds the log's deltas after it, if any), and its last neighborhoods,
which `NeighborhoodsWithState` hands the neighborhood stream. `CheckedDeltaLog` reads a
partition's snapshots before its deltas, so that the deltas they cover are skipped
undecoded.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from processors.indexer import RepoIndex
from stores.delta_log import PartitionRead, SkippingDeltaLog
from stores.deltas import GraphDelta
from stores.neighborhoods import NeighborhoodSnapshot
from stores.repo_state import RepoState
from stores.snapshot_log import SnapshotLog, keep_latest
from stores.state_files import STOP_BUDGET_S, StateFiles, flush_within, write_off_loop
from stores.state_snapshot import StateSnapshot, against_log, capture, encode
from stores.state_topic import MAX_SNAPSHOT_BYTES, Offered, StateTopic, decode_offered

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class KeepPolicy:
    quiet_s: float = 1.0
    """A repository is written once no delta of it came for this long."""
    every_s: float = 30.0
    """... and at most this often (encoding django's state takes ~1 s on the loop)."""
    busy_every_s: float = 300.0
    """A repository that changes more often than ``quiet_s`` is never quiet: it is
    written anyway once its last snapshot is this old (and its deltas acknowledged), so
    that what the log holds beyond the snapshots stays bounded in time."""


@dataclass(slots=True)
class _Tracked:
    acked: int = 0  # the last delta the broker acknowledged
    last_delta_at: float = 0.0
    written: int = 0  # the delta the file on disk (and the topic) covers
    written_at: float = float("-inf")
    first_unwritten_at: float = float("inf")  # when the first delta since it came


Publish = Callable[[str, bytes], Awaitable[None]]
"""Send a repository's encoded snapshot on the state-snapshots topic, keyed by it, and
return once the broker acknowledged it."""


@dataclass
class StateKeeper:
    files: StateFiles
    state_of: Callable[[str], RepoState | None]
    neighborhoods_of: Callable[[str], NeighborhoodSnapshot | None]
    policy: KeepPolicy = KeepPolicy()
    clock: Callable[[], float] = time.monotonic
    publish: Publish | None = None
    held_of: Callable[[RepoState], int] = lambda state: state.seq
    """The delta a restored repository's snapshot already covers where it is kept (the
    file, and the topic when publishing): less than its state's, it is written again."""
    _tracked: dict[str, _Tracked] = field(default_factory=dict)
    _writing: asyncio.Lock = field(default_factory=asyncio.Lock)
    written: int = 0
    published: int = 0

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        for state in states:  # as restored: written again at its next change
            held = min(state.seq, self.held_of(state))
            self._tracked.setdefault(state.repo, _Tracked(acked=state.seq, written=held))

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        now = self.clock()
        for delta in deltas:
            tracked = self._tracked.setdefault(delta.repo, _Tracked())
            if tracked.acked <= tracked.written:
                tracked.first_unwritten_at = now
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
            and now - t.written_at >= policy.every_s
            and (
                now - t.last_delta_at >= policy.quiet_s
                or now - max(t.written_at, t.first_unwritten_at) >= policy.busy_every_s
            )
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
        raw = await write_off_loop(lambda: self._encode_and_write(snapshot))
        published = await self._publish(repo, seq, raw)
        if published is None:
            return  # written, not published: both again at the next tick
        tracked.written, tracked.written_at = seq, self.clock()
        if tracked.acked <= seq:
            tracked.first_unwritten_at = float("inf")
        self.written += 1
        log.info(
            "state_snapshot_written",
            repo=repo,
            seq=seq,
            files=len(state.files),
            bytes=len(raw),
            published=published,
            capture_s=round(captured, 3),
            seconds=round(time.perf_counter() - started, 3),
        )

    def _encode_and_write(self, snapshot: StateSnapshot) -> bytes:
        raw = encode(snapshot)
        self.files.write_bytes(snapshot.repo, raw)
        return raw

    async def _publish(self, repo: str, seq: int, raw: bytes) -> bool | None:
        """Whether the snapshot went to the topic; None: it failed (the broker away, or a
        stop's last flush after the producer stopped), to be tried again."""
        if self.publish is None:
            return False
        if len(raw) > MAX_SNAPSHOT_BYTES:
            # Readers elsewhere fold this repository's log from its start.
            log.error("state_snapshot_too_large", repo=repo, seq=seq, bytes=len(raw))
            return False
        try:
            await self.publish(repo, raw)
        except Exception as exc:  # the client's errors: the log still holds the state
            log.warning("state_snapshot_publish_failed", repo=repo, seq=seq, error=repr(exc))
            return None
        self.published += 1
        return True


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
        self.on_topic: dict[str, int] = {}  # repo -> the delta its topic snapshot covers
        self.restored_from: dict[str, int] = {}  # repo -> the snapshot's delta it started at
        self.neighborhoods: dict[str, NeighborhoodSnapshot] = {}

    async def offer(self, partition: int) -> dict[str, int]:
        """Read the partition's snapshots on the topic (headers checked, bodies kept for
        `judge`); what each repository's newest snapshot, the file's or the topic's,
        covers (repo -> delta): the log's deltas before it need not be decoded."""
        covered: dict[str, int] = {}
        if self._topic is not None:
            for repo, offered in (await self._topic.latest([partition])).items():
                if self._partition_of(repo) != partition:
                    continue  # a message on the wrong partition: another deployment's
                self._offered[repo] = offered
                self.on_topic[repo] = covered[repo] = offered.header.seq
        for repo in self._files.repos():
            if self._partition_of(repo) == partition:
                header = self._files.header(repo)
                if header is not None:
                    covered[repo] = max(covered.get(repo, 0), header.seq)
        return covered

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
            log.warning("state_snapshot_rejected", repo=repo, reason="other_history", detail=reason)
        return 0

    def _load(self, repo: str) -> list[StateSnapshot]:
        """The repository's snapshots that decode, the newest first (the topic's first
        of two of one delta)."""
        found = []
        offered = self._offered.pop(repo, None)
        if offered is not None and (snapshot := decode_offered(offered)) is not None:
            found.append(snapshot)
        on_disk = self._files.load(repo)
        if on_disk is not None and all(s.seq != on_disk.seq for s in found):
            found.append(on_disk)
        return sorted(found, key=lambda s: -s.seq)

    def __call__(self, repo: str) -> RepoIndex:
        self._candidates.pop(repo, None)
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

    def held(self, state: RepoState, publishing: bool) -> int:
        """What the snapshots kept of a restored repository cover: the one it started from
        (0: none), and no more than the topic's when publishing."""
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

    async def read_partition(self, partition: int) -> list[GraphDelta]:
        covered = await self._indexes.offer(partition)
        read = await self._inner.read_partition_after(partition, covered)
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
