"""The churn ledger of one repository: its entries in the order they were indexed.

Fed by whoever folds the repository's graph deltas (the query service's read model):
``before`` reads the images a delta is about to change, the caller applies the delta to
its ``RepoState`` and ``FileGraphState``, then ``apply`` folds it. A barrier closes the
open entry: ``commit_completed`` into a commit entry (id: the sha), ``scan_completed``
into a scan entry (id: ``scan:<sha>``, or ``scan:<last seq>`` without a commit or when
that id is already taken). The open entry is served as the ``working-tree`` entry while
it holds a net change, is not a scan in progress, and no commit is half folded.

Snapshots (``apply_snapshot``) are attributed to the entry whose seq range holds their
``graph_seq``; one computed from a delta not folded yet waits for it (the two topics are
read independently; as many wait as there are entries). The ledger keeps the last
``MAX_ENTRIES`` entries. ``parts`` and ``from_parts`` are what `query.churn.durable`
saves and loads it by (issue 16: a restarted service keeps its churn history).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace

from query.churn.accumulator import Accumulator
from query.churn.cycles import Cycle
from query.churn.entry import WORKING_TREE, ChurnEntry, CommitInfo, EntryKind
from query.churn.images import Prior, capture
from query.churn.neighborhood_part import (
    EntryPoints,
    SnapshotDigest,
    digest,
    fold_snapshot,
)
from stores.deltas import GraphDelta
from stores.neighborhoods import NeighborhoodSnapshot
from stores.projections.graph_state import FileGraphState
from stores.repo_state import RepoState

MAX_ENTRIES = 1000
MIN_PREFIX = 7


@dataclass(frozen=True, slots=True)
class LedgerParts:
    """Everything a ledger holds, for `query.churn.durable` to save and load: a ledger
    rebuilt from its parts (`ChurnLedger.from_parts`) folds on as the one they were
    taken from. Taken by `ChurnLedger.parts` as they stand (the open accumulator is the
    ledger's own, mutable one): read them at once."""

    max_entries: int
    seq: int
    snapshot_seq: int
    entries: tuple[ChurnEntry, ...]
    open: Accumulator
    cycles: frozenset[Cycle]
    hubs: frozenset[str]
    last_points: EntryPoints
    waiting: tuple[SnapshotDigest, ...]


class ChurnLedger:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.entries: deque[ChurnEntry] = deque(maxlen=max_entries)
        self.seq = 0
        self.snapshot_seq = 0  # the last neighborhood snapshot folded (by its own seq)
        self._open = Accumulator()
        self._cycles: frozenset[Cycle] = frozenset()
        self._hubs: frozenset[str] = frozenset()
        self._last_points: EntryPoints = {}
        self._waiting: deque[SnapshotDigest] = deque(maxlen=max_entries)

    def before(
        self, state: RepoState, graph: FileGraphState | None, delta: GraphDelta
    ) -> Prior | None:
        """The images ``delta`` will change, or None when it is not the next delta."""
        if graph is None or delta.repo != state.repo or delta.seq != state.seq + 1:
            return None
        open_ = self._open
        counting = open_.counting or any(r.origin == "scan" for r in delta.files_upserted)
        return capture(state, graph, delta, count_edges=counting and not open_.edges)

    def apply(
        self,
        delta: GraphDelta,
        prior: Prior | None,
        state: RepoState,
        graph: FileGraphState | None,
    ) -> None:
        """Fold ``delta``, applied to ``state`` and ``graph`` since ``prior`` was taken."""
        if prior is None or graph is None or delta.seq <= self.seq:
            return
        self._open.fold(delta, prior, state, graph)
        self.seq = delta.seq
        if delta.barrier is not None:
            self._close(delta, state, graph)
        while self._waiting and self._waiting[0].graph_seq <= self.seq:
            self._attribute(self._waiting.popleft())  # snapshots come in graph_seq order

    def apply_snapshot(self, snapshot: NeighborhoodSnapshot) -> None:
        self.snapshot_seq = max(self.snapshot_seq, snapshot.seq)
        brief = digest(snapshot)
        if brief.entry_points == self._last_points:
            brief = replace(brief, entry_points=self._last_points)  # one mapping, many entries
        self._last_points = brief.entry_points
        if brief.graph_seq > self.seq:
            self._waiting.append(brief)
            return
        self._attribute(brief)

    def working_tree(self, state: RepoState, graph: FileGraphState | None) -> ChurnEntry | None:
        """The open entry as of ``state``, when it is a work-tree change (see the module)."""
        if graph is None or self._open.empty or self._open.counting or self._open.info.sha:
            return None
        info = CommitInfo(branch=state.branch)
        entry, _ = self._open.close("working_tree", WORKING_TREE, info, state, graph, self._cycles)
        return None if _no_change(entry) else entry

    def find(self, entry_id: str) -> int | None:
        """The index of the last entry with this id, or of the one commit it abbreviates."""
        for i in range(len(self.entries) - 1, -1, -1):
            if self.entries[i].id == entry_id:
                return i
        return self.find_commit(entry_id) if len(entry_id) >= MIN_PREFIX else None

    def find_commit(self, sha: str) -> int | None:
        """The index of the last entry (commit or scan) that indexed ``sha`` or the one
        commit ``sha`` abbreviates (at least ``MIN_PREFIX`` characters)."""
        exact = [i for i, e in enumerate(self.entries) if e.commit == sha]
        if exact:
            return exact[-1]
        if len(sha) < MIN_PREFIX:
            return None
        found = [i for i, e in enumerate(self.entries) if e.commit and e.commit.startswith(sha)]
        return found[-1] if found and len({self.entries[i].commit for i in found}) == 1 else None

    def parts(self) -> LedgerParts:
        """What the ledger holds, to be saved (see `LedgerParts`)."""
        return LedgerParts(
            max_entries=self.entries.maxlen or MAX_ENTRIES,
            seq=self.seq,
            snapshot_seq=self.snapshot_seq,
            entries=tuple(self.entries),
            open=self._open,
            cycles=self._cycles,
            hubs=self._hubs,
            last_points=self._last_points,
            waiting=tuple(self._waiting),
        )

    @classmethod
    def from_parts(cls, parts: LedgerParts) -> ChurnLedger:
        """The ledger ``parts`` were taken from (the accumulator is taken over, not copied)."""
        ledger = cls(parts.max_entries)
        ledger.entries.extend(parts.entries)
        ledger.seq, ledger.snapshot_seq = parts.seq, parts.snapshot_seq
        ledger._open, ledger._cycles, ledger._hubs = parts.open, parts.cycles, parts.hubs
        ledger._last_points = parts.last_points
        ledger._waiting.extend(parts.waiting)
        return ledger

    def _close(self, delta: GraphDelta, state: RepoState, graph: FileGraphState) -> None:
        open_ = self._open
        sha = delta.indexed_commit
        kind: EntryKind
        if delta.barrier == "commit_completed":
            kind = "commit"
            info = open_.info if open_.info.sha == sha else CommitInfo(sha, branch=delta.branch)
            entry_id = sha or f"commit:{delta.seq}"
        else:
            kind = "scan"
            info = CommitInfo(sha, branch=delta.branch)
            entry_id = f"scan:{sha}"
            if sha is None or any(e.id == entry_id for e in self.entries):
                entry_id = f"scan:{delta.seq}"
        entry, self._cycles = open_.close(kind, entry_id, info, state, graph, self._cycles)
        self.entries.append(entry)
        self._open = Accumulator()

    def _attribute(self, snapshot: SnapshotDigest) -> None:
        seq = snapshot.graph_seq
        if self._open.contains(seq):
            part = self._open.neighborhood
            self._open.neighborhood = fold_snapshot(part, snapshot, self._hubs)
        else:
            for i in range(len(self.entries) - 1, -1, -1):
                entry = self.entries[i]
                if entry.contains(seq):
                    part = fold_snapshot(entry.neighborhood, snapshot, self._hubs)
                    self.entries[i] = replace(entry, neighborhood=part)
                    break
                if entry.last_seq < seq:
                    break
        self._hubs = snapshot.hubs


def _no_change(entry: ChurnEntry) -> bool:
    return (
        not any(entry.files.counts)
        and not any(entry.symbols.counts)
        and not entry.edges_added
        and not entry.edges_removed
        and entry.neighborhood is None
    )
