"""Impact analysis (issue 20): what a change touches, before an agent edits or a
reviewer merges. Pure: each function reads the state's records or its `Adjacency` and
returns values; query/service/impact.py stamps, bounds and budgets them.

What changed. A diff's old-side lines (unified_diff.py) fall in symbols: each line
counts for the innermost symbol of the file whose lines hold it (a method, not its
class), and a line in no symbol (an import, a constant, line 0: the top of the file)
for the file itself, its module level. A file changed whole (deleted, renamed, binary,
or named in a list of files) counts for the file and every symbol in it. A new file has
nothing indexed, so nothing indexed depends on it.

What depends on it (`dependents`). The edges pointing at the changed nodes, walked
backwards breadth-first to ``depth`` hops: every dependency kind (DEPENDENCY_KINDS:
calls, uses, references, imports, inheritance, tests), not structure. Each dependent
has its hop distance and the weakest confidence on its path (``import`` and
``structural`` > ``same_file`` > ``same_folder`` > ``name_match``), the strongest of its
shortest paths (the shortest wins, even a guess). A hub (more connections than the
repository's p99, at least 50: the rule navigation's walks skip) and a node reached
only by a name-match guess are listed but not walked through: everything is two hops
from a hub, and a guess of a guess says nothing. At most ``max_nodes``, nearest and
strongest first.

Which tests exercise it (`tests_of`): a test among the dependents (it calls or imports
the change), a test file whose TESTS edges point at a changed or dependent file, one
named after such a file (named_tests.py: ``test_<stem>.py``, ``<stem>_test.go``,
``FooTest.java``, ...), and a changed test file itself. A public change no test reaches
(`untested`) is one whose file no test is linked to and none of whose dependents, by a
resolved path, is a test or in a file a test is linked to.

How risky: impact_risk.py, whose rule every answer states.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from query.search.adjacency import CONFIDENCE_RANK, DEPENDENCY_KINDS, Adjacency
from query.search.unified_diff import FileDiff, Status
from stores.projections.ids import file_id, is_test_path, path_of, symbol_id
from stores.records import FileRecord, SymbolRecord

TestLinkKind = Literal["changed", "calls", "graph", "name"]
LINK_RANK: Mapping[str, int] = {"changed": 0, "calls": 1, "graph": 2, "name": 3}


@dataclass(frozen=True, slots=True)
class Change:
    """One changed file as the index sees it: ``path`` is its indexed (old) path, its new
    path for an added file; ``symbols`` the changed symbols (innermost), ``module_level``
    whether a change falls outside every symbol; ``starts`` the nodes walked from."""

    path: str
    status: Status
    new_path: str | None
    lines: tuple[int, ...]
    whole: bool
    indexed: bool
    symbols: tuple[SymbolRecord, ...] = ()
    module_level: bool = False
    starts: tuple[str, ...] = ()

    @property
    def units(self) -> tuple[tuple[str, bool], ...]:
        """What a test should reach, with whether it is public: the changed symbols,
        and the file when it changed whole or at module level."""
        found = [(symbol_id(self.path, s.qualname), s.exported) for s in self.symbols]
        if self.indexed and (self.whole or self.module_level):
            found.insert(0, (file_id(self.path), True))
        return tuple(found)


def innermost(record: FileRecord, lines: Iterable[int]) -> tuple[tuple[SymbolRecord, ...], bool]:
    """The innermost symbol holding each line (in line order) and whether a line lies
    in none (module level)."""
    found: dict[str, SymbolRecord] = {}
    module_level = False
    for line in lines:
        holding = [s for s in record.symbols if s.line_start <= line <= s.line_end]
        if not holding:
            module_level = True
            continue
        best = min(holding, key=lambda s: (s.line_end - s.line_start, -s.line_start, s.qualname))
        found.setdefault(best.qualname, best)
    ordered = sorted(found.values(), key=lambda s: (s.line_start, s.qualname))
    return tuple(ordered), module_level


def change_of(diff: FileDiff, record: FileRecord | None) -> Change:
    """What one file of a diff changes in the index (``record``: its indexed record,
    None for a new file)."""
    if record is None:
        return Change(diff.path, diff.status, diff.new_path, diff.lines, diff.whole, False)
    if diff.whole:
        return whole_change(record, diff.status, diff.new_path, diff.lines)
    symbols, module_level = innermost(record, diff.lines)
    starts = [symbol_id(record.path, s.qualname) for s in symbols]
    if module_level:
        starts.insert(0, file_id(record.path))
    return Change(
        record.path,
        diff.status,
        diff.new_path,
        diff.lines,
        False,
        True,
        symbols,
        module_level,
        tuple(starts),
    )


def whole_change(
    record: FileRecord,
    status: Status = "modified",
    new_path: str | None = None,
    lines: tuple[int, ...] = (),
) -> Change:
    """A file changed whole: the file and every symbol in it are walked from."""
    starts = (file_id(record.path), *(symbol_id(record.path, s.qualname) for s in record.symbols))
    return Change(record.path, status, new_path, lines, True, True, (), False, starts)


@dataclass(frozen=True, slots=True)
class Dependent:
    """A node depending on the change ``hop`` edges away, through ``via`` (by an edge of
    ``kind``), from the changed node ``root``, no stronger than ``confidence``."""

    node: str
    hop: int
    confidence: str
    via: str
    kind: str
    root: str


def weaker(path: str | None, edge: str) -> str:
    """The weaker of a path's confidence (None: the path has no edge yet) and an edge's."""
    if path is None or CONFIDENCE_RANK.get(edge, 9) > CONFIDENCE_RANK.get(path, 9):
        return edge
    return path


def dependents(
    adjacency: Adjacency, starts: Collection[str], *, depth: int, max_nodes: int
) -> tuple[tuple[Dependent, ...], bool]:
    """What depends on ``starts`` within ``depth`` hops, by hop, then confidence, then
    id; and whether ``max_nodes`` cut the walk."""
    seen = set(starts)
    confidence: dict[str, str | None] = dict.fromkeys(starts)
    root = {s: s for s in starts}
    frontier = sorted(starts)
    found: list[Dependent] = []
    for hop in range(1, depth + 1):
        best: dict[str, tuple[tuple[int, str, str], Dependent]] = {}
        for node in frontier:
            for edge in adjacency.edges_in(node):
                other = edge.src
                if edge.kind not in DEPENDENCY_KINDS or other in seen or other == node:
                    continue
                conf = weaker(confidence[node], edge.confidence)
                key = (CONFIDENCE_RANK.get(conf, 9), node, edge.kind)
                held = best.get(other)
                if held is None or key < held[0]:
                    best[other] = (key, Dependent(other, hop, conf, node, edge.kind, root[node]))
        level = sorted(best.values(), key=lambda kv: (kv[0][0], kv[1].node))
        frontier = []
        for _, dep in level:
            if len(found) >= max_nodes:
                return tuple(found), True
            found.append(dep)
            seen.add(dep.node)
            confidence[dep.node], root[dep.node] = dep.confidence, dep.root
            if dep.confidence != "name_match" and not adjacency.is_hub(dep.node):
                frontier.append(dep.node)
        if not frontier:
            break
    return tuple(found), False


@dataclass(frozen=True, slots=True)
class TestLink:
    """A test file exercising the change: ``hop`` 0 when it exercises a changed file
    (``of``) itself, else the hop of the dependent it exercises; ``link`` how it is
    known (changed, calls: it is a dependent, graph: TESTS edges, name: its name)."""

    path: str
    link: TestLinkKind
    hop: int
    of: str


def tests_of(
    adjacency: Adjacency, changed: Sequence[str], found: Sequence[Dependent]
) -> tuple[TestLink, ...]:
    """The test files exercising the changed files (``changed``: indexed paths) and
    their dependents, each once at its nearest and strongest link, then by path."""
    best: dict[str, TestLink] = {}

    def offer(link: TestLink) -> None:
        held = best.get(link.path)
        if held is None or _test_key(link) < _test_key(held):
            best[link.path] = link

    def linked(path: str, hop: int) -> None:
        for edge in adjacency.tests(file_id(path)):
            test = path_of(edge.src)
            if test is not None and test != path:
                offer(TestLink(test, "graph", hop, path))
        for node in adjacency.tests_by_name(file_id(path)):
            test = path_of(node)
            if test is not None:
                offer(TestLink(test, "name", hop, path))

    for path in changed:
        if is_test_path(path):
            offer(TestLink(path, "changed", 0, path))
        linked(path, 0)
    nearest: dict[str, int] = {}  # a dependent file's tests, once, at its nearest hop
    for dep in found:
        where = path_of(dep.node)
        if where is None:
            continue
        if is_test_path(where):
            offer(TestLink(where, "calls", dep.hop, path_of(dep.root) or dep.root))
        elif where not in nearest:
            nearest[where] = dep.hop  # `found` is in hop order
    for where, hop in nearest.items():
        linked(where, hop)
    return tuple(sorted(best.values(), key=lambda t: (*_test_key(t), t.path)))


def _test_key(link: TestLink) -> tuple[int, int, str]:
    return (link.hop, LINK_RANK[link.link], link.of)


def tested(adjacency: Adjacency, paths: Iterable[str]) -> set[str]:
    """The files of ``paths`` a test file is linked to, by TESTS edges or by name."""
    return {p for p in paths if adjacency.tests(file_id(p)) or adjacency.tests_by_name(file_id(p))}


def untested(
    adjacency: Adjacency, changes: Sequence[Change], found: Sequence[Dependent]
) -> tuple[str, ...]:
    """The public changed units (`Change.units`) no test reaches: no test is linked to
    their file, and none of their dependents (by a resolved path, not a guess) is a test
    or in a file a test is linked to."""
    files = {p for d in found if (p := path_of(d.node)) is not None}
    linked = tested(adjacency, {*files, *(c.path for c in changes if c.indexed)})
    reached = {
        d.root
        for d in found
        if d.confidence != "name_match"
        and (is_test_path(path_of(d.node) or "") or path_of(d.node) in linked)
    }
    missing = []
    for change in changes:
        if is_test_path(change.path) or change.path in linked:
            continue
        missing += [u for u, public in change.units if public and u not in reached]
    return tuple(missing)
