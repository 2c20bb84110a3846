"""The file graph's state, its dependencies held by file pair, against the form it
replaced (each dependency edge's pair and weight in a dict keyed by edge): folded
through random histories (IMPORTS and REFERENCES on one pair, name matches, self
loops, symbol edges, removals of present and absent keys, a key touched twice, files
leaving and entering the graph), it answers alike after every delta, and so does the
state built from a `RepoState` folded beside it."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest

from query.churn.cycles import import_cycles
from stores.deltas import GraphDelta
from stores.projections.file_graph import FileGraph, file_arc, is_clustered
from stores.projections.graph_state import FileGraphState
from stores.records import EdgeRecord, FileRecord, Keyword
from stores.repo_state import RepoState
from tests.factories import graph_delta

EdgeKey = tuple[str, str, str]
PATHS = [f"pkg/m{i}.py" for i in range(7)]
NODES = [f"file:{p}" for p in PATHS] + ["sym:pkg/m0.py:f", "dir:pkg", "ext:os"]
KINDS = ["IMPORTS", "REFERENCES", "CALLS"]
CONFIDENCES = ["import", "import", "same_folder", "name_match"]
WEIGHTS = [0.1, 0.2, 0.3, 0.7, 1.0, 2.5]


@dataclass
class Oracle:
    """The state as it was: each dependency edge by key (stores/projections/graph_state.py
    before its arcs were held by file pair)."""

    repo: str
    seq: int = 0
    files: dict[str, tuple[Keyword, ...]] = field(default_factory=dict)
    edges: dict[EdgeKey, tuple[tuple[str, str], float]] = field(default_factory=dict)
    scanning: bool = False
    indexed_commit: str | None = None
    changed_seq: int = 0

    def apply(self, delta: GraphDelta) -> bool:
        if delta.seq <= self.seq:
            return False
        changed = False
        for path in delta.files_removed:
            changed |= self.files.pop(path, None) is not None
        for record in delta.files_upserted:
            if is_clustered(record):
                changed |= self.files.get(record.path) != record.keywords
                self.files[record.path] = record.keywords
            else:
                changed |= self.files.pop(record.path, None) is not None
            if record.origin == "scan" and delta.barrier is None:
                self.scanning = True
        for key in delta.edges_removed:
            changed |= self.edges.pop(key, None) is not None
        for edge in delta.edges_upserted:
            arc = file_arc(edge)
            if arc is not None:
                changed |= self.edges.get(edge.key) != (arc, edge.weight)
                self.edges[edge.key] = (arc, edge.weight)
        if delta.barrier == "scan_completed":
            self.scanning = False
        if delta.indexed_commit is not None:
            self.indexed_commit = delta.indexed_commit
        self.seq = delta.seq
        if changed:
            self.changed_seq = delta.seq
        return True

    @classmethod
    def of(cls, state: RepoState) -> Oracle:
        folded = cls(state.repo, seq=state.seq, indexed_commit=state.indexed_commit)
        folded.files = {p: r.keywords for p, r in state.files.items() if is_clustered(r)}
        for key, edge in state.edges.items():
            arc = file_arc(edge)
            if arc is not None:
                folded.edges[key] = (arc, edge.weight)
        folded.changed_seq = state.seq
        return folded

    def graph(self) -> FileGraph:
        arcs: dict[tuple[str, str], float] = {}
        for (src, dst), weight in self.edges.values():
            if src in self.files and dst in self.files:
                arcs[(src, dst)] = arcs.get((src, dst), 0.0) + weight
        return FileGraph(tuple(sorted(self.files)), dict(sorted(arcs.items())))


def record(rng: random.Random, path: str) -> FileRecord:
    language = rng.choice(["python", "python", "python", None, "tsconfig"])
    terms = rng.sample(["alpha", "beta", "gamma"], rng.randint(0, 2))
    return FileRecord(
        path=path,
        language=language,
        size=10,
        lines=1,
        content_hash=f"h{rng.randint(0, 3)}",
        skipped=None if rng.random() < 0.9 else "binary",
        parse_errors=0,
        keywords=tuple(Keyword(term=t, weight=rng.choice(WEIGHTS)) for t in terms),
        origin=rng.choice(["scan", "watch", "watch"]),  # type: ignore[arg-type]
        commit=None,
        working_tree=True,
        producer="p1",
    )


def history(rng: random.Random, count: int) -> list[GraphDelta]:
    keys: list[EdgeKey] = []
    deltas = []
    for seq in range(1, count + 1):
        removed = rng.sample(keys, min(len(keys), rng.randint(0, 5)))
        removed += [(rng.choice(NODES), rng.choice(NODES), "IMPORTS")] * (rng.random() < 0.3)
        upserted = []
        for _ in range(rng.randint(0, 10)):
            if (removed or keys) and rng.random() < 0.4:
                src, dst, kind = rng.choice(removed or keys)
            else:
                src, dst, kind = rng.choice(NODES), rng.choice(NODES), rng.choice(KINDS)
            edge = EdgeRecord(
                src=src,
                dst=dst,
                kind=kind,
                weight=rng.choice(WEIGHTS),
                confidence=rng.choice(CONFIDENCES),  # type: ignore[arg-type]
            )
            upserted += [edge] * (1 + (rng.random() < 0.15))
            keys.append(edge.key)
        files = tuple(record(rng, p) for p in rng.sample(PATHS, rng.randint(0, 3)))
        gone = tuple(
            p for p in rng.sample(PATHS, rng.randint(0, 1)) if p not in {f.path for f in files}
        )
        barrier = "scan_completed" if rng.random() < 0.2 else None
        deltas.append(
            graph_delta(
                "app",
                seq,
                files_upserted=files,
                files_removed=gone,
                edges_removed=tuple(removed),
                edges_upserted=tuple(upserted),
                barrier=barrier,
                indexed_commit=f"c{seq}" if barrier else None,
            )
        )
    return deltas


def assert_alike(state: FileGraphState, oracle: Oracle) -> None:
    assert (state.repo, state.seq, state.files, state.scanning) == (
        oracle.repo,
        oracle.seq,
        oracle.files,
        oracle.scanning,
    )
    assert (state.indexed_commit, state.changed_seq) == (oracle.indexed_commit, oracle.changed_seq)
    graph, expected = state.graph(), oracle.graph()
    assert graph.files == expected.files
    assert list(graph.arcs.items()) == list(expected.arcs.items())  # bit for bit, in order
    assert Counter(state.weighted_arcs()) == Counter(oracle.edges.values())
    probes = [*oracle.edges, *((a, b, k) for a in NODES for b in NODES[:4] for k in KINDS)]
    for key in probes:
        held = oracle.edges.get(key)
        assert state.arc_of(key) == (held[0] if held is not None else None), key
    arcs = [arc for arc, _ in oracle.edges.values()]
    assert import_cycles(state.files, (a for a, _ in state.weighted_arcs())) == import_cycles(
        oracle.files, arcs
    )


@pytest.mark.parametrize("seed", range(40))
def test_the_pairs_answer_what_the_edge_keys_answered(seed: int) -> None:
    rng = random.Random(seed)
    state, oracle, repo = FileGraphState("app"), Oracle("app"), RepoState("app")
    for delta in history(rng, 40):
        assert state.apply(delta) == oracle.apply(delta)
        repo.apply(delta)
        assert_alike(state, oracle)
        assert not state.apply(delta)  # replayed: a no-op
        assert_alike(FileGraphState.of(repo), Oracle.of(repo))
    copied = state.copy()
    assert_alike(copied, oracle)
    rest = history(random.Random(seed + 1000), 45)[40:]
    for delta in rest:
        state.apply(delta)
    assert_alike(copied, oracle)  # the copy does not follow


def test_one_pair_weighs_its_imports_and_its_references() -> None:
    a, b = "file:pkg/a.py", "file:pkg/b.py"
    python = {"language": "python", "size": 1, "lines": 1, "content_hash": "h", "skipped": None}
    files = tuple(
        FileRecord(
            path=p,
            **python,  # type: ignore[arg-type]
            parse_errors=0,
            origin="watch",
            commit=None,
            working_tree=True,
            producer="p1",
        )
        for p in ("pkg/a.py", "pkg/b.py")
    )
    edges = (
        EdgeRecord(src=a, dst=b, kind="IMPORTS", weight=0.7, confidence="import"),
        EdgeRecord(src=a, dst=b, kind="REFERENCES", weight=0.2, confidence="same_folder"),
        EdgeRecord(src=a, dst=b, kind="CALLS", weight=5.0, confidence="import"),
        EdgeRecord(src=b, dst=a, kind="IMPORTS", weight=9.0, confidence="name_match"),
        EdgeRecord(src=a, dst=a, kind="IMPORTS", weight=9.0, confidence="import"),
    )
    state = FileGraphState("app")
    state.apply(graph_delta("app", 1, files_upserted=files, edges_upserted=edges))
    assert state.graph().arcs == {("pkg/a.py", "pkg/b.py"): 0.7 + 0.2}
    assert state.arc_of((a, b, "REFERENCES")) == ("pkg/a.py", "pkg/b.py")
    assert state.arc_of((a, b, "CALLS")) is None and state.arc_of((b, a, "IMPORTS")) is None
    state.apply(graph_delta("app", 2, edges_removed=((a, b, "IMPORTS"),)))
    assert state.graph().arcs == {("pkg/a.py", "pkg/b.py"): 0.2}
    assert state.changed_seq == 2
