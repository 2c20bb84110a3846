"""Navigation over the code graph (issue 20): where a name is defined, what points at a
symbol, what it calls and is called by, the path between two nodes, and the nodes
around one.

Pure: each function reads an `Adjacency` (and, for the call sites, the state's file
records) and returns node ids or edges; the service pages and stamps them. A name
resolves to symbol nodes by their simple name (``Adjacency.named``), an exact qualified
match first (``BytesParser.parse`` before ``AddressHeader.parse``), then a qualified
suffix match, then any symbol of that simple name, each group by path then id.

Call sites: the read side keeps no references (they were half its memory:
query/read_model.py `_without_references`), so a call site is the line its edge carries
(`EdgeRecord.line`: the first reference behind it, which the worker keeps), in the
file of the symbol that calls, whose own lines are the enclosing symbol's.
"""

from __future__ import annotations

from collections.abc import Mapping

from query.search.adjacency import DEPENDENCY_KINDS, STRUCTURAL_KINDS, Adjacency, edge_order
from stores.projections.ids import file_id, path_of
from stores.records import EdgeRecord, FileRecord


def qualname_of(node_id: str) -> str | None:
    """``Class.method`` of ``sym:pkg/mod.py:Class.method``; None for other nodes."""
    if not node_id.startswith("sym:"):
        return None
    path = path_of(node_id)
    return node_id[len("sym:") + len(path) + 1 :] if path is not None else None


def match_of(node_id: str, name: str) -> int:
    """0: the qualified name is ``name``; 1: it ends with ``.name``; 2: same simple name."""
    qual = qualname_of(node_id) or ""
    if qual == name:
        return 0
    return 1 if qual.endswith("." + name) else 2


def definitions(adjacency: Adjacency, name: str, path: str | None = None) -> list[str]:
    """The symbol nodes ``name`` (a simple or dotted name) may mean, best first; only
    those defined in ``path`` when it is given."""
    simple = name.rsplit(".", 1)[-1]
    found = [
        n
        for n in adjacency.named(simple)
        if n.startswith("sym:") and (path is None or path_of(n) == path)
    ]
    return sorted(found, key=lambda n: (match_of(n, name), path_of(n) or "", n))


def references(adjacency: Adjacency, node: str) -> tuple[EdgeRecord, ...]:
    """Every edge pointing at the node but those of structure (CONTAINS, DEFINED_BY,
    SIBLING), resolved before guessed (`edge_order`)."""
    return tuple(e for e in adjacency.edges_in(node) if e.kind not in STRUCTURAL_KINDS)


def hop(adjacency: Adjacency, a: str, b: str) -> tuple[EdgeRecord, bool] | None:
    """The strongest dependency edge between two nodes (name matches left out, as the
    walks leave them), and whether it points from ``a`` to ``b``."""
    found = [
        (edge_order(e, b), e, True) for e in adjacency.edges_out(a) if e.dst == b and _walked(e)
    ]
    found += [
        (edge_order(e, a), e, False) for e in adjacency.edges_out(b) if e.dst == a and _walked(e)
    ]
    if not found:
        return None
    _, edge, forward = min(found, key=lambda t: (t[0], not t[2]))
    return edge, forward


def file_node(files: Mapping[str, FileRecord], name: str) -> str | None:
    """The file node of a path the state holds (a leading '/' ignored), else None."""
    path = name.strip("/")
    return file_id(path) if path in files else None


def _walked(edge: EdgeRecord) -> bool:
    return (
        edge.kind in DEPENDENCY_KINDS and edge.confidence != "name_match" and edge.src != edge.dst
    )
