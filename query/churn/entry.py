"""One churn entry: what a scan, a commit or the work tree changed in the code graph.

Entries cut the delta stream at its barriers. A *commit* entry holds the net change
between the previous barrier and its ``commit_completed`` barrier (its ``CommitObserved``
delta, its files, and any work-tree edit folded since the previous barrier: an edit
saved, then committed, is part of the commit); a *scan* entry holds the deltas up to a
``scan_completed`` barrier (a full scan, or the follower's reconciliation after a reset);
the *working_tree* entry is the open, not yet closed, net change since the last barrier
and disappears when a barrier closes it.

Net means an item's image at the start of the entry against the state at its end: a
file added then removed inside one entry, or a dependency added then removed, is no
churn. A full scan is the baseline of everything it reports, so a scan that reports
files (``origin == "scan"``) keeps counts, not lists (``detailed`` False): sympy's
1,532 files cost a few integers, not lists of its 330,000 edges.

Sizes (files, symbols, nodes, edges) are the state's after the entry. The neighborhood
part comes from the snapshots computed from a graph delta inside the entry's seq range
(see ``neighborhood_part``); without one, modularity and the neighborhood count are None.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from query.churn.neighborhood_part import NeighborhoodPart

EntryKind = Literal["scan", "commit", "working_tree"]
WORKING_TREE = "working-tree"


@dataclass(frozen=True, slots=True)
class Dependency:
    """A file -> file dependency and its weight (after when added, before when removed)."""

    source: str
    target: str
    weight: float


@dataclass(frozen=True, slots=True)
class Changes:
    """Items added, removed and changed, sorted; the counts are true even when the lists
    are not kept (a scan)."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    counts: tuple[int, int, int] = (0, 0, 0)


@dataclass(frozen=True, slots=True)
class Size:
    files: int
    symbols: int
    nodes: int
    edges: int


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str | None = None
    parents: tuple[str, ...] = ()
    subject: str = ""
    branch: str | None = None
    committed_at: float | None = None


@dataclass(frozen=True, slots=True)
class ChurnEntry:
    id: str
    kind: EntryKind
    first_seq: int
    last_seq: int
    indexed_at: float
    info: CommitInfo
    detailed: bool
    files: Changes
    symbols: Changes
    edges_added: Mapping[str, int]
    edges_removed: Mapping[str, int]
    dependencies_added: tuple[Dependency, ...]
    dependencies_removed: tuple[Dependency, ...]
    dependency_counts: tuple[int, int]
    new_cycles: tuple[tuple[str, ...], ...]
    size: Size
    file_hashes: Mapping[str, str | None] = field(default_factory=dict)
    """The content hash of each added file (after) and removed file (before): renames."""
    neighborhood: NeighborhoodPart | None = None

    @property
    def commit(self) -> str | None:
        return self.info.sha

    @property
    def hubs_gained(self) -> tuple[str, ...]:
        part = self.neighborhood
        return tuple(sorted(part.hubs_after - part.hubs_before)) if part else ()

    @property
    def hubs_lost(self) -> tuple[str, ...]:
        part = self.neighborhood
        return tuple(sorted(part.hubs_before - part.hubs_after)) if part else ()

    def contains(self, seq: int) -> bool:
        return self.first_seq <= seq <= self.last_seq
