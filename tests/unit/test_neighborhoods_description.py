"""Describing neighborhoods: labels, cohesion, entry points, strengths, cross-cutting files."""

from __future__ import annotations

import pytest

from processors.neighborhoods.clustering import Partition, cluster
from processors.neighborhoods.identity import fresh_id
from processors.neighborhoods.neighborhood import Membership, Neighborhood, describe, label
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


def test_two_cliques_are_described_exactly() -> None:
    # Degrees: a 2, b 2, c 3 | x 5, y 4, z 4; total volume 20; the cut is c-x, weight 1.
    # Cohesion of either side: 1 - 1 / min(7, 13) = 6/7.
    # Inbound: a 0, b 1, c 2 | x 1, y 2, z 4.
    # Strength: c (2 - 1) / 3, x (4 - 1) / 5, every other file 1.
    a, b, c = CORE
    x, y, z = LIB
    core_id, lib_id = fresh_id(CORE, ()), fresh_id(LIB, ())
    graph = two_cliques()

    assert describe(graph, cluster(graph)) == tuple(
        sorted(
            [
                Neighborhood(
                    id=core_id,
                    kind="cluster",
                    label="app/core",
                    size=3,
                    members=CORE,
                    cohesion=1 - 1 / 7,
                    entry_points=(c, b),
                    memberships=(
                        Membership(a, 1.0, 0.0, False),
                        Membership(b, 1.0, 1.0, False),
                        Membership(c, (2 - 1) / 3, 2.0, False),
                    ),
                ),
                Neighborhood(
                    id=lib_id,
                    kind="cluster",
                    label="lib",
                    size=3,
                    members=LIB,
                    cohesion=1 - 1 / 7,
                    entry_points=(z, y, x),
                    memberships=(
                        Membership(x, (4 - 1) / 5, 1.0, False),
                        Membership(y, 1.0, 2.0, False),
                        Membership(z, 1.0, 4.0, False),
                    ),
                ),
            ],
            key=lambda n: n.id,
        )
    )


def test_neighborhoods_come_largest_first_then_by_id() -> None:
    graph = two_cliques("tools/t.py", "tools/u.py", "main.py")
    described = describe(graph, cluster(graph))

    assert [(n.size, n.kind) for n in described] == [
        (4, "cluster"),  # with main.py, alone in its folder (see clustering.py)
        (3, "cluster"),
        (2, "folder"),
    ]


def test_a_folder_group_has_no_cohesion_no_entry_points_and_zero_strengths() -> None:
    graph = two_cliques("tools/t.py", "tools/u.py")
    tools = next(n for n in describe(graph, cluster(graph)) if n.kind == "folder")

    assert (tools.label, tools.cohesion, tools.entry_points) == ("tools", 0.0, ())
    assert [m.strength for m in tools.memberships] == [0.0, 0.0]


def test_a_neighborhood_holding_every_edge_has_cohesion_one() -> None:
    graph = FileGraph(
        ("a/x.py", "a/y.py", "b/lonely.py", "b/other.py"), {("a/x.py", "a/y.py"): 1.0}
    )
    described = {n.label: n.cohesion for n in describe(graph, cluster(graph))}
    assert described == {"a": 1.0, "b": 0.0}


def test_cohesion_and_strength_follow_the_partition_given() -> None:
    # Everything in one neighborhood but lib/z.py on its own: the cut is y-z and x-z (4),
    # vol(S) = 16, vol(V - S) = 4, so cohesion = 1 - 4 / 4 = 0 for both sides.
    graph = two_cliques()
    assignment = dict.fromkeys(CORE + LIB, "nb-a") | {"lib/z.py": "nb-b"}
    described = describe(graph, Partition(assignment, {"nb-a": "cluster", "nb-b": "cluster"}))

    assert {n.id: n.cohesion for n in described} == {"nb-a": 0.0, "nb-b": 0.0}
    assert described[1].memberships == (Membership("lib/z.py", -1.0, 4.0, False),)


def test_entry_points_are_capped_and_skip_files_nothing_depends_on() -> None:
    graph = two_cliques()
    described = {n.label: n.entry_points for n in describe(graph, cluster(graph), entry_points=2)}
    assert described == {
        "app/core": ("app/core/c.py", "app/core/b.py"),
        "lib": ("lib/z.py", "lib/y.py"),
    }


def star_of_cliques() -> FileGraph:
    """Four 4-file cliques; util/log.py is imported by one file of each."""
    arcs: dict[tuple[str, str], float] = {}
    for group in "pqrs":
        files = [f"{group}/{i}.py" for i in range(4)]
        arcs |= {(a, b): 1.0 for a in files for b in files if a < b}
        arcs[(files[0], "util/log.py")] = 1.0
    return FileGraph(tuple(sorted({p for arc in arcs for p in arc})), arcs)


def test_a_file_imported_from_many_neighborhoods_is_flagged_cross_cutting() -> None:
    graph = star_of_cliques()
    described = describe(graph, cluster(graph))
    flagged = {m.path: m for n in described for m in n.memberships if m.cross_cutting}

    assert len(described) == 4
    assert list(flagged) == ["util/log.py"]
    assert flagged["util/log.py"].strength == -0.5  # 1 internal, 3 external


def test_a_cross_cutting_member_is_neither_the_label_nor_an_entry_point() -> None:
    graph = star_of_cliques()
    described = describe(graph, cluster(graph))
    host = next(n for n in described if "util/log.py" in n.members)

    assert sorted(n.label for n in described) == ["p", "q", "r", "s"]
    assert host.size == 5
    assert "util/log.py" not in host.entry_points
    assert len(host.entry_points) == 3


def test_cross_cutting_thresholds_are_parameters() -> None:
    graph = star_of_cliques()
    partition = cluster(graph)
    strict = describe(graph, partition, cross_cutting_neighborhoods=4)
    lenient = describe(graph, partition, cross_cutting_strength=-0.6)

    for described in (strict, lenient):
        assert not any(m.cross_cutting for n in described for m in n.memberships)


@pytest.mark.parametrize(
    ("members", "expected"),
    [
        (("a/b/x.py", "a/b/c/y.py"), "a/b"),
        (("a/b/x.py",), "a/b"),
        (("a/bc/x.py", "a/bd/y.py"), "a"),
        (("ab/x.py", "ac/y.py"), "y.py"),  # no common folder: the most connected file
        (("x.py", "a/y.py"), "y.py"),
        (("x.py", "z.py"), "x.py"),  # equal degrees: the first path
    ],
)
def test_label_is_the_common_folder_else_the_hub_file_name(
    members: tuple[str, ...], expected: str
) -> None:
    degree = {"ac/y.py": 3.0, "ab/x.py": 1.0, "a/y.py": 2.0}
    assert label(members, degree) == expected
