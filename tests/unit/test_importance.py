"""PageRank, semantic centrality, composite importance and hubs on hand-built file graphs."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from stores.projections.file_graph import FileGraph, build_file_graph
from stores.projections.hubs import (
    FileDegree,
    file_degrees,
    hub_threshold,
    percentile,
    top_hubs,
)
from stores.projections.importance import pagerank, rank_files, semantic_centrality
from stores.records import EdgeRecord, FileRecord, Keyword


def source(path: str, keywords: dict[str, float] | None = None, **facts: object) -> FileRecord:
    fields: dict[str, object] = {
        "path": path,
        "language": "python",
        "size": 100,
        "lines": 10,
        "content_hash": "h",
        "skipped": None,
        "parse_errors": 0,
        "keywords": tuple(Keyword(term=t, weight=w) for t, w in (keywords or {}).items()),
        "origin": "scan",
        "commit": None,
        "working_tree": True,
        "producer": "p1",
    }
    fields.update(facts)
    return FileRecord.model_validate(fields)


def imports(src: str, dst: str, weight: float = 1.0) -> EdgeRecord:
    return EdgeRecord(
        src=f"file:{src}", dst=f"file:{dst}", kind="IMPORTS", weight=weight, confidence="import"
    )


def graph_of(paths: Iterable[str], arcs: dict[tuple[str, str], float]) -> FileGraph:
    files = {p: source(p) for p in paths}
    edges = {e.key: e for e in (imports(a, b, w) for (a, b), w in arcs.items())}
    return build_file_graph(files, edges)


def oracle_pagerank(
    nodes: list[str], arcs: dict[tuple[str, str], float], d: float = 0.85
) -> dict[str, float]:
    """Textbook power iteration: teleport uniformly, dangling rank spread uniformly
    (networkx.pagerank's definition; networkx itself needs scipy, not installed here)."""
    n = len(nodes)
    out = {v: sum(w for (a, _), w in arcs.items() if a == v) for v in nodes}
    rank = dict.fromkeys(nodes, 1 / n)
    for _ in range(300):
        dangling = sum(rank[v] for v in nodes if out[v] == 0)
        new = dict.fromkeys(nodes, (1 - d) / n + d * dangling / n)
        for (a, b), w in arcs.items():
            new[b] += d * rank[a] * w / out[a]
        rank = new
    return rank


# -- PageRank ----------------------------------------------------------------------------


def test_pagerank_of_two_files_is_the_closed_form() -> None:
    # r_a = 0.15/2 + 0.85 r_b/2 ; r_a + r_b = 1  =>  r_a = 20/57, r_b = 37/57
    ranks = pagerank(graph_of(["a.py", "b.py"], {("a.py", "b.py"): 1.0}))
    assert ranks == pytest.approx({"a.py": 20 / 57, "b.py": 37 / 57}, abs=1e-12)


@pytest.mark.parametrize(
    "arcs",
    [
        {("a.py", "b.py"): 1.0, ("b.py", "c.py"): 1.0, ("c.py", "d.py"): 1.0},  # chain
        {("b.py", "a.py"): 1.0, ("c.py", "a.py"): 2.0, ("d.py", "a.py"): 0.5},  # star in
        {("a.py", "b.py"): 1.0, ("a.py", "c.py"): 3.0, ("c.py", "d.py"): 1.0},  # weighted fan
        {("a.py", "b.py"): 1.0, ("b.py", "c.py"): 1.0, ("c.py", "a.py"): 1.0},  # cycle + isolate
    ],
    ids=["chain", "star", "weighted", "cycle"],
)
def test_pagerank_matches_the_power_iteration(arcs: dict[tuple[str, str], float]) -> None:
    nodes = ["a.py", "b.py", "c.py", "d.py"]
    ranks = pagerank(graph_of(nodes, arcs))
    assert list(ranks) == nodes
    assert sum(ranks.values()) == pytest.approx(1.0, abs=1e-12)
    assert ranks == pytest.approx(oracle_pagerank(nodes, arcs), abs=1e-9)


def test_pagerank_lets_rank_flow_to_what_is_imported() -> None:
    arcs = {("a.py", "b.py"): 1.0, ("a.py", "c.py"): 3.0}
    ranks = pagerank(graph_of(["a.py", "b.py", "c.py"], arcs))
    assert ranks["c.py"] > ranks["b.py"] > ranks["a.py"]


def test_pagerank_of_empty_and_edgeless_graphs() -> None:
    assert pagerank(FileGraph((), {})) == {}
    assert pagerank(graph_of(["a.py", "b.py"], {})) == {"a.py": 0.5, "b.py": 0.5}


def test_pagerank_is_bit_identical_whatever_the_build_order() -> None:
    arcs = {("a.py", "b.py"): 1.0, ("c.py", "b.py"): 2.0, ("b.py", "d.py"): 1.0}
    graph = graph_of(["a.py", "b.py", "c.py", "d.py"], arcs)
    shuffled = FileGraph(tuple(reversed(graph.files)), dict(reversed(graph.arcs.items())))
    assert pagerank(graph) == pagerank(shuffled) == pagerank(graph)


# -- semantic centrality -----------------------------------------------------------------


def kw(**terms: float) -> tuple[Keyword, ...]:
    return tuple(Keyword(term=t, weight=w) for t, w in terms.items())


def test_semantic_centrality_is_the_weighted_share_of_other_files_using_each_term() -> None:
    # df: auth 3, token 2, cache 1; N = 4. Raw shares (sum w x (df-1)/(N-1) / sum w):
    # a: (2x2 + 2x1) / (4x3) = 1/2 ; b: (1x2 + 1x0) / (2x3) = 1/3 ; c: (1x2 + 1x1)/(2x3) = 1/2
    scores = semantic_centrality(
        {
            "a.py": kw(auth=2, token=2),
            "b.py": kw(auth=1, cache=1),
            "c.py": kw(auth=1, token=1),
            "d.py": (),
        }
    )
    assert scores == pytest.approx({"a.py": 1.0, "b.py": 2 / 3, "c.py": 1.0, "d.py": 0.0})


def test_semantic_centrality_gives_nothing_for_vocabulary_nobody_shares() -> None:
    assert semantic_centrality({"a.py": kw(auth=1), "b.py": kw(cache=1)}) == {
        "a.py": 0.0,
        "b.py": 0.0,
    }
    assert semantic_centrality({"a.py": kw(auth=1)}) == {"a.py": 0.0}
    assert semantic_centrality({}) == {}


# -- composite importance ----------------------------------------------------------------


def test_rank_files_blends_scaled_pagerank_and_semantic_centrality() -> None:
    files = {
        "a.py": source("a.py", {"auth": 1.0}),
        "b.py": source("b.py", {"auth": 1.0, "token": 1.0}),
        "c.py": source("c.py", {"token": 1.0}),
        "go.mod": source("go.mod", {"auth": 5.0}, language="go-module"),
    }
    edges = {e.key: e for e in [imports("a.py", "b.py"), imports("c.py", "b.py")]}
    graph = build_file_graph(files, edges)
    ranks = pagerank(graph)
    ranking = rank_files(graph, files)
    # The configuration file is not in the file graph, so it is neither ranked nor counted.
    assert [f.path for f in ranking] == ["b.py", "a.py", "c.py"]
    top = ranks["b.py"]
    for f in ranking:
        assert f.pagerank == ranks[f.path]
        assert f.semantic == 1.0  # every file shares each of its terms with one other of 2
        assert f.score == pytest.approx(0.6 * ranks[f.path] / top + 0.4)
    assert ranking[0].score == pytest.approx(1.0)


def test_rank_files_weights_are_parameters_and_ties_break_by_path() -> None:
    files = {p: source(p) for p in ["b.py", "a.py", "hub.py"]}
    edges = {e.key: e for e in [imports("a.py", "hub.py"), imports("b.py", "hub.py")]}
    graph = build_file_graph(files, edges)
    by_rank = rank_files(graph, files, pagerank_weight=1.0, semantic_weight=0.0)
    assert [f.path for f in by_rank] == ["hub.py", "a.py", "b.py"]
    assert by_rank[1].score == by_rank[2].score
    by_words = rank_files(graph, files, pagerank_weight=0.0, semantic_weight=1.0)
    assert [f.path for f in by_words] == ["a.py", "b.py", "hub.py"]  # all 0: path order
    assert {f.score for f in by_words} == {0.0}


# -- hubs ----------------------------------------------------------------------------------


def star(leaves: int, prefix: str = "leaf") -> FileGraph:
    names = [f"{prefix}{i:03d}.py" for i in range(leaves)]
    return graph_of(["core.py", *names], {(n, "core.py"): 2.0 for n in names})


def test_star_of_51_leaves_has_a_hub_above_the_floor_of_50() -> None:
    degrees = file_degrees(star(51))
    assert degrees["core.py"] == FileDegree(
        path="core.py",
        degree=51,
        in_degree=51,
        out_degree=0,
        weighted_in=102.0,
        hub=True,
        expansion_hub=True,
    )
    assert degrees["leaf000.py"] == FileDegree("leaf000.py", 1, 0, 1, 0.0, False, False)
    assert hub_threshold([d.degree for d in degrees.values()]) == 50.0  # p99 = 25.5


@pytest.mark.parametrize(
    ("leaves", "hub", "expansion_hub"),
    [(30, False, False), (31, False, True), (50, False, True), (51, True, True)],
)
def test_hub_flags_turn_on_strictly_above_their_thresholds(
    leaves: int, hub: bool, expansion_hub: bool
) -> None:
    centre = file_degrees(star(leaves))["core.py"]
    assert (centre.degree, centre.hub, centre.expansion_hub) == (leaves, hub, expansion_hub)


def test_hub_threshold_is_the_p99_when_it_exceeds_the_floor() -> None:
    # 60 apps each import the same 60 libraries and a shared core: every app and library
    # has degree 61, the core 120. p99 of 121 degrees = 61, so only the core is a hub.
    apps = [f"app{i:02d}.py" for i in range(60)]
    libs = [f"lib{i:02d}.py" for i in range(60)]
    arcs = {(a, b): 1.0 for a in apps for b in libs}
    arcs.update({(x, "core.py"): 1.0 for x in apps + libs})
    degrees = file_degrees(graph_of(["core.py", *apps, *libs], arcs))
    assert hub_threshold([d.degree for d in degrees.values()]) == 61.0
    assert [d.path for d in degrees.values() if d.hub] == ["core.py"]
    assert {d.degree for d in degrees.values() if not d.hub} == {61}
    assert all(d.expansion_hub for d in degrees.values())


def test_percentile_interpolates_between_closest_ranks() -> None:
    assert percentile([], 99) == 0.0
    assert percentile([7], 99) == 7.0
    assert percentile([1] * 98 + [60, 100], 99) == pytest.approx(60.4)
    assert percentile([0, 10], 50) == 5.0


def test_degree_counts_distinct_linked_files_in_either_direction() -> None:
    arcs = {("a.py", "b.py"): 1.0, ("b.py", "a.py"): 3.0, ("c.py", "a.py"): 0.5}
    degrees = file_degrees(graph_of(["a.py", "b.py", "c.py", "lone.py"], arcs))
    assert degrees["a.py"] == FileDegree("a.py", 2, 2, 1, 3.5, False, False)
    assert degrees["b.py"] == FileDegree("b.py", 1, 1, 1, 1.0, False, False)
    assert degrees["lone.py"].degree == 0


def test_top_hubs_sort_by_degree_then_path_and_keep_the_true_total() -> None:
    arcs = {
        ("a.py", "x.py"): 1.0,
        ("b.py", "x.py"): 1.0,
        ("a.py", "y.py"): 1.0,
        ("b.py", "y.py"): 1.0,
        ("c.py", "z.py"): 1.0,
    }
    degrees = file_degrees(graph_of(["a.py", "b.py", "c.py", "x.py", "y.py", "z.py", "w.py"], arcs))
    page = top_hubs(degrees.values(), limit=3)
    assert [(d.path, d.degree) for d in page.items] == [("a.py", 2), ("b.py", 2), ("x.py", 2)]
    assert (page.total, page.truncated) == (6, True)  # w.py, unlinked, is not listed
    assert top_hubs(reversed(list(degrees.values())), limit=3) == page
