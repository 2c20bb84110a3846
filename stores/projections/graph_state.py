"""The file graph of a repository kept current from its graph deltas.

Reclustering needs only the files and the file-to-file dependencies, so the
neighborhood processor folds each delta into this small state instead of rebuilding
the file graph from the whole code graph (half a million edges for sympy) each time.
A scan's files arrive before their edges (resolved at the scan's barrier), so the
state says when it is ``settled``: no scan in progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from stores.deltas import GraphDelta
from stores.projections.file_graph import FileGraph, file_arc, is_clustered
from stores.records import Keyword
from stores.repo_state import RepoState

EdgeKey = tuple[str, str, str]


@dataclass
class FileGraphState:
    repo: str
    seq: int = 0
    files: dict[str, tuple[Keyword, ...]] = field(default_factory=dict)
    edges: dict[EdgeKey, tuple[tuple[str, str], float]] = field(default_factory=dict)
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
            changed |= self.edges.pop(key, None) is not None
        for edge in delta.edges_upserted:
            arc = file_arc(edge)
            if arc is not None:
                changed |= self.edges.get(edge.key) != (arc, edge.weight)
                self.edges[edge.key] = (arc, edge.weight)
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
        for key, edge in state.edges.items():
            arc = file_arc(edge)
            if arc is not None:
                folded.edges[key] = (arc, edge.weight)
        folded.changed_seq = state.seq
        return folded

    @property
    def settled(self) -> bool:
        return not self.scanning

    def graph(self) -> FileGraph:
        arcs: dict[tuple[str, str], float] = {}
        for (src, dst), weight in self.edges.values():
            if src in self.files and dst in self.files:
                arcs[(src, dst)] = arcs.get((src, dst), 0.0) + weight
        return FileGraph(tuple(sorted(self.files)), dict(sorted(arcs.items())))
