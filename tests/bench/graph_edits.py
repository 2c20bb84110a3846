"""Single-file edits of a Python code base: planned ahead, then timed one by one.

Kinds, in shuffled blocks of five (a block's deletion always precedes its re-creation):

- ``body_edit``: an int literal inside a function becomes its successor (only the
  file's own part of the graph may change: a symbol's signature, doc or nothing);
- ``add_function``: a new top-level function appended to the file (a new name:
  files that asked for it, or matched it by name, re-resolve);
- ``rename_function``: a top-level function renamed, preferring those referenced from
  other files (its old name disappears: its dependents re-resolve);
- ``delete_file`` / ``recreate_file``: a file removed, then put back as it was.

The planner keeps its own copy of every file's contents, so the whole plan (and the
final contents, for a fresh build to compare with) is known before anything is timed;
`timed_edits` then feeds the edits as watch events to a built `RepoIndex`, timing each
`handle` call.
"""

from __future__ import annotations

import ast
import math
import random
import re
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from processors.indexer import RepoIndex
from producers.events import EventBase
from stores.projections.ids import path_of
from stores.repo_state import RepoState
from tests.bench.package_tree import GcMeter, scan_event
from tests.factories import Stamp

KINDS = ("body_edit", "add_function", "rename_function", "delete_file", "recreate_file")
ATTEMPTS = 200  # files tried for an edit of a kind before giving up on it


@dataclass(frozen=True, slots=True)
class Edit:
    kind: str
    path: str
    content: bytes | None  # None: the file is deleted
    note: str


def kind_sequence(count: int, rng: random.Random) -> list[str]:
    kinds: list[str] = []
    while len(kinds) < count:
        block = list(KINDS)
        rng.shuffle(block)
        d, r = block.index("delete_file"), block.index("recreate_file")
        if r < d:
            block[d], block[r] = block[r], block[d]
        kinds += block
    return kinds[:count]


class EditPlanner:
    def __init__(self, files: dict[str, bytes], referenced: set[tuple[str, str]], seed: int):
        """``referenced``: (path, name) of top-level functions other files refer to."""
        self.current = dict(files)
        self._referenced = referenced
        self._rng = random.Random(seed)
        self._deleted: deque[tuple[str, bytes]] = deque()
        self._functions: dict[str, tuple[bytes, list[tuple[int, str]]]] = {}  # by contents

    def plan(self, count: int) -> list[Edit]:
        edits = []
        for i, kind in enumerate(kind_sequence(count, self._rng)):
            edit = getattr(self, f"_{kind}")(i)
            if edit is None:
                raise RuntimeError(f"no file found for a {kind} edit")
            if edit.content is None:
                del self.current[edit.path]
            else:
                self.current[edit.path] = edit.content
            edits.append(edit)
        return edits

    def _candidates(self) -> list[str]:
        return sorted(p for p in self.current if p.endswith(".py"))

    def _body_edit(self, i: int) -> Edit | None:
        paths = self._candidates()
        for _ in range(ATTEMPTS):
            path = self._rng.choice(paths)
            literals = _int_literals_in_functions(self.current[path])
            if literals:
                line, start, end, value = self._rng.choice(literals)
                lines = self.current[path].split(b"\n")
                text = lines[line - 1]
                lines[line - 1] = text[:start] + str(value + 1).encode() + text[end:]
                note = f"line {line}: {value} -> {value + 1}"
                return Edit("body_edit", path, b"\n".join(lines), note)
        return None

    def _add_function(self, i: int) -> Edit | None:
        path = self._rng.choice(self._candidates())
        name = f"bench_added_{i}"
        added = f"\n\ndef {name}(value):\n    return value + {i}\n".encode()
        return Edit("add_function", path, self.current[path].rstrip(b"\n") + added, name)

    def _rename_function(self, i: int) -> Edit | None:
        found: list[tuple[str, int, str]] = []
        for path in self._candidates():
            content = self.current[path]
            cached = self._functions.get(path)
            if cached is None or cached[0] is not content:
                cached = self._functions[path] = (content, _top_level_functions(content))
            found += [(path, line, name) for line, name in cached[1]]
        if not found:
            return None
        preferred = [f for f in found if (f[0], f[2]) in self._referenced]
        path, line, name = self._rng.choice(preferred or found)
        lines = self.current[path].split(b"\n")
        new = f"{name}_renamed_{i}"
        pattern = re.compile(rb"(def\s+)" + re.escape(name.encode()) + rb"\b")
        lines[line - 1] = pattern.sub(rb"\g<1>" + new.encode(), lines[line - 1], count=1)
        self._referenced.discard((path, name))
        used = "referenced elsewhere" if preferred else "unreferenced"
        return Edit("rename_function", path, b"\n".join(lines), f"{name} -> {new} ({used})")

    def _delete_file(self, i: int) -> Edit | None:
        path = self._rng.choice(self._candidates())
        self._deleted.append((path, self.current[path]))
        return Edit("delete_file", path, None, "deleted")

    def _recreate_file(self, i: int) -> Edit | None:
        if not self._deleted:
            return None
        path, content = self._deleted.popleft()
        return Edit("recreate_file", path, content, "re-created as it was")


def _parse(content: bytes) -> ast.Module | None:
    try:
        return ast.parse(content)
    except (SyntaxError, ValueError):
        return None


def _int_literals_in_functions(content: bytes) -> list[tuple[int, int, int, int]]:
    """(line, start byte, end byte, value) of one-line int literals inside functions,
    not inside f-strings (whose positions Python 3.11 does not report reliably)."""
    tree = _parse(content)
    if tree is None:
        return []
    found: list[tuple[int, int, int, int]] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        if isinstance(node, ast.JoinedStr):
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            in_function = True
        if (
            in_function
            and isinstance(node, ast.Constant)
            and type(node.value) is int
            and node.lineno == node.end_lineno
            and node.end_col_offset is not None
        ):
            found.append((node.lineno, node.col_offset, node.end_col_offset, node.value))
        stack.extend((child, in_function) for child in ast.iter_child_nodes(node))
    return sorted(found)


def _top_level_functions(content: bytes) -> list[tuple[int, str]]:
    tree = _parse(content)
    if tree is None:
        return []
    return [
        (node.lineno, node.name)
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


# -- timing ---------------------------------------------------------------------------


def referenced_functions(state: RepoState) -> set[tuple[str, str]]:
    """(path, name) of top-level symbols that edges from other files point at."""
    found = set()
    for src, dst, kind in state.edges:
        if kind in ("CALLS", "USES", "REFERENCES") and dst.startswith("sym:"):
            path, qualname = dst[4:].split(":", 1)
            if "." not in qualname and path_of(src) != path:
                found.add((path, qualname))
    return found


def edit_event(stamp: Stamp, edit: Edit) -> EventBase:
    if edit.content is None:
        return stamp.deleted(edit.path)
    return scan_event(stamp, edit.path, edit.content, origin="watch")


def timed_edits(
    files: dict[str, bytes], index: RepoIndex, stamp: Stamp, count: int, seed: int
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """Latency of ``count`` planned edits of ``files`` (what ``index`` was built from);
    returns the results and the files' final contents."""
    planner = EditPlanner(files, referenced_functions(index.state), seed)
    edits = planner.plan(count)
    events = [edit_event(stamp, edit) for edit in edits]
    rows = []
    for edit, event in zip(edits, events, strict=True):
        with GcMeter() as collector:
            started, cpu = time.perf_counter(), time.process_time()
            delta = index.handle(event, 0.0)
            ms = (time.perf_counter() - started) * 1000
            cpu_ms = (time.process_time() - cpu) * 1000
        if delta is None:
            raise RuntimeError(f"edit event {event.seq} was not next in sequence")
        owners = {path_of(e.src) for e in delta.edges_upserted}
        owners |= {path_of(k[0]) for k in delta.edges_removed}
        rows.append(
            {
                "kind": edit.kind,
                "path": edit.path,
                "note": edit.note,
                "ms": ms,
                "cpu_ms": cpu_ms,
                "gc_ms": collector.seconds * 1000,
                "nodes_changed": len(delta.nodes_upserted) + len(delta.nodes_removed),
                "edges_changed": len(delta.edges_upserted) + len(delta.edges_removed),
                "files_with_edge_changes": len(owners - {None}),
            }
        )
    summary = {kind: latency([r for r in rows if r["kind"] == kind]) for kind in KINDS}
    summary["all"] = latency(rows)
    return {"summary": summary, "edits": rows}, planner.current


_LITERAL = re.compile(rb"(?<![\w.])\d+(?![\w.])")


def repeated_saves(
    files: dict[str, bytes], index: RepoIndex, stamp: Stamp, count: int = 10, saves: int = 5
) -> dict[str, Any]:
    """An editor saving one file again and again: the ``count`` largest Python files,
    each saved ``saves`` times (an int literal past its middle becomes its successor),
    then put back (untimed). The first save of a file is re-parsed from scratch; the
    next ones from its previous tree (processors/parsing/reuse.py)."""
    first: list[float] = []
    again: list[float] = []
    largest = sorted((p for p in files if p.endswith(".py")), key=lambda p: -len(files[p]))
    for path in largest[:count]:
        content = original = files[path]
        for save in range(saves):
            found = _LITERAL.search(content, len(content) // 2) or _LITERAL.search(content)
            if found is None:
                break
            bumped = str(int(found.group()) + 1).encode()
            content = content[: found.start()] + bumped + content[found.end() :]
            event = scan_event(stamp, path, content, origin="watch")
            started = time.perf_counter()
            if index.handle(event, 0.0) is None:
                raise RuntimeError(f"save event {event.seq} was not next in sequence")
            (again if save else first).append((time.perf_counter() - started) * 1000)
        if index.handle(scan_event(stamp, path, original, origin="watch"), 0.0) is None:
            raise RuntimeError(f"restoring {path} was not next in sequence")
    return {
        "files": largest[:count],
        "first_save": {"n": len(first), "p50_ms": percentile(first, 0.5), "max_ms": max(first)},
        "saves_after": {
            "n": len(again),
            "p50_ms": percentile(again, 0.5),
            "p95_ms": percentile(again, 0.95),
            "max_ms": max(again),
        },
    }


def percentile(values: list[float], p: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)] if ordered else math.nan


def latency(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ms = [r["ms"] for r in rows]
    return {
        "n": len(rows),
        "p50_ms": percentile(ms, 0.5),
        "p95_ms": percentile(ms, 0.95),
        "max_ms": max(ms, default=math.nan),
        "p95_cpu_ms": percentile([r["cpu_ms"] for r in rows], 0.95),
        "max_gc_ms": max((r["gc_ms"] for r in rows), default=math.nan),
        "mean_edges_changed": sum(r["edges_changed"] for r in rows) / max(1, len(rows)),
        "max_files_with_edge_changes": max((r["files_with_edge_changes"] for r in rows), default=0),
    }
