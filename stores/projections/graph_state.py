"""The file graph of a repository kept current from its graph deltas.

Reclustering needs only the files and the file-to-file dependencies, so the
neighborhood processor folds each delta into this small state instead of rebuilding
the file graph from the whole code graph (half a million edges for sympy) each time.
A scan's files arrive before their edges (resolved at the scan's barrier), so the
state says when it is ``settled``: no scan in progress.

The dependencies are held by file pair, one dict per edge kind that makes them
(`FILE_EDGE_KINDS`): an edge key names its pair and kind, so the key needs no room of
its own. Held by edge key, as they were, each cost a key tuple, the pair and two path
strings cut from the node ids: 6.4 MB on sympy (docs/READ_SIDE_MEMORY.md). A pair has
at most one edge of each kind, so its weight, summed over them, does not depend on the
order they came in (two floats add alike either way round).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from stores.deltas import GraphDelta
from stores.projections.file_graph import FILE_EDGE_KINDS, FileGraph, file_arc, is_clustered
from stores.records import Keyword
from stores.repo_state import RepoState

if TYPE_CHECKING:
    from stores.edge_table import EdgeTable

EdgeKey = tuple[str, str, str]
Arc = tuple[str, str]


def _by_kind() -> dict[str, dict[Arc, float]]:
    return {kind: {} for kind in sorted(FILE_EDGE_KINDS)}


def key_arc(key: EdgeKey) -> Arc | None:
    """The file pair an edge key would stand for, were its edge a dependency (`file_arc`
    says whether one is: it also reads the edge's confidence)."""
    src, dst, kind = key
    if kind not in FILE_EDGE_KINDS or not src.startswith("file:") or not dst.startswith("file:"):
        return None
    return None if src == dst else (src[5:], dst[5:])


@dataclass
class FileGraphState:
    """A repository's clustered files (with their keywords) and the weight of each edge
    that is a file-to-file dependency, by kind and file pair (``arcs``)."""

    repo: str
    seq: int = 0
    files: dict[str, tuple[Keyword, ...]] = field(default_factory=dict)
    arcs: dict[str, dict[Arc, float]] = field(default_factory=_by_kind)
    scanning: bool = False
    indexed_commit: str | None = None
    changed_seq: int = 0  # the last delta that changed files, keywords or arcs

    def apply(self, delta: GraphDelta) -> bool:
        """Fold the next delta (an old one is a no-op; a gap raises, as RepoState)."""
        if delta.seq <= self.seq:
            return False
        if delta.seq != self.seq + 1:
            raise ValueError(f"delta gap in {self.repo}: have {self.seq}, got {delta.seq}")
        changed = False
        for path in delta.files_removed:
            changed |= self.files.pop(path, None) is not None
        for record in delta.files_upserted:
            if is_clustered(record):
                changed |= self.files.get(record.path) != record.keywords
                self.files[record.path] = record.keywords
            else:
                changed |= self.files.pop(record.path, None) is not None
            if record.origin == "scan" and delta.barrier is None:
                self.scanning = True
        for key in delta.edges_removed:
            arc = key_arc(key)
            if arc is not None:
                changed |= self.arcs[key[2]].pop(arc, None) is not None
        for edge in delta.edges_upserted:
            arc = file_arc(edge)
            if arc is not None:
                held = self.arcs[edge.kind]
                changed |= held.get(arc) != edge.weight
                held[_shared(arc)] = edge.weight
        if delta.barrier == "scan_completed":
            self.scanning = False
        if delta.indexed_commit is not None:
            self.indexed_commit = delta.indexed_commit
        self.seq = delta.seq
        if changed:
            self.changed_seq = delta.seq
        return True

    @classmethod
    def of(cls, state: RepoState) -> FileGraphState:
        """The file graph of a materialized state, as folding its deltas would give it."""
        folded = cls(state.repo, seq=state.seq, indexed_commit=state.indexed_commit)
        folded.files = {p: r.keywords for p, r in state.files.items() if is_clustered(r)}
        for kind, arc, weight in _file_arcs(state.edges):
            folded.arcs[kind][_shared(arc)] = weight
        folded.changed_seq = state.seq
        return folded

    def copy(self) -> FileGraphState:
        """A copy that later deltas to this one leave as it is (a recluster reads one)."""
        arcs = {kind: dict(held) for kind, held in self.arcs.items()}
        return FileGraphState(
            self.repo,
            self.seq,
            dict(self.files),
            arcs,
            self.scanning,
            self.indexed_commit,
            self.changed_seq,
        )

    @property
    def settled(self) -> bool:
        return not self.scanning

    def arc_of(self, key: EdgeKey) -> Arc | None:
        """The file pair of the dependency edge under ``key``, if one is held."""
        arc = key_arc(key)
        return arc if arc is not None and arc in self.arcs[key[2]] else None

    def weighted_arcs(self) -> Iterator[tuple[Arc, float]]:
        """Each dependency edge held, as its file pair and weight (kind by kind)."""
        for held in self.arcs.values():
            yield from held.items()

    def graph(self) -> FileGraph:
        arcs: dict[Arc, float] = {}
        for (src, dst), weight in self.weighted_arcs():
            if src in self.files and dst in self.files:
                arcs[(src, dst)] = arcs.get((src, dst), 0.0) + weight
        return FileGraph(tuple(sorted(self.files)), dict(sorted(arcs.items())))


def _file_arcs(edges: EdgeTable) -> Iterator[tuple[str, Arc, float]]:
    """The kind, file pair and weight of each file dependency edge (`file_arc`'s), in the
    table's order, read from its columns: no record built for the other edges (sympy:
    17,000 of 328,270)."""
    import numpy as np  # here: a state without edges (the producers') needs none

    columns = edges.columns()
    names, codes = columns.names, columns.codes
    kinds = np.array([k in FILE_EDGE_KINDS and c != "name_match" for k, c in codes] or [False])
    files = np.array([n.startswith("file:") for n in names] or [False])
    src, dst = columns.src, columns.dst
    keep = np.flatnonzero(kinds[columns.code] & files[src] & files[dst] & (src != dst))
    for s, d, c, w in zip(
        src[keep].tolist(),
        dst[keep].tolist(),
        columns.code[keep].tolist(),
        columns.weights(keep).tolist(),
        strict=True,
    ):
        yield codes[c][0], (names[s][5:], names[d][5:]), w


def _shared(arc: Arc) -> Arc:
    """The pair with its paths interned: one string per path however many arcs name it
    (the paths are cut from the node ids, a new string each time)."""
    return (sys.intern(arc[0]), sys.intern(arc[1]))
