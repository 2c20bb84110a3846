"""What an impact question names as changed, read against the index (issue 20): a
unified diff's files and lines, a list of files, a list of symbols, each made into the
`Change` values query/search/impact.py walks from.

A path must lie inside the repository (relative, never climbing out with '..') and be
one the index holds, but a diff's new file; otherwise every such path is named in one
`BadRequest` (400). A malformed diff is a `BadRequest` too; a symbol no definition
matches is navigation's `NotFound` (404)."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from query.read_model import RepoView
from query.search import impact as core
from query.search import navigation as nav
from query.search.adjacency import Adjacency
from query.search.unified_diff import DiffError, FileDiff, parse_diff
from query.service.errors import BadRequest
from query.service.navigation import defined
from stores.projections.ids import path_of


def _inside(path: str) -> str | None:
    """The path relative to the repository root, or None when it leaves the repository
    (absolute, or climbing out with '..')."""
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return None
    normal = posixpath.normpath(path.strip())
    return None if normal == ".." or normal.startswith("../") or normal == "." else normal


def _refuse_paths(view: RepoView, outside: Sequence[str], unknown: Sequence[str]) -> None:
    problems = []
    if outside:
        problems.append(f"paths outside the repository: {', '.join(map(repr, outside))}")
    if unknown:
        problems.append(
            f"files the index of {view.state.repo!r} does not hold: "
            f"{', '.join(map(repr, unknown))} (see /repositories/{view.state.repo}/files)"
        )
    if problems:
        raise BadRequest("; ".join(problems))


def diff_changes(view: RepoView, text: str) -> list[core.Change]:
    try:
        diffs = parse_diff(text)
    except DiffError as exc:
        raise BadRequest(f"malformed diff: {exc}") from exc
    files = view.state.files
    outside, unknown, changes = [], [], []
    for diff in diffs:
        wanted = [p for p in (diff.old_path, diff.new_path) if p is not None]
        if any(_inside(p) is None for p in wanted):
            outside += [p for p in dict.fromkeys(wanted) if _inside(p) is None]
            continue
        path = _inside(diff.path) or diff.path
        record = files.get(path)
        if diff.status == "added" or record is not None:
            changes.append(core.change_of(_at(diff, path), record))
        else:
            unknown.append(path)
    _refuse_paths(view, outside, unknown)
    return changes


def _at(diff: FileDiff, path: str) -> FileDiff:
    """The diff with its indexed path normalized."""
    if diff.old_path is None:
        return FileDiff(None, path, diff.status, diff.lines, diff.whole)
    return FileDiff(path, diff.new_path, diff.status, diff.lines, diff.whole)


def file_changes(view: RepoView, paths: Sequence[str]) -> list[core.Change]:
    files = view.state.files
    outside = [p for p in paths if _inside(p) is None]
    inside = list(dict.fromkeys(p for raw in paths if (p := _inside(raw)) is not None))
    _refuse_paths(view, outside, [p for p in inside if p not in files])
    return [core.whole_change(files[p]) for p in inside]


def symbol_changes(view: RepoView, adjacency: Adjacency, names: Sequence[str]) -> list[core.Change]:
    """Each name's best definitions (all those of the best kind of match: exact, then
    suffix, then simple name), grouped by file in the order first named."""
    files = view.state.files
    by_file: dict[str, dict[str, None]] = {}
    outside = []
    for raw in names:
        path, _, name = raw.rpartition(":")
        wanted = _inside(path) if path else None
        if path and wanted is None:
            outside.append(path)
            continue
        found = defined(adjacency, name, wanted, view.state.repo)
        best = nav.match_of(found[0], name)
        for node in found:
            where = path_of(node)
            if nav.match_of(node, name) == best and where is not None:
                by_file.setdefault(where, {})[node] = None
    _refuse_paths(view, outside, [])
    changes = []
    for path, nodes in by_file.items():
        record = files.get(path)
        symbols = {s.qualname: s for s in record.symbols} if record else {}
        qualnames = [nav.qualname_of(n) or "" for n in nodes]
        changes.append(
            core.Change(
                path,
                "modified",
                None,
                (),
                False,
                record is not None,
                tuple(symbols[q] for q in qualnames if q in symbols),
                False,
                tuple(nodes),
            )
        )
    return changes
