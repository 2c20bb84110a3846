"""Clustering the file graph: exact partitions, determinism, warm starts, no lone files."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import igraph
import pytest

from processors.neighborhoods.clustering import (
    ClusterSettings,
    Partition,
    attach_edgeless_files,
    attach_lone_files,
    cluster,
    folder_groups,
    initial_membership,
    leiden,
    modularity,
)
from processors.neighborhoods.identity import fresh_id
from stores.projections.file_graph import FileGraph

CORE = ("app/core/a.py", "app/core/b.py", "app/core/c.py")
LIB = ("lib/x.py", "lib/y.py", "lib/z.py")


def two_cliques(*extra_files: str) -> FileGraph:
    """Two triangles joined by c -> x: core's arcs weigh 1, lib's weigh 2."""
    a, b, c = CORE
    x, y, z = LIB
    arcs = {(a, b): 1.0, (a, c): 1.0, (b, c): 1.0, (x, y): 2.0, (x, z): 2.0, (y, z): 2.0}
    arcs[(c, x)] = 1.0
    return FileGraph(tuple(sorted(CORE + LIB + extra_files)), arcs)


def groups_graph(n_groups: int, size: int, seed: int, p_in: float = 0.3) -> FileGraph:
    """``n_groups`` dense folders of ``size`` files, sparse arcs between them (seeded)."""
    rng = random.Random(seed)
    files = [f"pkg{g:02d}/mod{i:02d}.py" for g in range(n_groups) for i in range(size)]
    arcs = {}
    for src in files:
        for dst in files:
            same = src.split("/")[0] == dst.split("/")[0]
            if src != dst and rng.random() < (p_in if same else 0.004):
                arcs[(src, dst)] = float(rng.randint(1, 3))
    return FileGraph(tuple(sorted(files)), arcs)


def by_members(partition: Partition) -> set[tuple[str, ...]]:
    return set(partition.groups().values())


def test_two_cliques_joined_by_one_edge_are_two_neighborhoods() -> None:
    partition = cluster(two_cliques())

    assert partition.assignment == {
        **dict.fromkeys(CORE, fresh_id(CORE, ())),
        **dict.fromkeys(LIB, fresh_id(LIB, ())),
    }
    assert partition.kinds == {fresh_id(CORE, ()): "cluster", fresh_id(LIB, ()): "cluster"}


def test_modularity_of_the_two_cliques_is_computed_by_hand() -> None:
    # m = 10; internal weights 3 and 6; volumes 7 and 13:
    # Q = 3/10 + 6/10 - (7/20)^2 - (13/20)^2 = 0.355.
    graph = two_cliques()
    assert modularity(graph, cluster(graph)) == pytest.approx(0.355)


def test_modularity_without_edges_is_zero() -> None:
    graph = FileGraph(("a.py", "b.py"), {})
    assert modularity(graph, cluster(graph)) == 0.0


def test_the_same_input_gives_the_same_partition_byte_for_byte() -> None:
    graph = groups_graph(6, 20, seed=3)
    first, second = cluster(graph), cluster(graph)
    assert first == second
    assert repr(first) == repr(second)


def test_the_order_of_the_arcs_does_not_matter() -> None:
    graph = groups_graph(6, 20, seed=4)
    items = list(graph.arcs.items())
    random.Random(9).shuffle(items)
    shuffled = FileGraph(graph.files, dict(items))

    assert repr(cluster(shuffled)) == repr(cluster(graph))


def test_the_seed_is_a_setting_and_the_global_generator_is_untouched() -> None:
    graph = groups_graph(6, 20, seed=5)
    random.seed(11)
    expected = random.random()
    random.seed(11)
    cluster(graph, settings=ClusterSettings(seed=123))

    assert random.random() == expected


def test_a_warm_start_from_the_same_graph_changes_nothing() -> None:
    graph = groups_graph(8, 25, seed=1)
    partition = cluster(graph)
    assert cluster(graph, partition) == partition


def test_one_edited_edge_keeps_over_99_percent_of_files_and_all_ids() -> None:
    graph = groups_graph(8, 25, seed=1)
    before = cluster(graph)
    arcs = dict(graph.arcs)
    arcs[("pkg00/mod00.py", "pkg05/mod07.py")] = 3.0  # a new cross-folder import
    after = cluster(FileGraph(graph.files, arcs), before)

    kept = sum(after.assignment[p] == nid for p, nid in before.assignment.items())
    assert len(before.kinds) == 8
    assert kept / len(graph.files) > 0.99
    assert set(after.kinds) == set(before.kinds)


def test_a_new_file_joins_the_group_it_imports() -> None:
    graph = groups_graph(4, 10, seed=2)
    before = cluster(graph)
    arcs = dict(graph.arcs)
    arcs |= {("pkg02/new.py", f"pkg02/mod0{i}.py"): 1.0 for i in range(4)}
    after = cluster(FileGraph(tuple(sorted((*graph.files, "pkg02/new.py"))), arcs), before)

    assert after.assignment["pkg02/new.py"] == before.assignment["pkg02/mod00.py"]
    assert {p: after.assignment[p] for p in before.assignment} == before.assignment


def test_initial_membership_keeps_previous_groups_and_starts_new_files_alone() -> None:
    previous = Partition(
        {"a": "nb-2", "b": "nb-1", "c": "nb-2"}, {"nb-1": "cluster", "nb-2": "cluster"}
    )
    assert initial_membership(["a", "b", "c", "d", "e"], previous) == [0, 1, 0, 2, 3]
    assert initial_membership(["a"], None) is None


def test_a_lone_file_joins_the_group_holding_most_of_its_weight() -> None:
    pairs = {("a", "b"): 5.0, ("a", "hub"): 1.0, ("b", "hub"): 1.0, ("c", "d"): 5.0}
    pairs |= {("c", "hub"): 1.0, ("d", "hub"): 0.5}
    assert attach_lone_files([("a", "b"), ("c", "d"), ("hub",)], pairs) == [
        ("a", "b", "hub"),
        ("c", "d"),
    ]


def test_a_lone_file_pulled_equally_joins_the_group_whose_first_path_sorts_first() -> None:
    pairs = {("a", "b"): 1.0, ("c", "d"): 1.0, ("a", "m"): 2.0, ("c", "m"): 2.0}
    assert attach_lone_files([("a", "b"), ("c", "d"), ("m",)], pairs) == [
        ("a", "b", "m"),
        ("c", "d"),
    ]


def test_lone_files_tied_only_to_each_other_pair_up() -> None:
    pairs = {("p", "q"): 1.0, ("a", "b"): 1.0}
    assert attach_lone_files([("a", "b"), ("p",), ("q",)], pairs) == [("a", "b"), ("p", "q")]


def test_no_cluster_has_a_single_file_even_with_hubs_and_a_high_resolution() -> None:
    graph = groups_graph(10, 12, seed=6)
    arcs = dict(graph.arcs) | {(f, "util/log.py"): 1.0 for f in graph.files[::7]}
    graph = FileGraph(tuple(sorted((*graph.files, "util/log.py"))), arcs)
    partition = cluster(graph, settings=ClusterSettings(resolution=4.0))

    sizes = [len(members) for members in partition.groups().values()]
    assert min(sizes) >= 2
    assert set(partition.assignment) == set(graph.files)


def test_edgeless_files_join_their_folder_siblings_or_group_by_folder() -> None:
    graph = two_cliques("tools/t.py", "tools/u.py", "main.py", "app/core/__init__.py")
    partition = cluster(graph)
    groups = partition.groups()

    folders = {members for nid, members in groups.items() if partition.kinds[nid] == "folder"}
    assert folders == {("tools/t.py", "tools/u.py")}
    # main.py, alone in its folder, joins the group with most files under its nearest
    # ancestor, the root: app/core's four (with its __init__.py) against lib's three.
    core = ("app/core/__init__.py", *CORE, "main.py")
    assert by_members(partition) == folders | {core, LIB}


def test_an_edgeless_file_joins_the_group_holding_most_of_its_folder() -> None:
    communities = [("a/1.py", "b/1.py", "b/2.py"), ("a/2.py", "a/3.py"), ("c/1.py", "c/2.py")]
    edgeless = ["a/__init__.py", "b/__init__.py", "c/d/x.py", "c/__init__.py"]
    assert attach_edgeless_files(communities, edgeless) == (
        [
            ("a/1.py", "b/1.py", "b/2.py", "b/__init__.py"),
            ("a/2.py", "a/3.py", "a/__init__.py"),
            ("c/1.py", "c/2.py", "c/__init__.py"),
        ],
        ["c/d/x.py"],
    )


def test_an_edgeless_file_pulled_equally_joins_the_group_whose_first_path_sorts_first() -> None:
    communities = [("a/1.py", "z/1.py"), ("a/2.py", "y/1.py")]
    assert attach_edgeless_files(communities, ["a/x.py"])[0][0] == ("a/1.py", "a/x.py", "z/1.py")


def test_a_folder_neighborhood_keeps_its_id_when_a_file_is_added() -> None:
    before = cluster(two_cliques("tools/t.py", "tools/u.py"))
    after = cluster(two_cliques("tools/t.py", "tools/u.py", "tools/v.py"), before)

    assert after.assignment["tools/v.py"] == before.assignment["tools/t.py"]
    assert after.kinds == before.kinds


def test_folder_groups_use_the_parent_directory() -> None:
    assert folder_groups(["b/y.py", "a/x.py", "root.py", "b/c/z.py", "b/a.py"]) == [
        ("root.py",),
        ("a/x.py",),
        ("b/a.py", "b/y.py"),
        ("b/c/z.py",),
    ]


def test_ids_follow_the_files_when_a_neighborhood_splits() -> None:
    big = tuple(f"m/{i}.py" for i in range(6))
    small = tuple(f"m/{i}.py" for i in range(6, 10))
    before = Partition(dict.fromkeys(big + small, "nb-old"), {"nb-old": "cluster"})
    clique = {(a, b): 1.0 for group in (big, small) for a in group for b in group if a < b}
    after = cluster(FileGraph(tuple(sorted(big + small)), clique), before)

    assert after.groups() == {
        "nb-old": tuple(sorted(big)),
        fresh_id(tuple(sorted(small)), {"nb-old"}): tuple(sorted(small)),
    }


def test_an_empty_graph_has_no_neighborhoods() -> None:
    assert cluster(FileGraph((), {})) == Partition({}, {})


def _igraph_until_stable(
    paths: list[str], pairs: dict[tuple[str, str], float], settings: ClusterSettings
) -> list[tuple[str, ...]]:
    """igraph's own loop (``n_iterations=-1``), as `leiden` called it before."""
    index = {path: i for i, path in enumerate(paths)}
    g = igraph.Graph(n=len(paths), edges=[(index[a], index[b]) for a, b in pairs])
    igraph.set_random_number_generator(random.Random(settings.seed))
    try:
        found = g.community_leiden(
            objective_function="modularity",
            weights=list(pairs.values()),
            resolution=settings.resolution,
            beta=settings.beta,
            n_iterations=-1,
        )
    finally:
        igraph.set_random_number_generator(random)
    return sorted(c for c in (tuple(paths[i] for i in sorted(m)) for m in found) if c)


@pytest.mark.parametrize("seed", range(20))
def test_leidens_bounded_passes_find_what_igraphs_own_loop_finds(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"m{i:02d}.py" for i in range(rng.randint(6, 40))]
    pairs: dict[tuple[str, str], float] = {}
    for _ in range(2 * len(names)):
        a, b = sorted(rng.sample(names, 2))
        pairs[(a, b)] = float(rng.randint(1, 3))
    paths = sorted({path for pair in pairs for path in pair})
    settings = ClusterSettings()
    assert leiden(paths, pairs, None, settings) == _igraph_until_stable(paths, pairs, settings)


STAR_WARM_STARTED = """
from processors.neighborhoods.clustering import ClusterSettings, Partition, leiden
paths = ["a.py", "b.py", "c.py", "d.py", "pkg/__init__.py"]
pairs = {(p, "pkg/__init__.py"): 1.0 for p in ("a.py", "b.py", "c.py", "d.py")}
pairs[("b.py", "c.py")] = 1.0
one = Partition(assignment={p: "nb-1" for p in paths}, kinds={"nb-1": "cluster"})
print(leiden(paths, pairs, one, ClusterSettings()))
"""


def test_a_graph_igraphs_own_loop_never_finishes_is_clustered() -> None:
    """A star of five files warm-started as one neighborhood: igraph's ``n_iterations=-1``
    spins on it forever, in C, deaf to signals (a worker's recluster would never end)."""
    run = subprocess.run(
        [sys.executable, "-c", STAR_WARM_STARTED],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[('a.py', 'b.py', 'c.py', 'd.py', 'pkg/__init__.py')]"
