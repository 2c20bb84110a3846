"""The file graph of a repository kept current from its graph deltas.

Reclustering needs only the files and the file-to-file dependencies, so the
neighborhood processor folds each delta into this small state instead of rebuilding
the file graph from the whole code graph (half a million edges for sympy) each time.
A scan's files arrive before their edges (resolved at the scan's barrier), so the
state says when it is ``settled``: no scan in progress.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from processors.neighborhoods.file_graph import FileGraph, file_arc, is_clustered
from stores.deltas import GraphDelta
from stores.records import Keyword

EdgeKey = tuple[str, str, str]


@dataclass
class FileGraphState:
    repo: str
    seq: int = 0
    files: dict[str, tuple[Keyword, ...]] = field(default_factory=dict)
    edges: dict[EdgeKey, tuple[tuple[str, str], float]] = field(default_factory=dict)
    scanning: bool = False
    indexed_commit: str | None = None

    def apply(self, delta: GraphDelta) -> bool:
        """Fold the next delta (an old one is a no-op; a gap raises, as RepoState)."""
        if delta.seq <= self.seq:
            return False
        if delta.seq != self.seq + 1:
            raise ValueError(f"delta gap in {self.repo}: have {self.seq}, got {delta.seq}")
        for path in delta.files_removed:
            self.files.pop(path, None)
        for record in delta.files_upserted:
            if is_clustered(record):
                self.files[record.path] = record.keywords
            else:
                self.files.pop(record.path, None)
            if record.origin == "scan" and delta.barrier is None:
                self.scanning = True
        for key in delta.edges_removed:
            self.edges.pop(key, None)
        for edge in delta.edges_upserted:
            arc = file_arc(edge)
            if arc is not None:
                self.edges[edge.key] = (arc, edge.weight)
        if delta.barrier == "scan_completed":
            self.scanning = False
        if delta.indexed_commit is not None:
            self.indexed_commit = delta.indexed_commit
        self.seq = delta.seq
        return True

    @property
    def settled(self) -> bool:
        return not self.scanning

    def graph(self) -> FileGraph:
        arcs: dict[tuple[str, str], float] = {}
        for (src, dst), weight in self.edges.values():
            if src in self.files and dst in self.files:
                arcs[(src, dst)] = arcs.get((src, dst), 0.0) + weight
        return FileGraph(tuple(sorted(self.files)), dict(sorted(arcs.items())))
