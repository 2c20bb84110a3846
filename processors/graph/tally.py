"""A file's resolved edges as sums of per-question contributions, kept to be patched.

Each distinct question of a file (answers.py) is used by references alike in scope,
qualifier, name and kind, or by base-class declarations; each use adds its count, at the
confidence of each target, to the tally of an edge key. An edge weighs the sum of its
tally and carries the strongest confidence in it, and the first line of the file where a
reference behind it is written (its call site: the smallest line of its uses, issue 20).
The file-to-file edges (IMPORTS, REFERENCES, TESTS) follow from the bindings and from
counters the same contributions keep: ``into`` (structural references per file) and
``tested`` (a test file's qualifying reference edges per file).

A fresh build adds every question's contribution; a dependent whose facts did not change
takes back the old answer's contribution and adds the new one, for the questions whose
answers changed only (issue 3: a hub's deletion costs what its dependents asked of it,
not their size). Both run the same ``_contribute``, so a patched tally is the tally a
fresh build of the same answers holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from processors.graph.answers import Question, Target
from processors.graph.bindings import Bindings
from processors.graph.resolver import RANK
from stores.projections.ids import external_id, file_id, is_test_path, path_of, symbol_id
from stores.records import EdgeRecord, FileRecord, NodeRecord, trusted

EdgeKey = tuple[str, str, str]
# (source node, edge kind, how many references ask, the first line one is written on)
Use = tuple[str, str, int, int]
Attrs = tuple[float, str]  # an edge's weight and confidence
REFERENCE_EDGE = {"call": "CALLS", "type": "USES", "use": "REFERENCES"}
STRUCTURAL = frozenset({"import", "same_file", "same_folder"})
TESTED_KINDS = frozenset({"CALLS", "USES", "IMPORTS", "REFERENCES"})

# A tally packs into an int the edge's first line (its lowest 32 bits) and one count per
# confidence rank above it, 32 bits each: weight, strongest confidence and line read off
# it, adding or taking back a use is one addition (and a line's minimum), and a tally
# that changed in its line only differs as one whose counts changed (`patch`). Packed
# with the counts, a line costs a tally one more digit of its int (4 bytes), where a dict
# of lines beside it would cost an entry per edge.
_BITS = 32
_MASK = (1 << _BITS) - 1
_CONFIDENCES = tuple(sorted(RANK, key=RANK.__getitem__))
_SHIFT = {confidence: _BITS * (rank + 1) for confidence, rank in RANK.items()}
# any count but name matches
_STRUCTURAL_BITS = ((1 << (_BITS * RANK["name_match"])) - 1) << _BITS


@dataclass(slots=True)
class FileTally:
    path: str
    test: bool  # a test file keeps TESTS edges
    uses: dict[Question, tuple[Use, ...]]  # a function of the record: never mutated
    tally: dict[EdgeKey, int] = field(default_factory=dict)
    into: Counter[str] = field(default_factory=Counter)  # structural references per file
    tested: Counter[str] = field(default_factory=Counter)  # qualifying reference edges
    file_edges: dict[EdgeKey, Attrs] = field(default_factory=dict)

    def copy(self) -> FileTally:
        return replace(
            self, tally=dict(self.tally), into=self.into.copy(), tested=self.tested.copy()
        )

    def add(self, uses: tuple[Use, ...], targets: tuple[Target, ...]) -> None:
        """A fresh contribution (a fresh build's: ``tested`` follows in ``edges``)."""
        _contribute(self, uses, targets, 1, None, None)

    def swap(
        self,
        before: tuple[tuple[Use, ...], tuple[Target, ...]],
        after: tuple[tuple[Use, ...], tuple[Target, ...]],
        touched: dict[EdgeKey, int],
        relines: set[EdgeKey],
    ) -> None:
        """Replace one question's contribution (its uses, its answer's targets) with
        another; ``touched`` keeps each key's tally from before the first swap,
        ``relines`` collects the keys that lost the use their line came from (`reline`)."""
        _contribute(self, *before, -1, touched, relines)
        _contribute(self, *after, 1, touched, relines)

    def reline(
        self, keys: set[EdgeKey], targets_of: Callable[[Question], tuple[Target, ...]]
    ) -> None:
        """Give ``keys`` (still in the tally) the smallest line of their uses once more,
        after the uses their line came from were taken back; ``targets_of``: each
        question's targets now. A pass over the file's uses, made only when a taken-back
        use held a line that other uses of its edge still stand behind (an edit that
        moved lines, a question answered elsewhere now)."""
        keys = {key for key in keys if key in self.tally}
        if not keys:
            return
        first: dict[EdgeKey, int] = {}
        for question, uses in self.uses.items():
            targets = targets_of(question)
            for src, kind, _, line in uses:
                for target in targets:
                    key = (src, target.node, kind)
                    if key in keys and line < first.get(key, line + 1):
                        first[key] = line
        for key, line in first.items():
            packed = self.tally[key]
            self.tally[key] = packed - (packed & _MASK) + line

    def edges(self) -> dict[EdgeKey, EdgeRecord]:
        """Every reference and inheritance edge (and TESTS from test functions); counts
        ``tested`` afresh."""
        edges: dict[EdgeKey, EdgeRecord] = {}
        tests: dict[EdgeKey, EdgeRecord | None] = {}
        self.tested = Counter()
        for key, packed in self.tally.items():
            edges[key] = tally_edge(key, packed)
            if self.test:
                self._retest(key, 0, packed, tests)
        edges.update((key, edge) for key, edge in tests.items() if edge is not None)
        return edges

    def patch(self, touched: dict[EdgeKey, int]) -> dict[EdgeKey, EdgeRecord | None]:
        """The edges whose tally ``touched`` changed (None: gone), TESTS ones included."""
        changes: dict[EdgeKey, EdgeRecord | None] = {}
        for key, was in touched.items():
            now = self.tally.get(key, 0)
            if now == was:
                continue
            changes[key] = tally_edge(key, now) if now else None
            if self.test:
                self._retest(key, was, now, changes)
        return changes

    def _retest(
        self, key: EdgeKey, was: int, now: int, out: dict[EdgeKey, EdgeRecord | None]
    ) -> None:
        """Keep ``tested`` and a test function's TESTS edge for a key whose tally went
        from ``was`` to ``now`` (name matches test nothing)."""
        tested = _tested_path(self.path, key[1], key[2])
        if tested is None:
            return
        before, after = bool(was & _STRUCTURAL_BITS), bool(now & _STRUCTURAL_BITS)
        if before != after:
            self.tested[tested] += 1 if after else -1
            if not self.tested[tested]:
                del self.tested[tested]
        if key[2] == "CALLS" and key[0] != file_id(self.path) and _is_test_function(key[0]):
            if after:
                tests = (key[0], key[1], "TESTS")
                out[tests] = _edge(tests, 1.0, _confidence(now), now & _MASK or None)
            elif before:
                out[(key[0], key[1], "TESTS")] = None

    def between_files(self, binds: Bindings) -> dict[EdgeKey, Attrs]:
        """IMPORTS and REFERENCES between files, and a test file's TESTS, from the
        bindings and the counters: each key's (weight, confidence)."""
        edges = _imports(self.path, binds, self.into)
        if self.test:
            tested = self.tested.copy()
            for (_, dst, kind), (_, confidence) in edges.items():
                path = _tested_path(self.path, dst, kind)
                if path is not None and confidence != "name_match":
                    tested[path] += 1
            fid = file_id(self.path)
            for path, count in sorted(tested.items()):
                edges[(fid, file_id(path), "TESTS")] = (float(count), "structural")
        return edges


def file_edge(key: EdgeKey, attrs: Attrs) -> EdgeRecord:
    # confidence: one of RANK's, or "structural" for file-to-file edges
    return _edge(key, float(attrs[0]), attrs[1])


def uses_of(record: FileRecord, nodes: dict[str, NodeRecord]) -> dict[Question, tuple[Use, ...]]:
    """The file's questions, references first (in order of first use), then the bases
    and interfaces its declarations name, each with the edges it stands for."""
    path, fid = record.path, file_id(record.path)
    groups: dict[tuple[str | None, str | None, str, str], list[int]] = {}
    for r in record.references:
        group = (r.scope, r.qualifier, r.name, r.kind)
        found = groups.get(group)
        if found is None:
            groups[group] = [1, r.line]
        else:
            found[0] += 1
            if r.line < found[1]:
                found[1] = r.line
    uses: dict[Question, list[Use]] = {}
    sources: dict[str | None, str] = {}
    for (scope, qualifier, name, ref_kind), (count, line) in groups.items():
        src = sources.get(scope)
        if src is None:
            sid = symbol_id(path, scope) if scope else None
            src = sources[scope] = sid if sid is not None and sid in nodes else fid
        use = (src, REFERENCE_EDGE[ref_kind], count, line)
        uses.setdefault(("ref", qualifier, name, scope), []).append(use)
    for sym in record.symbols:
        sid = symbol_id(path, sym.qualname)
        for kind, written in [("EXTENDS", b) for b in sym.bases] + [
            ("IMPLEMENTS", i) for i in sym.implements
        ]:
            # the declaration's line: where a class names its bases
            use = (sid, kind, 1, sym.line_start)
            uses.setdefault(("type", None, written, sym.parent), []).append(use)
    return {question: tuple(found) for question, found in uses.items()}


def _contribute(
    tally: FileTally,
    uses: tuple[Use, ...],
    targets: tuple[Target, ...],
    sign: int,
    touched: dict[EdgeKey, int] | None,
    relines: set[EdgeKey] | None,
) -> None:
    """Add (``sign`` 1) or take back (-1) the uses' counts on each target's edge key; a
    key added to takes the smaller line, one that loses the use its line came from but
    keeps other uses goes to ``relines`` (`FileTally.reline`)."""
    counts, into = tally.tally, tally.into
    for src, kind, count, line in uses:
        for target in targets:
            if target.node == src:
                continue  # recursion is not a dependency
            key = (src, target.node, kind)
            packed = counts.get(key, 0)
            if touched is not None:
                touched.setdefault(key, packed)
            packed += sign * (count << _SHIFT[target.confidence])
            if packed >> _BITS:  # a count left
                first = packed & _MASK
                if sign > 0:
                    if not first or line < first:
                        packed += line - first
                elif line == first and relines is not None:
                    relines.add(key)
                counts[key] = packed
            else:
                del counts[key]
            if target.path != tally.path and target.confidence in STRUCTURAL:
                into[target.path] += sign * count
                if not into[target.path]:
                    del into[target.path]


def _confidence(packed: int) -> str:
    for rank, confidence in enumerate(_CONFIDENCES):
        if (packed >> (_BITS * (rank + 1))) & _MASK:
            return confidence
    raise ValueError("an empty tally has no confidence")


def tally_edge(key: EdgeKey, packed: int) -> EdgeRecord:
    """The edge a tally stands for: the weight its counts sum to, the strongest
    confidence with a count, its first line."""
    weight = sum((packed >> (_BITS * (rank + 1))) & _MASK for rank in range(len(_CONFIDENCES)))
    return _edge(key, float(weight), _confidence(packed), packed & _MASK or None)


def _edge(key: EdgeKey, weight: float, confidence: str, line: int | None = None) -> EdgeRecord:
    """Built as `trusted`: the keys are node ids, the confidence one of RANK's (an
    EdgeRecord validated: 3.8 us; pydantic's ``model_construct``: 6.0)."""
    return trusted(
        EdgeRecord,
        {
            "src": key[0],
            "dst": key[1],
            "kind": key[2],
            "weight": weight,
            "confidence": confidence,
            "line": line,
        },
    )


def _tested_path(own: str, dst: str, kind: str) -> str | None:
    """The file an edge of this kind to ``dst`` counts as tested, if any."""
    if kind not in TESTED_KINDS:
        return None
    path = path_of(dst)
    if path is None or path == own or is_test_path(path):
        return None
    return path


def _is_test_function(node_id: str) -> bool:
    name = node_id.rsplit(":", 1)[1].rsplit(".", 1)[-1]
    return name.startswith(("test", "Test"))


def _imports(path: str, binds: Bindings, into: Counter[str]) -> dict[EdgeKey, Attrs]:
    fid = file_id(path)
    edges: dict[EdgeKey, Attrs] = {}
    imported: set[str] = set()
    for module in binds.targets:
        if module.external is not None:
            _set(edges, (fid, external_id(module.external), "IMPORTS"), 1.0, "structural")
            continue
        files = [f for f in module.files if f != path]
        if not files:
            continue
        referenced = [f for f in files if into[f]]
        for f in files:
            imported.add(f)
            if referenced and not into[f]:
                continue  # a package import weighs what it is used for
            weight = float(into[f]) if referenced else round(1.0 / len(files), 4)
            _set(edges, (fid, file_id(f), "IMPORTS"), weight, "import")
    for target, count in sorted(into.items()):
        if target not in imported:
            _set(edges, (fid, file_id(target), "REFERENCES"), float(count), "same_folder")
    return edges


def _set(edges: dict[EdgeKey, Attrs], key: EdgeKey, weight: float, confidence: str) -> None:
    """One edge per file pair and kind: the largest weight wins (a package imported twice)."""
    old = edges.get(key)
    if old is None or weight > old[0]:
        edges[key] = (weight, confidence)
