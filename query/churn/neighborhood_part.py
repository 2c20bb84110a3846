"""The neighborhood side of a churn entry, folded from the snapshots attributed to it.

A snapshot is attributed to the entry whose seq range holds its ``graph_seq`` (the graph
delta it was computed from). Folding one or more snapshots into an entry:

- the change records are counted by kind (created, removed, split, merged,
  cohesion_changed) and kept, the first ``MAX_EVENTS``, beside their true total;
- ``files_moved`` counts files whose neighborhood differs net (first source against last
  target: a file moved and moved back is not counted);
- hubs gained and lost compare ``FileStanding.hub`` of the last attributed snapshot with
  the snapshot before the first one (``hubs_before``);
- modularity, the neighborhood count and each neighborhood's label and entry points are
  the last attributed snapshot's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from stores.neighborhoods import FilesMoved, NeighborhoodChangeRecord, NeighborhoodSnapshot

MAX_EVENTS = 200
COUNTED = ("created", "removed", "split", "merged", "cohesion_changed")

EntryPoints = Mapping[str, tuple[str, tuple[str, ...]]]
"""Neighborhood id -> (label, entry points)."""


@dataclass(frozen=True, slots=True)
class NeighborhoodPart:
    snapshots: int
    counts: Mapping[str, int]
    events: tuple[NeighborhoodChangeRecord, ...]
    events_total: int
    moves: Mapping[str, tuple[str, str]]
    hubs_before: frozenset[str]
    hubs_after: frozenset[str]
    modularity: float
    neighborhoods: int
    entry_points: EntryPoints

    @property
    def files_moved(self) -> int:
        return sum(1 for source, target in self.moves.values() if source != target)


@dataclass(frozen=True, slots=True)
class SnapshotDigest:
    """What the ledger reads of a snapshot: small enough to hold many that wait for their
    graph delta (a replay reads the two topics at their own pace)."""

    graph_seq: int
    hubs: frozenset[str]
    entry_points: EntryPoints
    changes: tuple[NeighborhoodChangeRecord, ...]
    modularity: float
    neighborhoods: int


def digest(snapshot: NeighborhoodSnapshot) -> SnapshotDigest:
    return SnapshotDigest(
        graph_seq=snapshot.graph_seq,
        hubs=frozenset(f.path for f in snapshot.files if f.hub),
        entry_points={n.id: (n.label, n.entry_points) for n in snapshot.neighborhoods},
        changes=snapshot.changes,
        modularity=snapshot.modularity,
        neighborhoods=len(snapshot.neighborhoods),
    )


def fold_snapshot(
    part: NeighborhoodPart | None, snapshot: SnapshotDigest, hubs_before: frozenset[str]
) -> NeighborhoodPart:
    """``part`` with ``snapshot`` folded in (a new part when None); ``hubs_before`` is the
    previous snapshot's hubs."""
    counts = dict(part.counts) if part else dict.fromkeys(COUNTED, 0)
    moves = dict(part.moves) if part else {}
    for change in snapshot.changes:
        if isinstance(change, FilesMoved):
            for path in change.paths:
                first = moves.get(path, (change.source, change.target))[0]
                moves[path] = (first, change.target)
        else:
            counts[change.kind] += 1
    kept = part.events if part else ()
    room = max(0, MAX_EVENTS - len(kept))
    folded = NeighborhoodPart(
        snapshots=1,
        counts=counts,
        events=kept + tuple(snapshot.changes[:room]),
        events_total=(part.events_total if part else 0) + len(snapshot.changes),
        moves=moves,
        hubs_before=hubs_before,
        hubs_after=snapshot.hubs,
        modularity=snapshot.modularity,
        neighborhoods=snapshot.neighborhoods,
        entry_points=snapshot.entry_points,
    )
    if part is None:
        return folded
    return replace(folded, snapshots=part.snapshots + 1, hubs_before=part.hubs_before)
