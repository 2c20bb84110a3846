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
import re
from collections import Counter
from collections.abc import Set

from processors.graph.answers import FileAnswers
from processors.graph.ids import external_id, file_id, path_of, symbol_id
from processors.graph.lookup import Key, Lookup
from processors.graph.resolver import RANK, BindingsCache, FileResolver, Target
from stores.records import EdgeRecord, FileRecord, NodeRecord

EdgeKey = tuple[str, str, str]
REFERENCE_EDGE = {"call": "CALLS", "type": "USES", "use": "REFERENCES"}
STRUCTURAL = frozenset({"import", "same_file", "same_folder"})

_TEST_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec)/|(^|/)test_[^/]*\.py$|_test\.(py|go)$|"
    r"(Test|Tests|IT)\.java$|\.(test|spec)\.[jt]sx?$"
)


def is_test_path(path: str) -> bool:
    return _TEST_FILE.search(path) is not None


def file_subgraph(
    record: FileRecord,
    lookup: Lookup,
    cache: BindingsCache | None = None,
    previous: FileAnswers | None = None,
    dirty: Set[Key] = frozenset(),
) -> tuple[dict[str, NodeRecord], dict[EdgeKey, EdgeRecord], FileAnswers | None]:
    """The file's nodes and owned edges, and its answers (to reuse, with ``previous``
    and the keys ``dirty`` since, at its next resolution: see answers.py)."""
    nodes = _nodes(record)
    edges: dict[EdgeKey, EdgeRecord] = {}
    _structure(record, edges)
    if record.language is None or record.skipped:
        return nodes, edges, None
    resolver = FileResolver(record, lookup, cache, previous, dirty)
    into: Counter[str] = Counter()  # structural references into other files
    _references(record, resolver, nodes, edges, into)
    _inheritance(record, resolver, edges, into)
    _imports(record, resolver, edges, into)
    if is_test_path(record.path):
        _tests(record, edges)
    return nodes, edges, resolver.answers


def file_structure(
    record: FileRecord,
) -> tuple[dict[str, NodeRecord], dict[EdgeKey, EdgeRecord]]:
    """The file's nodes and the edges that need no resolution (CONTAINS, DEFINED_BY,
    SIBLING): what a scanned file holds until the scan's barrier resolves it."""
    edges: dict[EdgeKey, EdgeRecord] = {}
    _structure(record, edges)
    return _nodes(record), edges


def _nodes(record: FileRecord) -> dict[str, NodeRecord]:
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
            nodes[node_id] = NodeRecord(
                id=node_id,
                kind=sym.kind,
                name=sym.name,
                path=path,
                line_start=sym.line_start,
                line_end=sym.line_end,
            )
    return nodes


def _add(edges: dict[EdgeKey, EdgeRecord], edge: EdgeRecord) -> None:
    old = edges.get(edge.key)
    if old is None:
        edges[edge.key] = edge
        return
    edges[edge.key] = EdgeRecord(
        src=edge.src,
        dst=edge.dst,
        kind=edge.kind,
        weight=old.weight + edge.weight,
        confidence=_stronger(old.confidence, edge.confidence),  # type: ignore[arg-type]
    )


def _structure(record: FileRecord, edges: dict[EdgeKey, EdgeRecord]) -> None:
    path, fid = record.path, file_id(record.path)
    seen: set[str] = set()
    last_child: dict[str | None, str] = {}
    for sym in record.symbols:
        if sym.qualname in seen:
            continue
        seen.add(sym.qualname)
        sid = symbol_id(path, sym.qualname)
        parent = symbol_id(path, sym.parent) if sym.parent and sym.parent in seen else fid
        _add(edges, EdgeRecord(src=parent, dst=sid, kind="CONTAINS"))
        _add(edges, EdgeRecord(src=sid, dst=fid, kind="DEFINED_BY"))
        previous = last_child.get(sym.parent)
        if previous is not None:
            _add(edges, EdgeRecord(src=previous, dst=sid, kind="SIBLING"))
        last_child[sym.parent] = sid


def _source(record: FileRecord, scope: str | None, nodes: dict[str, NodeRecord]) -> str:
    if scope:
        sid = symbol_id(record.path, scope)
        if sid in nodes:
            return sid
    return file_id(record.path)


def _references(
    record: FileRecord,
    resolver: FileResolver,
    nodes: dict[str, NodeRecord],
    edges: dict[EdgeKey, EdgeRecord],
    into: Counter[str],
) -> None:
    """Reference edges, weighing how many references each stands for. References alike
    in scope, qualifier, name and kind are resolved and counted once (a method calling
    ``self.x()`` ten times is one question with a count of ten)."""
    groups = Counter((r.scope, r.qualifier, r.name, r.kind) for r in record.references)
    tally: dict[EdgeKey, tuple[float, str]] = {}
    sources: dict[str | None, str] = {}
    for (scope, qualifier, name, ref_kind), count in groups.items():
        src = sources.get(scope)
        if src is None:
            src = sources[scope] = _source(record, scope, nodes)
        for target in resolver.resolve_name(qualifier, name, scope):
            if target.node == src:
                continue  # recursion is not a dependency
            key = (src, target.node, REFERENCE_EDGE[ref_kind])
            old = tally.get(key)
            tally[key] = (
                (count, target.confidence)
                if old is None
                else (old[0] + count, _stronger(old[1], target.confidence))
            )
            if target.path != record.path and target.confidence in STRUCTURAL:
                into[target.path] += count
    for (src, dst, kind), (weight, confidence) in tally.items():
        _add(
            edges,
            EdgeRecord(
                src=src,
                dst=dst,
                kind=kind,
                weight=float(weight),
                confidence=confidence,  # type: ignore[arg-type]
            ),
        )


def _stronger(a: str, b: str) -> str:
    return a if RANK.get(a, -1) <= RANK.get(b, -1) else b


def _count(record: FileRecord, target: Target, into: Counter[str]) -> None:
    if target.path != record.path and target.confidence in STRUCTURAL:
        into[target.path] += 1


def _inheritance(
    record: FileRecord,
    resolver: FileResolver,
    edges: dict[EdgeKey, EdgeRecord],
    into: Counter[str],
) -> None:
    for sym in record.symbols:
        sid = symbol_id(record.path, sym.qualname)
        for kind, written in [("EXTENDS", b) for b in sym.bases] + [
            ("IMPLEMENTS", i) for i in sym.implements
        ]:
            for target in resolver.resolve_type_name(written, sym.parent):
                if target.node != sid:
                    _add(
                        edges,
                        EdgeRecord(
                            src=sid,
                            dst=target.node,
                            kind=kind,
                            confidence=target.confidence,  # type: ignore[arg-type]
                        ),
                    )
                    _count(record, target, into)


def _imports(
    record: FileRecord,
    resolver: FileResolver,
    edges: dict[EdgeKey, EdgeRecord],
    into: Counter[str],
) -> None:
    fid = file_id(record.path)
    imported: set[str] = set()
    for module in resolver.binds.targets:
        if module.external is not None:
            _set(edges, EdgeRecord(src=fid, dst=external_id(module.external), kind="IMPORTS"))
            continue
        files = [f for f in module.files if f != record.path]
        if not files:
            continue
        referenced = [f for f in files if into[f]]
        for f in files:
            imported.add(f)
            if referenced and not into[f]:
                continue  # a package import weighs what it is used for
            weight = float(into[f]) if referenced else round(1.0 / len(files), 4)
            _set(
                edges,
                EdgeRecord(
                    src=fid, dst=file_id(f), kind="IMPORTS", weight=weight, confidence="import"
                ),
            )
    for path, count in sorted(into.items()):
        if path not in imported:
            _set(
                edges,
                EdgeRecord(
                    src=fid,
                    dst=file_id(path),
                    kind="REFERENCES",
                    weight=float(count),
                    confidence="same_folder",
                ),
            )


def _set(edges: dict[EdgeKey, EdgeRecord], edge: EdgeRecord) -> None:
    """One edge per file pair and kind: the largest weight wins (a package imported twice)."""
    old = edges.get(edge.key)
    if old is None or edge.weight > old.weight:
        edges[edge.key] = edge


def _tests(record: FileRecord, edges: dict[EdgeKey, EdgeRecord]) -> None:
    """A test file TESTS the files it reaches; a test function TESTS what it calls."""
    fid = file_id(record.path)
    tested: Counter[str] = Counter()
    for edge in list(edges.values()):
        if edge.confidence == "name_match" or edge.kind not in (
            "CALLS",
            "USES",
            "IMPORTS",
            "REFERENCES",
        ):
            continue
        path = path_of(edge.dst)
        if path is None or path == record.path or is_test_path(path):
            continue
        tested[path] += 1
        if edge.kind == "CALLS" and edge.src != fid and _is_test_function(edge.src):
            _add(
                edges,
                EdgeRecord(src=edge.src, dst=edge.dst, kind="TESTS", confidence=edge.confidence),
            )
    for path, count in sorted(tested.items()):
        _set(edges, EdgeRecord(src=fid, dst=file_id(path), kind="TESTS", weight=float(count)))


def _is_test_function(node_id: str) -> bool:
    name = node_id.rsplit(":", 1)[1].rsplit(".", 1)[-1]
    return name.startswith(("test", "Test"))
