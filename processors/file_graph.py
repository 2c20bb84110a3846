"""Pure graph construction for one file: its nodes and its outgoing edges.

Nodes: ``file:<path>``, ``sym:<path>:<qualname>`` and ``ext:<module>``. Edges owned by a
file are CONTAINS (file -> top-level symbol, symbol -> nested symbol) and IMPORTS (file
-> file when an import resolves to a file of the repository, else file -> external
module). Resolution takes a predicate ``exists(path)`` so that the caller decides which
file set an answer is computed against.
"""

from __future__ import annotations

from collections.abc import Callable

from processors.import_resolution import import_targets
from stores.records import EdgeRecord, FileRecord, NodeRecord


def file_id(path: str) -> str:
    return f"file:{path}"


def symbol_id(path: str, qualname: str) -> str:
    return f"sym:{path}:{qualname}"


def external_id(module: str) -> str:
    return f"ext:{module}"


def file_nodes(record: FileRecord) -> dict[str, NodeRecord]:
    nodes = {
        file_id(record.path): NodeRecord(
            id=file_id(record.path),
            kind="FILE",
            name=record.path.rsplit("/", 1)[-1],
            path=record.path,
            line_start=1 if record.lines else None,
            line_end=record.lines or None,
        )
    }
    for sym in record.symbols:
        node_id = symbol_id(record.path, sym.qualname)
        nodes.setdefault(
            node_id,
            NodeRecord(
                id=node_id,
                kind=sym.kind,
                name=sym.name,
                path=record.path,
                line_start=sym.line_start,
                line_end=sym.line_end,
            ),
        )
    return nodes


def contains_edges(record: FileRecord) -> dict[tuple[str, str, str], EdgeRecord]:
    edges: dict[tuple[str, str, str], EdgeRecord] = {}
    for sym in record.symbols:
        parent = symbol_id(record.path, sym.parent) if sym.parent else file_id(record.path)
        edge = EdgeRecord(src=parent, dst=symbol_id(record.path, sym.qualname), kind="CONTAINS")
        edges.setdefault(edge.key, edge)
    return edges


def import_edges(
    record: FileRecord, exists: Callable[[str], bool]
) -> dict[tuple[str, str, str], EdgeRecord]:
    """IMPORTS edges of one file: to the first candidate that exists, else to the package."""
    src = file_id(record.path)
    edges: dict[tuple[str, str, str], EdgeRecord] = {}
    for imp in record.imports:
        for target in import_targets(record.language, record.path, imp):
            hit = next((c for c in target.candidates if c != record.path and exists(c)), None)
            if hit is not None:
                edge = EdgeRecord(src=src, dst=file_id(hit), kind="IMPORTS", confidence="import")
            elif target.external is not None:
                edge = EdgeRecord(src=src, dst=external_id(target.external), kind="IMPORTS")
            else:
                continue
            edges.setdefault(edge.key, edge)
    return edges


def candidate_paths(record: FileRecord) -> set[str]:
    """Every path whose appearance or disappearance may change this file's imports."""
    return {
        c
        for imp in record.imports
        for target in import_targets(record.language, record.path, imp)
        for c in target.candidates
    }
