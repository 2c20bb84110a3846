"""The graph of one repository state, indexed for walking; kept up to date delta by delta.

RepoState keeps its edges as columns (`stores.edge_table.EdgeTable`) that read a node's
edges in both directions; the adjacency reads them there, holding no edge of its own
(issue 16 §3), and keeps what a walk asks again and again: each node's edges in order,
its links and its degree. `Adjacency.of(state)` counts the degrees once, the read model
folds each delta into it after (`Adjacency.apply`, adjacency_fold.py), and it answers
the questions retrieval asks of a node: its callers, callees, imports, importers, tests,
symbols and siblings, and how connected it is.

Connections. A node's degree is the number of distinct nodes linked with it by a
dependency edge (IMPORTS, CALLS, USES, REFERENCES, EXTENDS, IMPLEMENTS, TESTS) in either
direction, name-match edges left out. CONTAINS, DEFINED_BY and SIBLING are left out: they
say where a symbol is written, not what depends on it, and counting them would make any
file of 31 functions a "hub" for the ContextOS rule. Name-match edges are guesses (every
``x.save()`` links to every ``save``); counting them would make common method names hubs
by accident. The same edges, and only these, are what the walks traverse (`links`).

Two hub rules read the degree: ContextOS expansion does not pass through a node of more
than 30 connections (expansion.py); vortexa's walks skip nodes above the 99th percentile
of the degrees, never at or below 50 (`hub_threshold`, the rule of neighborhoods/hubs.py
applied to every node with a connection).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, MutableMapping
from typing import NamedTuple, TypeVar

import numpy as np

from query.search.adjacency_fold import Before, Named, fold_names, ids_named, threshold_of
from query.search.degrees import Degrees
from query.search.named_tests import name_linked_tests
from stores.deltas import GraphDelta
from stores.edge_table import EdgeTable
from stores.projections.hubs import HUB_FLOOR, HUB_PERCENTILE
from stores.projections.ids import file_id, path_of
from stores.records import EdgeRecord, NodeRecord
from stores.repo_state import RepoState

STRUCTURAL_KINDS = frozenset({"CONTAINS", "DEFINED_BY", "SIBLING"})
DEPENDENCY_KINDS = frozenset(
    {"IMPORTS", "CALLS", "USES", "REFERENCES", "EXTENDS", "IMPLEMENTS", "TESTS"}
)
FILE_DEPENDENCY_KINDS = frozenset({"IMPORTS", "REFERENCES"})
"""File-to-file dependencies (the file graph's arcs, neighborhoods/file_graph.py)."""

CACHE_LIMIT = 16_384
"""Per-node orders kept at most (each cache): past it they are dropped and sorted again
when asked, so a long-lived adjacency holds no more than a version's worth of queries."""

CACHE_EDGES = 131_072
"""Edges (records, links) kept in those orders at most: they are built from the state's
columns, ~80 bytes each, so past this (~10 MB) they are all dropped and built again."""

FOLD_COST = 4
FOLD_FLOOR = 20_000
"""A delta changing more than a quarter of the edges (and over 5,000) is not folded:
the adjacency is dropped and built again when next asked for (a scan, a branch switch)."""

_T = TypeVar("_T")

CONFIDENCE_RANK = {"import": 0, "structural": 0, "same_file": 1, "same_folder": 2, "name_match": 3}


class Link(NamedTuple):
    """One traversable edge seen from one of its ends."""

    other: str
    kind: str
    weight: float
    outgoing: bool


def _traversable(edge: EdgeRecord) -> bool:
    return (
        edge.kind in DEPENDENCY_KINDS and edge.confidence != "name_match" and edge.src != edge.dst
    )


def _file_dependency(edge: EdgeRecord) -> bool:
    return edge.kind in FILE_DEPENDENCY_KINDS and edge.confidence != "name_match"


def edge_order(edge: EdgeRecord, other: str) -> tuple[int, float, str, str]:
    """Resolved before guessed, heavier first, then the other end's id and the kind."""
    return (CONFIDENCE_RANK.get(edge.confidence, 9), -edge.weight, other, edge.kind)


class Adjacency:
    """Every node's edges in both directions, its degree, and the vortexa hub threshold.

    Built once, its degrees counted over the edges' columns, then kept up to date by
    `apply` as each delta is folded (the read model does it: RepoView.adjacency), so an
    answer after an edit pays for the edit, not for a rebuild. Its edges are the state's
    own (``edges`` is the state's `EdgeTable`, read a node at a time) and ``nodes`` is the
    state's dict. The order of the edges into a node is not an answer (every reader sorts
    them or counts them). The per-node orders are sorted when first asked for and kept
    until a delta touches the node, since a query reads a few dozen nodes of thousands.
    Changed only by `apply`, like the RepoState it follows."""

    __slots__ = (
        "_floor",
        "_histogram",
        "_inbound",
        "_kept",
        "_links",
        "_q",
        "_sorted",
        "_threshold",
        "degrees",
        "edges",
        "names",
        "nodes",
        "seq",
    )

    def __init__(
        self,
        nodes: Mapping[str, NodeRecord],
        edges: EdgeTable,
        degrees: MutableMapping[str, int],
        names: Named,
        seq: int = 0,
        *,
        q: float = HUB_PERCENTILE,
        floor: int = HUB_FLOOR,
    ) -> None:
        self.nodes = nodes
        self.edges = edges  # the state's own table
        self.degrees = degrees
        self.names = names
        self.seq = seq
        self._q, self._floor = q, floor
        self._histogram = Counter(degrees.values())  # degree -> nodes of that degree
        self._threshold: float | None = None
        self._sorted: dict[tuple[str, bool], tuple[EdgeRecord, ...]] = {}
        self._links: dict[str, tuple[Link, ...]] = {}
        self._kept = 0  # edges in ``_sorted`` and ``_links``, counted as they are added
        self._inbound: dict[str, int] = {}

    @classmethod
    def of(
        cls, state: RepoState, *, q: float = HUB_PERCENTILE, floor: int = HUB_FLOOR
    ) -> Adjacency:
        names: dict[str, list[str]] = {}
        for node in state.nodes.values():
            if node.path is not None:
                names.setdefault(node.name, []).append(node.id)
        return cls(
            nodes=state.nodes,
            edges=state.edges,
            degrees=degrees_of(state.edges),
            names={n: ids[0] if len(ids) == 1 else tuple(sorted(ids)) for n, ids in names.items()},
            seq=state.seq,
            q=q,
            floor=floor,
        )

    # ---- kept up to date (issue 15): what a delta changes, and nothing else.

    def follows(self, state: RepoState) -> bool:
        """Whether this is the adjacency of ``state`` as it stands (the same dicts, the
        same last delta): a state replaced (restored from a snapshot) is not followed."""
        return self.nodes is state.nodes and self.edges is state.edges and self.seq == state.seq

    @staticmethod
    def worth_folding(delta: GraphDelta, edges: int) -> bool:
        """Whether folding ``delta`` into an adjacency of ``edges`` edges costs less than
        building it again: folding an edge costs about FOLD_COST times what a rebuild
        spends on one (tests/bench/adjacency_update.py)."""
        changes = len(delta.edges_upserted) + len(delta.edges_removed)
        return changes * FOLD_COST <= max(edges, FOLD_FLOOR)

    def before(self, delta: GraphDelta) -> Before:
        """What ``delta`` is about to change, as the state holds it: call it just before
        the state applies the delta, and pass it to `apply` after."""
        node_ids = (*delta.nodes_removed, *(n.id for n in delta.nodes_upserted))
        keys = (*delta.edges_removed, *(e.key for e in delta.edges_upserted))
        return Before(
            nodes={node_id: self.nodes.get(node_id) for node_id in node_ids},
            edges=self.edges.lookup(keys),
        )

    def apply(self, delta: GraphDelta, before: Before) -> None:
        """Fold ``delta``, just applied to the state this follows (``before`` taken just
        before it was): afterwards every answer is the one `of` would give."""
        # The edges are the state's, which applied the delta already: what is left is to
        # forget what was kept of the nodes it touched, and to count their degrees again.
        keys = (*delta.edges_removed, *(e.key for e in delta.edges_upserted))
        for src, dst, _ in keys:
            self._sorted.pop((src, True), None)
            self._sorted.pop((dst, False), None)
            self._links.pop(src, None)
            self._links.pop(dst, None)
            if dst.startswith("file:"):
                self._inbound.pop(dst[5:], None)
        changed = [e for e in before.edges.values() if e is not None]
        changed += delta.edges_upserted
        linked = {end for e in changed if _traversable(e) for end in (e.src, e.dst)}
        for node in linked:
            self._recount(node)
        fold_names(self.names, self.nodes, before.nodes)
        self.seq = delta.seq
        for cache in (self._sorted, self._links, self._inbound):
            if len(cache) > CACHE_LIMIT:
                cache.clear()

    def _recount(self, node: str) -> None:
        kinds = DEPENDENCY_KINDS  # `_traversable` inlined: a hub's every edge is read
        ends = self.edges.ends(node, outgoing=True) + self.edges.ends(node, outgoing=False)
        others = {
            other
            for other, kind, confidence in ends
            if kind in kinds and confidence != "name_match" and other != node
        }
        old, new = self.degrees.get(node, 0), len(others)
        if old == new:
            return
        if old:
            self._histogram[old] -= 1
            if not self._histogram[old]:
                del self._histogram[old]
        if new:
            self._histogram[new] += 1
            self.degrees[node] = new
        else:
            del self.degrees[node]
        self._threshold = None

    @property
    def hub_threshold(self) -> float:
        """max(p99 of the degrees, 50), as `stores.projections.hubs.hub_threshold` gives
        it for the list of degrees, read from how many nodes have each degree."""
        if self._threshold is None:
            self._threshold = threshold_of(self._histogram, self._q, self._floor)
        return self._threshold

    def degree(self, node: str) -> int:
        return self.degrees.get(node, 0)

    def is_hub(self, node: str) -> bool:
        """vortexa's hub: more connections than the p99 of the repository (floor 50)."""
        return self.degrees.get(node, 0) > self.hub_threshold

    def edges_out(self, node: str) -> tuple[EdgeRecord, ...]:
        """Every edge from the node, in `edge_order`."""
        return self._ordered(node, True)

    def edges_in(self, node: str) -> tuple[EdgeRecord, ...]:
        """Every edge into the node, in `edge_order`."""
        return self._ordered(node, False)

    def links(self, node: str) -> tuple[Link, ...]:
        """Traversable edges at the node, heaviest first, then by the other end's id."""
        found = self._links.get(node)
        if found is None:
            out, into = self.edges.edges_out(node), self.edges.edges_into(node)
            links = [Link(e.dst, e.kind, e.weight, True) for e in out if _traversable(e)]
            links += [Link(e.src, e.kind, e.weight, False) for e in into if _traversable(e)]
            links.sort(key=lambda k: (-k.weight, k.other, k.kind, not k.outgoing))
            found = self._links[node] = self._keep(tuple(links))
        return found

    def _ordered(self, node: str, outgoing: bool) -> tuple[EdgeRecord, ...]:
        found = self._sorted.get((node, outgoing))
        if found is None:
            if outgoing:
                edges = self.edges.edges_out(node)
                found = tuple(sorted(edges, key=lambda e: edge_order(e, e.dst)))
            else:
                edges = self.edges.edges_into(node)
                found = tuple(sorted(edges, key=lambda e: edge_order(e, e.src)))
            self._sorted[(node, outgoing)] = self._keep(found)
        return found

    def _keep(self, found: tuple[_T, ...]) -> tuple[_T, ...]:
        """``found``, counted among the kept orders (all dropped past CACHE_EDGES)."""
        self._kept += len(found)
        if self._kept > CACHE_EDGES:
            self._sorted.clear()
            self._links.clear()
            self._kept = len(found)
        return found

    def named(self, name: str) -> tuple[str, ...]:
        """File and symbol nodes whose name is ``name`` (a file's name is its basename)."""
        return ids_named(self.names, name)

    # What one node is linked with. For a file node, calls are those of its symbols to
    # and from other files; every answer is in `edge_order`, guesses (name_match) last.

    def callers(self, node: str) -> tuple[EdgeRecord, ...]:
        return self._calls(node, incoming=True)

    def callees(self, node: str) -> tuple[EdgeRecord, ...]:
        return self._calls(node, incoming=False)

    def imports(self, node: str) -> tuple[EdgeRecord, ...]:
        """What the node's file imports (files and external modules) or references."""
        fid = _file_of(node)
        return tuple(
            e
            for e in self.edges_out(fid)
            if e.kind in FILE_DEPENDENCY_KINDS and not e.dst.startswith("sym:")
        )

    def imported_by(self, node: str) -> tuple[EdgeRecord, ...]:
        """The files importing (or referencing) the node's file."""
        fid = _file_of(node)
        return tuple(
            e
            for e in self.edges_in(fid)
            if e.kind in FILE_DEPENDENCY_KINDS and e.src.startswith("file:")
        )

    def tests(self, node: str) -> tuple[EdgeRecord, ...]:
        """The test files whose TESTS edges point at the node's file."""
        fid = _file_of(node)
        return tuple(
            e for e in self.edges_in(fid) if e.kind == "TESTS" and e.src.startswith("file:")
        )

    def tests_by_name(self, node: str) -> tuple[str, ...]:
        """The test files named after the node's file (named_tests.py), whatever they
        import: the file ids, nearest first."""
        path = path_of(_file_of(node))
        if path is None:
            return ()
        return tuple(file_id(t) for t in name_linked_tests(path, self._files_named))

    def _files_named(self, name: str) -> list[str]:
        return [n[5:] for n in ids_named(self.names, name) if n.startswith("file:")]

    def inbound(self, path: str) -> int:
        """A file's inbound degree: the distinct other files that import or reference it.
        Kept once counted: a context pack asks it of every file it reads (django: 23
        times a pack, 1.7 ms of its 9, issue 15)."""
        found = self._inbound.get(path)
        if found is None:
            fid = file_id(path)
            found = self._inbound[path] = len(
                {
                    src
                    for src, kind, confidence in self.edges.ends(fid, outgoing=False)
                    if kind in FILE_DEPENDENCY_KINDS
                    and confidence != "name_match"
                    and src.startswith("file:")
                    and src != fid
                }
            )
        return found

    def importing_paths(self, path: str) -> list[str]:
        """The paths of the nodes with an IMPORTS edge into the file, sorted, whatever
        the edge's confidence: what a file's details call ``imported_by``, from the
        edges into it rather than a scan of every edge of the repository (django's
        75,000: 7 ms of an 8 ms answer, issue 15)."""
        ends = self.edges.ends(file_id(path), outgoing=False)
        return sorted(src.split(":", 1)[1] for src, kind, _ in ends if kind == "IMPORTS")

    def linked_files(self, path: str) -> list[str]:
        """The other files a file imports or references and those importing or
        referencing it, by resolved edges (name matches left out)."""
        fid = file_id(path)
        ends = {e.dst for e in self.edges_out(fid) if _file_dependency(e)}
        ends |= {e.src for e in self.edges_in(fid) if _file_dependency(e)}
        found = (path_of(end) for end in ends if end.startswith("file:") and end != fid)
        return sorted(p for p in found if p is not None)

    def children(self, node: str) -> tuple[str, ...]:
        """The symbols directly contained in a file or a symbol, in line order."""
        return self._by_line(e.dst for e in self.edges_out(node) if e.kind == "CONTAINS")

    def parent(self, node: str) -> str | None:
        found = [e.src for e in self.edges_in(node) if e.kind == "CONTAINS"]
        return min(found) if found else None

    def symbols(self, node: str) -> tuple[str, ...]:
        """Every symbol defined in the node's file, in line order."""
        fid = _file_of(node)
        return self._by_line(e.src for e in self.edges_in(fid) if e.kind == "DEFINED_BY")

    def _calls(self, node: str, *, incoming: bool) -> tuple[EdgeRecord, ...]:
        if node.startswith("file:"):
            path = node[5:]
            members = (node, *self.symbols(node))
        else:
            path, members = "", (node,)
        found: list[tuple[tuple[int, float, str, str], EdgeRecord]] = []
        for member in members:
            edges = self.edges_in(member) if incoming else self.edges_out(member)
            for e in edges:
                other = e.src if incoming else e.dst
                if e.kind == "CALLS" and (not path or path_of(other) != path):
                    found.append((edge_order(e, other), e))
        found.sort(key=lambda pair: pair[0])
        return tuple(e for _, e in found)

    def _by_line(self, ids: Iterable[str]) -> tuple[str, ...]:
        def key(node_id: str) -> tuple[int, str]:
            node = self.nodes.get(node_id)
            return (node.line_start or 0) if node else 0, node_id

        return tuple(sorted(set(ids), key=key))


def degrees_of(edges: EdgeTable) -> Degrees:
    """Each node's degree (see the module's doc), counted over the edges' columns: the
    distinct unordered pairs of ends of the traversable edges, counted at both ends
    (sympy's 328,270 edges without building one record)."""
    columns = edges.columns()
    walked = np.array(
        [k in DEPENDENCY_KINDS and c != "name_match" for k, c in columns.codes] or [False]
    )
    keep = walked[columns.code] & (columns.src != columns.dst)
    src, dst = columns.src[keep].astype(np.int64), columns.dst[keep].astype(np.int64)
    width = len(columns.names) + 1
    pairs = np.unique(np.minimum(src, dst) * width + np.maximum(src, dst))
    counts = np.bincount(np.concatenate((pairs // width, pairs % width)), minlength=width)
    names, found = columns.names, np.flatnonzero(counts)
    return Degrees(zip([names[i] for i in found.tolist()], counts[found].tolist(), strict=True))


def _file_of(node: str) -> str:
    path = path_of(node)
    return file_id(path) if path is not None else node
