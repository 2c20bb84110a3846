"""What a delta is about to change, read from the state before it is applied.

The ledger tells an added item from a changed one, and a change from one undone, by
comparing an item's image before the delta (or before the entry) with the state after
it. The images are small prints, not records:

- a file's print is ``(content_hash, skipped, size)``: a file *changed* when its
  contents or its skip reason changed; an event that only re-stamps a file (its
  origin, commit or producer: a commit of a file already seen in the work tree) is no
  change;
- a symbol is keyed ``path:qualname`` (the first symbol of a repeated qualname); it
  *changed* when its kind, its signature or its body changed, the body being the
  content hash of its chunk (``path#qualname``), which ignores shifted line numbers;
- an edge is keyed ``(src, dst, kind)``; only its presence counts (a weight change of
  an edge is no churn);
- a file dependency is an arc ``(source path, target path)`` of the file graph
  (``FileGraphState``: IMPORTS and REFERENCES between two parsed source files, name
  matches left out) weighing the sum of its edges; it is *added* when its weight goes
  from 0 to more, *removed* when it goes to 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from query.search.packed_chunks import ids_and_hashes
from stores.deltas import GraphDelta
from stores.projections.file_graph import file_arc, is_clustered
from stores.projections.graph_state import FileGraphState
from stores.records import FileRecord
from stores.repo_state import RepoState

EdgeKey = tuple[str, str, str]
Arc = tuple[str, str]
FilePrint = tuple[str | None, str | None, int]
SymbolPrint = tuple[str, str, str | None]


@dataclass(frozen=True, slots=True)
class FileImage:
    print: FilePrint
    symbols: Mapping[str, SymbolPrint]


@dataclass(frozen=True, slots=True)
class Prior:
    """The images of everything one delta touches, taken before it is applied."""

    files: Mapping[str, FileImage | None]
    edges: Mapping[EdgeKey, bool]
    arcs: Mapping[Arc, float]
    edge_counts: tuple[Counter[str], Counter[str]] | None = field(default=None)
    """Edges added and removed by kind, counted instead of imaged (a scan's barrier)."""


def file_image(record: FileRecord | None) -> FileImage | None:
    if record is None:
        return None
    return FileImage((record.content_hash, record.skipped, record.size), symbol_prints(record))


def symbol_prints(record: FileRecord) -> dict[str, SymbolPrint]:
    # the read side's chunks are packed: their ids and hashes read without the records
    bodies = dict(ids_and_hashes(record.chunks))
    prints: dict[str, SymbolPrint] = {}
    for symbol in record.symbols:
        key = f"{record.path}:{symbol.qualname}"
        body = bodies.get(f"{record.path}#{symbol.qualname}")
        prints.setdefault(key, (symbol.kind, symbol.signature, body))
    return prints


def touched_arcs(state: RepoState, graph: FileGraphState, delta: GraphDelta) -> set[Arc]:
    """The dependencies ``delta`` may change: those of the edges it upserts or removes, and
    every arc at a file it removes or takes in or out of the file graph."""
    arcs: set[Arc] = set()
    for edge in delta.edges_upserted:
        arc = file_arc(edge)
        if arc is not None:
            arcs.add(arc)
    for key in delta.edges_removed:
        known = graph.arc_of(key)
        if known is not None:
            arcs.add(known)
    members = set(delta.files_removed)
    for record in delta.files_upserted:
        old = state.files.get(record.path)
        if (old is not None and is_clustered(old)) != is_clustered(record):
            members.add(record.path)
    if members:
        for arc, _ in graph.weighted_arcs():
            if arc[0] in members or arc[1] in members:
                arcs.add(arc)
    return arcs


def dependency_weights(graph: FileGraphState, arcs: Collection[Arc]) -> dict[Arc, float]:
    """Each arc's weight in the file graph now: 0 when absent (or an end is not in it)."""
    weights = dict.fromkeys(arcs, 0.0)
    if not weights:
        return weights
    for arc, weight in graph.weighted_arcs():
        if arc in weights and arc[0] in graph.files and arc[1] in graph.files:
            weights[arc] += weight
    return weights


def capture(
    state: RepoState, graph: FileGraphState, delta: GraphDelta, *, count_edges: bool = False
) -> Prior:
    """The images of what ``delta`` touches, from the state and file graph before it.

    With ``count_edges`` the edges are counted, not imaged: a scan's barrier upserts every
    edge of the repository at once (330,000 for sympy), and a scan keeps counts only."""
    paths = {r.path for r in delta.files_upserted} | set(delta.files_removed)
    files = {p: file_image(state.files.get(p)) for p in sorted(paths)}
    arcs = dependency_weights(graph, touched_arcs(state, graph, delta))
    if count_edges:
        return Prior(files, {}, arcs, edge_counts(state, delta))
    keys = {e.key for e in delta.edges_upserted} | set(delta.edges_removed)
    return Prior(files, {k: k in state.edges for k in keys}, arcs)


def edge_counts(state: RepoState, delta: GraphDelta) -> tuple[Counter[str], Counter[str]]:
    """Edges ``delta`` adds and removes, by kind, against the state before it."""
    edges = state.edges
    added = Counter(e.kind for e in delta.edges_upserted if (e.src, e.dst, e.kind) not in edges)
    if not delta.edges_removed:
        return added, Counter()
    upserted = {e.key for e in delta.edges_upserted}
    removed = Counter(k[2] for k in set(delta.edges_removed) if k in edges and k not in upserted)
    return added, removed
