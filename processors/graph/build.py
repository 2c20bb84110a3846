"""One file's part of the graph: its nodes and every edge that starts at it.

Nodes: the file and its symbols. Edges owned by the file: CONTAINS (file -> top-level
symbol -> nested symbol), DEFINED_BY (symbol -> file), SIBLING (consecutive symbols
under one parent), IMPORTS (file -> file or external module), CALLS / USES /
REFERENCES (from the referencing symbol, or the file at module level, to the resolved
symbol), EXTENDS / IMPLEMENTS (class -> base), and TESTS (a test file to the files it
exercises, a test function to what it calls). Every reference edge carries the
confidence of its resolution and, as weight, how many references it stands for.

File-to-file weight: an IMPORTS edge weighs the number of resolved cross-file symbol
references behind it, 1 when none resolves (spread over the files of a package import);
references to a file without an import (Go and Java packages) make a REFERENCES edge
between the files. Name-match edges are kept but never weigh in.
"""

from __future__ import annotations

import posixpath
from collections.abc import Set

from processors.graph.answers import FileAnswers
from processors.graph.bindings import BindingsCache
from processors.graph.lookup import Key, Lookup
from processors.graph.resolver import FileResolver
from processors.graph.tally import EdgeKey, FileTally, file_edge, uses_of
from stores.projections.ids import file_id, is_test_path, symbol_id
from stores.records import EdgeRecord, FileRecord, NodeRecord, trusted

__all__ = [
    "file_nodes",
    "file_patch",
    "file_structure",
    "file_subgraph",
    "is_test_path",
    "structure_edges",
]


def file_subgraph(
    record: FileRecord,
    lookup: Lookup,
    cache: BindingsCache | None = None,
    previous: FileAnswers | None = None,
    dirty: Set[Key] = frozenset(),
) -> tuple[dict[str, NodeRecord], dict[EdgeKey, EdgeRecord], FileAnswers | None]:
    """The file's nodes and owned edges, and its answers (to reuse, with ``previous``
    and the keys ``dirty`` since, at its next resolution: see answers.py), which carry
    the tally its resolved edges add up from (to patch: ``file_patch``)."""
    nodes = file_nodes(record)
    edges: dict[EdgeKey, EdgeRecord] = {}
    _structure(record, edges)
    if record.language is None or record.skipped:
        return nodes, edges, None
    resolver = FileResolver(record, lookup, cache, previous, dirty)
    tally = FileTally(record.path, is_test_path(record.path), uses_of(record, nodes))
    for question, uses in tally.uses.items():
        tally.add(uses, resolver.ask(question))
    edges.update(tally.edges())
    tally.file_edges = tally.between_files(resolver.binds)
    edges.update((key, file_edge(key, attrs)) for key, attrs in tally.file_edges.items())
    resolver.answers.tally = tally
    return nodes, edges, resolver.answers


def file_patch(
    record: FileRecord,
    lookup: Lookup,
    cache: BindingsCache,
    previous: FileAnswers,
    dirty: Set[Key],
    nodes: dict[str, NodeRecord] | None = None,
    reshaped: Set[str] = frozenset(),
) -> tuple[dict[EdgeKey, EdgeRecord | None], FileAnswers]:
    """The owned edges that change (None: removed) when the keys ``dirty`` changed
    their answers, for a file resolved before into ``previous`` (its answers and their
    tally); and its new answers. Its nodes and structure edges are left as they are: a
    function of the record, which is the same, or (``nodes``: the new record's) differs
    in nothing resolution reads (IncrementalGraph.change) and only its references are
    compared question by question; ``reshaped``: the qualnames whose signatures it
    changed (its structure edges are the caller's then). ``lookup`` records the keys of
    the bindings and of the questions asked again only (see IncrementalGraph.commit)."""
    assert previous.tally is not None, "a tally is kept by every resolution"
    resolver = FileResolver(record, lookup, cache, previous, dirty, reshaped)
    old = tally = previous.tally
    questions = resolver.revalidate()
    uses = old.uses
    if nodes is not None:
        uses = uses_of(record, nodes)
        questions += [q for q in (*uses, *old.uses) if uses.get(q) != old.uses.get(q)]
        tally = old.copy()
        tally.uses = uses
    touched: dict[EdgeKey, int] = {}
    relines: set[EdgeKey] = set()
    for question in dict.fromkeys(questions):
        was, now = old.uses.get(question, ()), uses.get(question, ())
        if not (was or now):
            continue  # asked from within another question, which re-resolves it
        before = previous.answers[question].targets if was else ()
        after = resolver.ask(question) if now else ()
        if was != now or before != after:
            if tally is old:
                tally = old.copy()
            tally.swap((was, before), (now, after), touched, relines)
    if relines:
        answered = resolver.answers.answers
        tally.reline(relines, lambda q: answered[q].targets if q in answered else resolver.ask(q))
    changes = tally.patch(touched)
    if tally is old and resolver.binds is previous.binds:
        resolver.answers.tally = tally  # nor do the edges between files change
        return changes, resolver.answers
    new = tally.between_files(resolver.binds)
    if new != old.file_edges:
        if tally is old:
            tally = old.copy()
        for key in old.file_edges.keys() | new.keys():
            attrs = new.get(key)
            if attrs != old.file_edges.get(key):
                changes[key] = None if attrs is None else file_edge(key, attrs)
        tally.file_edges = new
    resolver.answers.tally = tally
    return changes, resolver.answers


def structure_edges(record: FileRecord) -> dict[EdgeKey, EdgeRecord]:
    edges: dict[EdgeKey, EdgeRecord] = {}
    _structure(record, edges)
    return edges


def file_structure(
    record: FileRecord,
) -> tuple[dict[str, NodeRecord], dict[EdgeKey, EdgeRecord]]:
    """The file's nodes and the edges that need no resolution (CONTAINS, DEFINED_BY,
    SIBLING): what a scanned file holds until the scan's barrier resolves it."""
    edges: dict[EdgeKey, EdgeRecord] = {}
    _structure(record, edges)
    return file_nodes(record), edges


def file_nodes(record: FileRecord) -> dict[str, NodeRecord]:
    path = record.path
    nodes = {
        file_id(path): NodeRecord(
            id=file_id(path),
            kind="FILE",
            name=posixpath.basename(path),
            path=path,
            line_start=1 if record.lines else None,
            line_end=record.lines or None,
        )
    }
    for sym in record.symbols:
        node_id = symbol_id(path, sym.qualname)
        if node_id not in nodes:  # the first of duplicate definitions stands for them
            nodes[node_id] = trusted(  # one per symbol: no second validation
                NodeRecord,
                {
                    "id": node_id,
                    "kind": sym.kind,
                    "name": sym.name,
                    "path": path,
                    "line_start": sym.line_start,
                    "line_end": sym.line_end,
                    "level": None,
                },
            )
    return nodes


def _structure(record: FileRecord, edges: dict[EdgeKey, EdgeRecord]) -> None:
    """Each key once: every edge names a symbol of its own (the first of duplicates)."""
    path, fid = record.path, file_id(record.path)
    seen: set[str] = set()
    last_child: dict[str | None, str] = {}
    for sym in record.symbols:
        if sym.qualname in seen:
            continue
        seen.add(sym.qualname)
        sid = symbol_id(path, sym.qualname)
        parent = symbol_id(path, sym.parent) if sym.parent and sym.parent in seen else fid
        _put(edges, parent, sid, "CONTAINS")
        _put(edges, sid, fid, "DEFINED_BY")
        previous = last_child.get(sym.parent)
        if previous is not None:
            _put(edges, previous, sid, "SIBLING")
        last_child[sym.parent] = sid


def _put(edges: dict[EdgeKey, EdgeRecord], src: str, dst: str, kind: str) -> None:
    # Three per symbol: built trusted (stores.records.trusted), not validated again.
    values = {
        "src": src,
        "dst": dst,
        "kind": kind,
        "weight": 1.0,
        "confidence": "structural",
        "line": None,
    }
    edges[(src, dst, kind)] = trusted(EdgeRecord, values)
