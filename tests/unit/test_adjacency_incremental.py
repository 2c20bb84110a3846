"""The adjacency kept up to date delta by delta answers exactly what a rebuild answers.

The read model folds each delta into its adjacency (issue 15) instead of the query service
rebuilding it after every edit. These tests hold the folded one to `Adjacency.of(state)`
after every delta: the raw lists (the same records, in the same order), the degrees, the
hub threshold, the names, every accessor of every node and file, and the walks. The
deltas are real ones (RepoIndex over small generated Python repositories: files added,
edited, removed, in watch events and in commits) and synthetic ones that hit the corners
a parser rarely produces (a key removed and upserted again in one delta, upserted twice,
a node renamed or losing its path).
"""

from __future__ import annotations

import random

import pytest

import query.search.adjacency as adjacency
from processors.indexer import RepoIndex
from query.read_model import ReadModel
from query.search.adjacency import Adjacency
from query.search.adjacency_fold import threshold_of
from query.search.expansion import expand
from query.search.traversal import bfs, dfs, shortest_path
from stores.deltas import GraphDelta, SourceMark
from stores.edge_table import EdgeTable
from stores.projections.hubs import hub_threshold
from stores.records import EdgeRecord, NodeRecord
from stores.repo_state import RepoState
from tests.factories import Stamp

MODULES = [f"pkg/m{i}.py" for i in range(7)]
TESTS = ["tests/test_m0.py", "tests/test_m1.py", "tests/test_m3.py"]
METHODS = ["save", "run", "load", "__init__"]


def module_text(rng: random.Random, path: str) -> str:
    """A module importing a few others, with functions calling what it imports and
    classes whose common method names make name-match edges."""
    others = [m for m in MODULES if m != path]
    lines = []
    imported: list[str] = []
    for other in rng.sample(others, rng.randint(0, 3)):
        module = other[:-3].replace("/", ".")
        names = [f"f{j}" for j in rng.sample(range(4), rng.randint(1, 2))]
        if rng.random() < 0.3:
            lines.append(f"import {module}")
        else:
            lines.append(f"from {module} import {', '.join(names)}")
            imported += names
    if rng.random() < 0.2:
        lines.append("import os")
    lines.append("")
    for j in rng.sample(range(4), rng.randint(1, 4)):
        calls = rng.sample(imported, min(len(imported), rng.randint(0, 2)))
        body = [f"    {c}()" for c in calls] + [f"    x.{rng.choice(METHODS)}()"] * (
            rng.random() < 0.5
        )
        lines += [f"def f{j}(x):", *body, "    return 1", ""]
    for k in range(rng.randint(0, 2)):
        lines.append(f"class C{k}:")
        for method in rng.sample(METHODS, rng.randint(1, 3)):
            lines += [f"    def {method}(self):", f"        return f{rng.randint(0, 3)}(self)"]
        lines.append("")
    return "\n".join(lines) + "\n"


def suite_text(rng: random.Random, path: str) -> str:
    target = "pkg.m" + path.split("test_m")[1][:-3]
    names = rng.sample(["f0", "f1", "f2", "f3"], 2)
    return (
        f"from {target} import {', '.join(names)}\n\n"
        f"def test_it():\n    assert {names[0]}(1)\n    assert {names[1]}(2)\n"
    )


def text_of(rng: random.Random, path: str) -> str:
    return suite_text(rng, path) if path.startswith("tests/") else module_text(rng, path)


def events(rng: random.Random, stamp: Stamp, steps: int) -> list:
    """A scan of a random part of the files, then watch edits, deletions, additions and
    commits touching several files at once."""
    present = set(rng.sample(MODULES + TESTS, 6))
    out: list = [stamp.claim()]
    out += [stamp.changed(p, text_of(rng, p), origin="scan") for p in sorted(present)]
    out.append(stamp.scan_completed("c0"))
    for step in range(steps):
        roll = rng.random()
        absent = sorted(set(MODULES + TESTS) - present)
        if roll < 0.15 and present:
            path = rng.choice(sorted(present))
            present.discard(path)
            out.append(stamp.deleted(path))
        elif roll < 0.3 and absent:
            path = rng.choice(absent)
            present.add(path)
            out.append(stamp.changed(path, text_of(rng, path)))
        elif roll < 0.4 and present:
            sha = f"{step:040x}"
            paths = tuple(rng.sample(sorted(present), min(3, len(present))))
            out.append(stamp.commit_observed(sha, paths))
            out += [stamp.changed(p, text_of(rng, p), origin="commit", commit=sha) for p in paths]
            out.append(stamp.commit_completed(sha))
        elif present:
            path = rng.choice(sorted(present))
            out.append(stamp.changed(path, text_of(rng, path)))
    return out


def assert_same(live: Adjacency, fresh: Adjacency, state: RepoState) -> None:
    """Every public answer of ``live`` equals ``fresh``'s, for every node and file."""
    assert live.seq == fresh.seq == state.seq
    assert live.nodes is state.nodes
    assert live.edges is fresh.edges is state.edges  # the state's own edges (test_edge_table)
    assert live.degrees == fresh.degrees
    assert live.hub_threshold.hex() == fresh.hub_threshold.hex()
    assert live.names == fresh.names
    nodes = sorted(set(state.nodes) | {end for key in state.edges for end in key[:2]})
    for node in nodes:
        for ask in (
            Adjacency.edges_out,
            Adjacency.edges_in,
            Adjacency.links,
            Adjacency.degree,
            Adjacency.is_hub,
            Adjacency.callers,
            Adjacency.callees,
            Adjacency.imports,
            Adjacency.imported_by,
            Adjacency.tests,
            Adjacency.children,
            Adjacency.parent,
            Adjacency.symbols,
        ):
            assert ask(live, node) == ask(fresh, node), (ask.__name__, node)
    paths = sorted(set(state.files) | set(MODULES) | set(TESTS))
    for path in paths:
        for ask_path in (Adjacency.inbound, Adjacency.importing_paths, Adjacency.linked_files):
            assert ask_path(live, path) == ask_path(fresh, path), (ask_path.__name__, path)
    for name in sorted(set(live.names) | set(fresh.names) | {"nothing"}):
        assert live.named(name) == fresh.named(name)
    starts = [n for n in nodes if n in state.nodes][::3]
    for start in starts:
        assert bfs(live, start) == bfs(fresh, start)
        assert dfs(live, start, direction="out") == dfs(fresh, start, direction="out")
        assert expand(live, [start]) == expand(fresh, [start])
    for source, target in zip(starts, reversed(starts), strict=True):
        assert shortest_path(live, source, target) == shortest_path(fresh, source, target)


@pytest.mark.parametrize("seed", range(6))
def test_the_folded_adjacency_answers_what_a_rebuild_answers(seed: int) -> None:
    rng = random.Random(seed)
    stamp = Stamp(repo="r", claimed=False)
    index, model = RepoIndex("r"), ReadModel(clock=lambda: 2000.0)
    view = model.view("r")
    live = view.adjacency()  # live from the empty state: every delta is folded into it
    # A second one with a low hub rule, so that hubs exist in a repository this small
    # and the walks skip some: folded by hand, beside the read model's.
    low = Adjacency.of(view.state, q=75.0, floor=1)
    applied = hubs = most = removed = 0
    for event in events(rng, stamp, 40):
        delta = index.handle(event, now=1000.0 + event.seq)
        assert delta is not None
        before = low.before(delta)
        assert model.apply_delta(delta)
        low.apply(delta, before)
        assert not model.apply_delta(delta)  # a replay changes nothing, the adjacency neither
        assert view.adjacency() is live, "rebuilt instead of folded"
        assert_same(live, Adjacency.of(view.state), view.state)
        assert_same(low, Adjacency.of(view.state, q=75.0, floor=1), view.state)
        applied += 1
        hubs += sum(low.is_hub(n) for n in low.degrees)
        most, removed = max(most, len(view.state.edges)), removed + len(delta.edges_removed)
    assert applied > 40 and most > 40 and removed > 20
    assert hubs > 0, "the low hub rule made no hub: the walks' hub skipping went untested"


def synthetic_deltas(rng: random.Random, count: int) -> list[GraphDelta]:
    """Deltas over a dozen nodes: removals of present and absent keys, upserts of new
    and present keys (another weight or confidence), a key removed and upserted again,
    or upserted twice, in one delta; nodes renamed, moved out of any file, removed."""
    nodes = [f"sym:a{i % 3}.py:n{i}" for i in range(9)] + ["file:a0.py", "file:a1.py", "ext:os"]
    kinds = ["CALLS", "IMPORTS", "CONTAINS", "REFERENCES", "TESTS"]
    confidences = ["import", "same_file", "name_match", "structural"]
    keys: list[tuple[str, str, str]] = []
    out = []
    for seq in range(1, count + 1):
        removed = rng.sample(keys, min(len(keys), rng.randint(0, 4)))
        removed += [(rng.choice(nodes), rng.choice(nodes), "USES")] * (rng.random() < 0.3)
        upserted = []
        for _ in range(rng.randint(0, 6)):
            reuse = (removed or keys) and rng.random() < 0.4
            src, dst, kind = (
                rng.choice(removed or keys)
                if reuse
                else (rng.choice(nodes), rng.choice(nodes), rng.choice(kinds))
            )
            edge = EdgeRecord(
                src=src,
                dst=dst,
                kind=kind,
                weight=rng.choice([0.5, 1.0, 2.0]),
                confidence=rng.choice(confidences),  # type: ignore[arg-type]
            )
            upserted += [edge] * (1 + (rng.random() < 0.2))
            keys.append(edge.key)
        touched = rng.sample(nodes, 3)
        node_records = tuple(
            NodeRecord(
                id=n,
                kind="FUNCTION",
                name=rng.choice(["a", "b", "c"]),
                path=rng.choice([None, "a0.py", "a1.py"]),
                line_start=rng.randint(1, 9),
            )
            for n in touched[:2]
        )
        out.append(
            GraphDelta(
                repo="s",
                seq=seq,
                source=SourceMark(producer="p", seq=seq, emitted_at=1.0, epoch=1),
                event_kind="FileChanged",
                applied_at=1.0,
                nodes_upserted=node_records,
                nodes_removed=tuple(touched[1:]) if rng.random() < 0.5 else (),
                edges_upserted=tuple(upserted),
                edges_removed=tuple(removed),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(20))
def test_the_corners_of_the_fold_match_a_rebuild(seed: int) -> None:
    state = RepoState("s")
    live = Adjacency.of(state, floor=0)
    for delta in synthetic_deltas(random.Random(seed), 60):
        before = live.before(delta)
        assert state.apply(delta)
        live.apply(delta, before)
        assert_same(live, Adjacency.of(state, floor=0), state)


def test_a_key_removed_and_upserted_again_goes_last_and_an_upsert_keeps_its_place() -> None:
    state = RepoState("s")
    live = Adjacency.of(state)
    a, b, c = (EdgeRecord(src="x", dst=d, kind="CALLS", confidence="import") for d in "abc")
    heavier_b = b.model_copy(update={"weight": 3.0})
    mark = SourceMark(producer="p", seq=1, emitted_at=1.0, epoch=1)
    changes: list[tuple[tuple[tuple[str, str, str], ...], tuple[EdgeRecord, ...]]] = [
        ((), (a, b, c)),
        ((a.key,), (a, heavier_b)),
    ]
    for seq, (removed, upserted) in enumerate(changes, start=1):
        delta = GraphDelta(
            repo="s",
            seq=seq,
            source=mark,
            event_kind="FileChanged",
            applied_at=1.0,
            edges_removed=removed,
            edges_upserted=upserted,
        )
        before = live.before(delta)
        state.apply(delta)
        live.apply(delta, before)
    assert [(e.dst, e.weight) for e in live.edges.edges_out("x")] == [
        ("b", 3.0),
        ("c", 1.0),
        ("a", 1.0),
    ]
    assert [(e.dst, e.weight) for e in Adjacency.of(state).edges.edges_out("x")] == [
        ("b", 3.0),
        ("c", 1.0),
        ("a", 1.0),
    ]
    assert [e.dst for e in live.edges_out("x")] == ["b", "a", "c"]  # heavier first


def test_a_state_replaced_under_the_view_is_indexed_again() -> None:
    model, index, stamp = ReadModel(), RepoIndex("r"), Stamp(repo="r", claimed=False)
    for event in [stamp.claim(), stamp.changed("pkg/m0.py", "import os\n\ndef f0():\n    pass\n")]:
        model.apply_delta(index.handle(event, now=1000.0))  # type: ignore[arg-type]
    view = model.view("r")
    first = view.adjacency()
    edges = EdgeTable.of(view.state.edges.values())
    view.state = RepoState("r", nodes=dict(view.state.nodes), edges=edges)
    view.state.seq = first.seq
    second = view.adjacency()
    assert second is not first and second.nodes is view.state.nodes
    assert second.edges_out("file:pkg/m0.py") == first.edges_out("file:pkg/m0.py")
    assert [e.dst for e in second.imports("file:pkg/m0.py")] == ["ext:os"]


@pytest.mark.parametrize("seed", range(200))
def test_the_threshold_from_counts_is_the_threshold_of_the_list(seed: int) -> None:
    rng = random.Random(seed)
    degrees = [rng.choice([1, 2, 3, 5, 8, 60, 200]) for _ in range(rng.randint(0, 300))]
    histogram: dict[int, int] = {}
    for degree in degrees:
        histogram[degree] = histogram.get(degree, 0) + 1
    q, floor = rng.choice([99.0, 90.0, 50.0, 0.0, 100.0]), rng.choice([0, 1, 50])
    assert threshold_of(histogram, q, floor).hex() == hub_threshold(degrees, q, floor).hex()


def test_a_delta_changing_most_of_the_graph_drops_the_adjacency_to_be_built_again() -> None:
    model, index, stamp = ReadModel(), RepoIndex("r"), Stamp(repo="r", claimed=False)
    for event in [stamp.claim(), stamp.changed("pkg/m0.py", "import os\n\ndef f0():\n    pass\n")]:
        model.apply_delta(index.handle(event, now=1000.0))  # type: ignore[arg-type]
    view = model.view("r")
    first = view.adjacency()
    many = tuple(
        EdgeRecord(src="file:pkg/m0.py", dst=f"ext:m{i}", kind="IMPORTS", confidence="import")
        for i in range(5001)
    )
    big = GraphDelta(
        repo="r",
        seq=view.state.seq + 1,
        source=SourceMark(producer="p", seq=9, emitted_at=1.0, epoch=1),
        event_kind="FileChanged",
        applied_at=1.0,
        edges_upserted=many,
    )
    assert not first.worth_folding(big, len(view.state.edges))
    assert first.worth_folding(big.model_copy(update={"edges_upserted": many[:5000]}), 0)
    assert model.apply_delta(big)
    assert view.adjacency_to_fold(big) is None  # dropped, not folded
    second = view.adjacency()
    assert second is not first and second.seq == view.state.seq
    assert len(second.imports("file:pkg/m0.py")) == 5002


@pytest.mark.parametrize("seed", range(4))
def test_the_kept_orders_are_bounded_by_their_edges(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past CACHE_EDGES the kept orders are dropped (they are records built from the
    columns) and built again: the same answers, never more edges kept than the bound
    or the one order just asked for."""
    monkeypatch.setattr(adjacency, "CACHE_EDGES", 5)
    state = RepoState("s")
    live = Adjacency.of(state, floor=0)
    for delta in synthetic_deltas(random.Random(seed), 30):
        before = live.before(delta)
        assert state.apply(delta)
        live.apply(delta, before)
        assert_same(live, Adjacency.of(state, floor=0), state)  # reads every node's orders
        kept = [*live._sorted.values(), *live._links.values()]
        assert sum(map(len, kept)) <= max(5, *map(len, kept), 0)
