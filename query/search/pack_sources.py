"""What goes into a context pack, before any budget: targets and their relations.

Targets come from seeds, given as node ids (``sym:path:Q``, ``file:path``) or chunk ids
(``path#Q``, ``path#L1-20``): a symbol is its chunk, a file is all of its chunks, a
module chunk is itself. Relations (vortexa's lists) come from the adjacency index:
callers and callees of the targets, the imports, importers and test files of their
files, the files' top-level symbols, the targets' siblings (same parent, nearest
lines first) and what ContextOS expansion reaches beyond those. Each list is capped,
in the adjacency's order (resolved before guessed, heavier first, then id), with its
true length kept beside it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from query.search.adjacency import Adjacency
from query.search.expansion import DECAY, MAX_NODES, expand
from query.search.named_tests import CONFIDENCE as NAME_CONFIDENCE
from query.search.traversal import MAX_HOPS, shortest_path
from stores.projections.ids import file_id, is_test_path, path_of, symbol_id
from stores.records import ChunkRecord, EdgeRecord, SymbolRecord
from stores.repo_state import RepoState

_LINES_CHUNK = re.compile(r"L\d+-\d+")
NODE_PREFIXES = ("sym:", "file:", "ext:", "dir:")


@dataclass(frozen=True, slots=True)
class Target:
    node: str
    chunk: ChunkRecord | None
    score: float

    @property
    def key(self) -> str:
        return self.chunk.id if self.chunk is not None else self.node


@dataclass(frozen=True, slots=True)
class Relation:
    """One reason a node is in the pack: its role toward a target, by which edge."""

    node: str
    role: str
    about: str
    kind: str
    confidence: str
    weight: float
    depth: int = 1


Gathered = dict[str, tuple[list[Relation], int]]


class Chunks:
    """The chunks of a mapping path -> chunks, found by id and by (path, qualname)."""

    def __init__(self, by_path: Mapping[str, Sequence[ChunkRecord]], state: RepoState) -> None:
        self._by_path = by_path
        self._state = state
        self._qual: dict[str, dict[str, ChunkRecord]] = {}
        self._symbols: dict[str, dict[str, SymbolRecord]] = {}

    def of_file(self, path: str) -> list[ChunkRecord]:
        return sorted(self._by_path.get(path, ()), key=lambda c: (c.line_start, c.id))

    def by_id(self, chunk_id: str) -> ChunkRecord | None:
        path = chunk_id.partition("#")[0]
        return next((c for c in self._by_path.get(path, ()) if c.id == chunk_id), None)

    def of_symbol(self, path: str, qualname: str) -> ChunkRecord | None:
        table = self._qual.get(path)
        if table is None:
            table = self._qual[path] = {
                c.qualname: c for c in reversed(self.of_file(path)) if c.qualname
            }
        return table.get(qualname)

    def signature(self, node: str) -> str | None:
        """The declaration of a symbol: its chunk's, else the parsed symbol's."""
        if not node.startswith("sym:"):
            return None
        path, _, qualname = node[4:].partition(":")
        chunk = self.of_symbol(path, qualname)
        if chunk is not None and chunk.signature:
            return chunk.signature
        table = self._symbols.get(path)
        if table is None:
            record = self._state.files.get(path)
            symbols = record.symbols if record is not None else ()
            table = self._symbols[path] = {s.qualname: s for s in reversed(symbols)}
        symbol = table.get(qualname)
        return symbol.signature if symbol is not None else None


def resolve_seeds(
    adjacency: Adjacency, chunks: Chunks, seeds: Sequence[tuple[str, float]], limit: int
) -> tuple[list[Target], int, list[str]]:
    """Targets of the seeds (best seed score first, then id), their true count, and the
    seeds the state does not know."""
    best: dict[str, tuple[float, ChunkRecord | None]] = {}
    unknown: list[str] = []
    for seed, score in seeds:
        node, chunk = _seed_node(seed, chunks)
        if node is None or node not in adjacency.nodes:
            unknown.append(seed)
            continue
        for piece in [chunk] if chunk is not None else _chunks_of(node, chunks):
            key = piece.id if piece is not None else node
            if key not in best or score > best[key][0]:
                best[key] = (score, piece)
    ordered = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))
    targets = [Target(_node_of(chunk, key), chunk, score) for key, (score, chunk) in ordered]
    return targets[:limit], len(targets), unknown


def entry_node_id(entry: str) -> str:
    """The node of a node id or a chunk id: a symbol chunk's symbol (``~2``, a repeated
    qualname's second chunk, is the same symbol), a module or document chunk's file."""
    if entry.startswith(NODE_PREFIXES) or "#" not in entry:
        return entry
    path, _, tail = entry.partition("#")
    if tail.startswith(("module:", "doc:")) or _LINES_CHUNK.fullmatch(tail):
        return file_id(path)
    return symbol_id(path, tail.split("~", 1)[0])


def _seed_node(seed: str, chunks: Chunks) -> tuple[str | None, ChunkRecord | None]:
    if seed.startswith(NODE_PREFIXES):
        return seed, None
    if "#" not in seed:
        return None, None
    chunk = chunks.by_id(seed)
    if chunk is not None:
        return _node_of(chunk, seed), chunk
    return entry_node_id(seed), None


def _chunks_of(node: str, chunks: Chunks) -> list[ChunkRecord | None]:
    if node.startswith("file:"):
        return list(chunks.of_file(node[5:])) or [None]
    if node.startswith("sym:"):
        path, _, qualname = node[4:].partition(":")
        return [chunks.of_symbol(path, qualname)]
    return [None]


def _node_of(chunk: ChunkRecord | None, key: str) -> str:
    if chunk is None:
        return key
    if chunk.qualname:
        return symbol_id(chunk.path, chunk.qualname)
    return file_id(chunk.path)


def gather(
    adjacency: Adjacency, targets: Sequence[Target], *, per_list: int, siblings: int, related: int
) -> Gathered:
    """Every list of the pack: (the first relations, capped, and the true count)."""
    nodes = list(dict.fromkeys(t.node for t in targets))
    files = list(dict.fromkeys(file_id(p) for n in nodes if (p := path_of(n)) is not None))
    inside = set(nodes)
    out: Gathered = {}

    def collect(role: str, rels: list[Relation], cap: int) -> None:
        unique: dict[str, Relation] = {}
        for rel in rels:
            if rel.node not in inside and rel.node not in unique:
                unique[rel.node] = rel
        out[role] = (list(unique.values())[:cap], len(unique))

    collect(
        "callers",
        [_rel(e.src, "caller", n, e) for n in nodes for e in adjacency.callers(n)],
        per_list,
    )
    collect(
        "callees",
        [_rel(e.dst, "callee", n, e) for n in nodes for e in adjacency.callees(n)],
        per_list,
    )
    # Tests linked by import first, then those linked by name alone (issue 20).
    tests = [_rel(e.src, "test", f, e) for f in files for e in adjacency.tests(f)]
    tests += [
        Relation(t, "test", f, "TESTS", NAME_CONFIDENCE, 1.0)
        for f in files
        for t in adjacency.tests_by_name(f)
    ]
    collect("tests", tests, per_list)
    collect(
        "imports",
        [_rel(e.dst, "import", f, e) for f in files for e in adjacency.imports(f)],
        per_list,
    )
    collect(
        "imported_by",
        [_rel(e.src, "imported_by", f, e) for f in files for e in adjacency.imported_by(f)],
        per_list,
    )
    collect(
        "symbols",
        [
            Relation(s, "symbol", f, "CONTAINS", "structural", 1.0)
            for f in files
            for s in adjacency.children(f)
        ],
        per_list,
    )
    collect("siblings", [r for n in nodes for r in _siblings(adjacency, n)], siblings)
    # ContextOS expansion beyond the lists: its 20 nodes are counted besides the seeds.
    listed = inside | {r.node for rels, _ in out.values() for r in rels}
    reached = [
        Relation(
            e.node,
            "related",
            e.via or "",
            e.kind or "",
            "resolved",
            e.score / DECAY**e.depth,
            e.depth,
        )
        for e in expand(adjacency, nodes, max_nodes=MAX_NODES + len(nodes), externals=False)
        if e.depth > 0 and e.node not in listed
    ]
    collect("related", reached, related)
    return out


def _rel(node: str, role: str, about: str, edge: EdgeRecord) -> Relation:
    return Relation(node, role, about, edge.kind, edge.confidence, edge.weight)


def _siblings(adjacency: Adjacency, node: str) -> list[Relation]:
    """Symbols under the node's parent, nearest lines first, then id."""
    parent = adjacency.parent(node)
    if parent is None or not node.startswith("sym:"):
        return []
    here = adjacency.nodes[node].line_start or 0

    def distance(other: str) -> tuple[int, str]:
        return abs((adjacency.nodes[other].line_start or 0) - here), other

    others = sorted((s for s in adjacency.children(parent) if s != node), key=distance)
    return [Relation(s, "sibling", node, "SIBLING", "structural", 1.0) for s in others]


def dependency_chain(
    adjacency: Adjacency, target: str, entry: str | None, *, max_hops: int = MAX_HOPS
) -> tuple[str, ...]:
    """From the entry to the target (the shortest path), or, without an entry, the
    import chain: from the target's file up its strongest non-test importer, again and
    again, read top-down. Empty when there is nothing to chain."""
    if entry is not None:
        return shortest_path(adjacency, entry, target, max_hops=max_hops) or ()
    path = path_of(target)
    if path is None:
        return ()
    chain = [file_id(path)]
    while len(chain) <= max_hops:
        importers = [
            e.src
            for e in adjacency.imported_by(chain[-1])
            if e.confidence != "name_match"
            and e.src not in chain
            and not is_test_path(e.src[5:])
            and not adjacency.is_hub(e.src)
        ]
        if not importers:
            break
        chain.append(importers[0])
    return tuple(reversed(chain)) if len(chain) > 1 else ()
