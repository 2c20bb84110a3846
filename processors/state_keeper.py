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

The other half, restoring from them, is processors/state_restore.py.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

import structlog

from stores.chunk_postings import CountCache
from stores.deltas import GraphDelta
from stores.neighborhoods import NeighborhoodSnapshot
from stores.repo_state import RepoState
from stores.state_files import STOP_BUDGET_S, StateFiles, WriteTurns, write_off_loop
from stores.state_snapshot import StateSnapshot, capture, encode

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
    partition: int = 0
    written_offset: int | None = None  # where that delta begins on the partition, if known
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
    held_offset_of: Callable[[RepoState], int | None] = lambda state: None
    """Where the delta `held_of` names begins on the graph-deltas partition, if known."""
    offset_of: Callable[[str, int], int | None] = lambda repo, seq: None
    """Where a repository's delta begins on the partition (`stores.delta_seek.DeltaOffsets`):
    the snapshot's header says so, and a reader seeks there."""
    partition_of: Callable[[str], int] = lambda repo: 0
    resolved_of: Callable[[str], bool] = lambda repo: False
    """Whether the repository's state has every file resolved (`RepoIndex.resolved`): a
    worker restored from the snapshot then resolves nothing before its first change."""
    _tracked: dict[str, _Tracked] = field(default_factory=dict)
    _turns: WriteTurns = field(default_factory=lambda: WriteTurns("state_snapshot"))
    # each repository's chunk counts of its last snapshot, reused by the next (unchanged
    # chunks are not tokenized again: ~2 s of sympy's encoding)
    _counts: dict[str, CountCache] = field(default_factory=dict)
    written: int = 0
    published: int = 0

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        for state in states:  # as restored: written again at its next change
            held = min(state.seq, self.held_of(state))
            offset = self.held_offset_of(state) if held else None
            if held and offset is None and self.offset_of(state.repo, state.seq) is not None:
                # Kept by an older build (no offset in its header) while the log holds
                # its delta: written again, so that readers can seek (stores/delta_seek).
                held = 0
            self._tracked.setdefault(
                state.repo,
                _Tracked(state.seq, written=held, partition=partition, written_offset=offset),
            )

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        now = self.clock()
        for delta in deltas:
            tracked = self._tracked.get(delta.repo)
            if tracked is None:
                tracked = self._tracked[delta.repo] = _Tracked(
                    partition=self.partition_of(delta.repo)
                )
            if tracked.acked <= tracked.written:
                tracked.first_unwritten_at = now
            tracked.acked = max(tracked.acked, delta.seq)
            tracked.last_delta_at = now

    def forget(self, repos: Iterable[str]) -> None:
        for repo in repos:  # another worker owns it now; its file stays for a restart
            self._tracked.pop(repo, None)
            self._counts.pop(repo, None)

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

    def stop_publishing(self, reason: str) -> None:
        """Write the snapshots on file only from now on: the broker came back empty, and
        this state belongs to the topics that are gone. Published on the recreated topic,
        it would start the next worker and every replica from the old history."""
        if self.publish is not None:
            self.publish = None
            log.warning("state_snapshots_unpublished", reason=reason)

    async def tick(self) -> None:
        """Write the snapshots that are due (skipped while a write is under way)."""
        await self._turns.tick(lambda: self.due(self.clock()), self._write)

    async def flush(self, budget_s: float = STOP_BUDGET_S) -> bool:
        """At a clean stop: every repository changed since its last snapshot, after the
        write under way; False when ``budget_s`` ran out first (logged)."""
        changed = self._tracked.items
        return await self._turns.flush(
            lambda: sorted(r for r, t in changed() if t.acked > t.written), self._write, budget_s
        )

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
        snapshot = capture(
            state, self.neighborhoods_of(repo), time.time(), resolved=self.resolved_of(repo)
        )
        captured = time.perf_counter() - started
        seq = state.seq
        offset = self.offset_of(repo, seq)
        floor = self._floor(repo, tracked.partition, offset)
        raw = await write_off_loop(lambda: self._encode_and_write(snapshot, offset, floor))
        published = await self._publish(repo, seq, raw)
        if published is None:
            return  # written, not published: both again at the next tick
        tracked.written, tracked.written_at = seq, self.clock()
        tracked.written_offset = offset
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
            offset=offset,
            floor=floor,
            capture_s=round(captured, 3),
            seconds=round(time.perf_counter() - started, 3),
        )

    def _floor(self, repo: str, partition: int, offset: int | None) -> int | None:
        """The offset from which a reader of the partition must read once this snapshot
        is kept: the smallest of the kept snapshots' offsets over every repository of the
        partition this worker holds, None when one has no snapshot kept, or no offset
        known (`stores.delta_seek.plan`)."""
        if offset is None:
            return None
        floor = offset
        for other, t in self._tracked.items():
            if other == repo or t.partition != partition:
                continue
            if not t.written or t.written_offset is None:
                return None
            floor = min(floor, t.written_offset)
        return floor

    def _encode_and_write(
        self, snapshot: StateSnapshot, offset: int | None, floor: int | None
    ) -> bytes:
        counts = self._counts.setdefault(snapshot.repo, CountCache())
        raw = encode(snapshot, offset=offset, floor=floor, counts=counts)
        self.files.write_bytes(snapshot.repo, raw)
        return raw

    async def _publish(self, repo: str, seq: int, raw: bytes) -> bool | None:
        """Whether the snapshot went to the topic; None: it failed (the broker away, or a
        stop's last flush after the producer stopped), to be tried again."""
        if self.publish is None:
            return False
        try:
            await self.publish(repo, raw)
        except Exception as exc:  # the client's errors: the log still holds the state
            log.warning("state_snapshot_publish_failed", repo=repo, seq=seq, error=repr(exc))
            return None
        self.published += 1
        return True
