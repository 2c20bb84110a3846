"""Change events between two descriptions: created, removed, split, merged, moves, cohesion."""

from __future__ import annotations

import dataclasses

from processors.neighborhoods.changes import (
    CohesionChanged,
    FilesMoved,
    NeighborhoodCreated,
    NeighborhoodRemoved,
    NeighborhoodsMerged,
    NeighborhoodSplit,
    diff_neighborhoods,
)
from processors.neighborhoods.clustering import cluster
from processors.neighborhoods.neighborhood import Membership, Neighborhood, describe
from stores.projections.file_graph import FileGraph


def hood(nid: str, members: tuple[str, ...], cohesion: float = 0.5) -> Neighborhood:
    members = tuple(sorted(members))
    return Neighborhood(
        id=nid,
        kind="cluster",
        label=nid.removeprefix("nb-"),
        size=len(members),
        members=members,
        cohesion=cohesion,
        entry_points=members[:1],
        memberships=tuple(Membership(p, 1.0, 1.0, False) for p in members),
    )


def files(prefix: str, n: int) -> tuple[str, ...]:
    return tuple(f"{prefix}/{i}.py" for i in range(n))


A, B, C = files("a", 6), files("b", 4), files("c", 3)


def test_identical_descriptions_have_no_changes() -> None:
    before = (hood("nb-a", A), hood("nb-b", B))
    assert diff_neighborhoods(before, before) == ()


def test_created_and_removed() -> None:
    before = (hood("nb-a", A), hood("nb-b", B))
    after = (hood("nb-a", A), hood("nb-c", C))
    assert diff_neighborhoods(before, after) == (
        NeighborhoodCreated("nb-c", "c", 3),
        NeighborhoodRemoved("nb-b", "b", 4),
    )


def test_a_split_names_every_substantial_part_and_the_files_that_moved() -> None:
    before = (hood("nb-a", A + B),)
    after = (hood("nb-a", A), hood("nb-n", B))
    assert diff_neighborhoods(before, after) == (
        NeighborhoodCreated("nb-n", "n", 4),
        NeighborhoodSplit("nb-a", ("nb-a", "nb-n")),
        FilesMoved("nb-a", "nb-n", tuple(sorted(B))),
    )


def test_a_three_way_split_lists_parts_by_files_taken() -> None:
    before = (hood("nb-x", A + B + C),)
    after = (hood("nb-c", C), hood("nb-b", B), hood("nb-x", A))
    split = [e for e in diff_neighborhoods(before, after) if isinstance(e, NeighborhoodSplit)]
    assert split == [NeighborhoodSplit("nb-x", ("nb-x", "nb-b", "nb-c"))]


def test_one_file_leaving_is_a_move_not_a_split() -> None:
    before = (hood("nb-a", A), hood("nb-b", B))
    after = (hood("nb-a", A[1:]), hood("nb-b", (*B, A[0])))
    assert diff_neighborhoods(before, after) == (FilesMoved("nb-a", "nb-b", (A[0],)),)


def test_a_small_share_is_not_a_split_part() -> None:
    big = files("big", 12)
    before = (hood("nb-a", big), hood("nb-b", B))
    after = (hood("nb-a", big[2:]), hood("nb-b", B + big[:2]))  # 2 of 12 < 1/5
    assert [e.kind for e in diff_neighborhoods(before, after)] == ["files_moved"]


def test_a_merge_names_the_sources_by_files_contributed() -> None:
    before = (hood("nb-a", A), hood("nb-b", B))
    after = (hood("nb-a", A + B),)
    assert diff_neighborhoods(before, after) == (
        NeighborhoodRemoved("nb-b", "b", 4),
        NeighborhoodsMerged("nb-a", ("nb-a", "nb-b")),
        FilesMoved("nb-b", "nb-a", tuple(sorted(B))),
    )


def test_a_merge_needs_most_of_each_source() -> None:
    before = (hood("nb-a", A), hood("nb-b", B))
    after = (hood("nb-a", A + B[:2]), hood("nb-b", B[2:]))  # half of nb-b: a split of it
    assert diff_neighborhoods(before, after) == (
        NeighborhoodSplit("nb-b", ("nb-a", "nb-b")),
        FilesMoved("nb-b", "nb-a", B[:2]),
    )


def test_added_and_deleted_files_move_nothing() -> None:
    before = (hood("nb-a", A),)
    after = (hood("nb-a", (*A[1:], "a/new.py")),)
    assert diff_neighborhoods(before, after) == ()


def test_cohesion_changes_at_the_threshold_and_not_below() -> None:
    before = (hood("nb-a", A, 0.5), hood("nb-b", B, 0.55), hood("nb-c", C, 0.5))
    after = (hood("nb-a", A, 0.55), hood("nb-b", B, 0.6), hood("nb-c", C, 0.54))
    # 0.55 - 0.5 and 0.6 - 0.55 are 0.05 only after rounding away float noise.
    assert diff_neighborhoods(before, after) == (
        CohesionChanged("nb-a", 0.5, 0.55),
        CohesionChanged("nb-b", 0.55, 0.6),
    )
    assert diff_neighborhoods(before, after, cohesion_threshold=0.01)[-1] == CohesionChanged(
        "nb-c", 0.5, 0.54
    )


def test_events_come_in_kind_order_then_by_id() -> None:
    before = (hood("nb-a", A + B, 0.9), hood("nb-c", C), hood("nb-gone", files("g", 2)))
    after = (hood("nb-a", A, 0.2), hood("nb-new", B), hood("nb-c", C, 0.8))
    assert [
        (e.kind, getattr(e, "neighborhood", "")) for e in diff_neighborhoods(before, after)
    ] == [
        ("created", "nb-new"),
        ("removed", "nb-gone"),
        ("split", "nb-a"),
        ("files_moved", ""),
        ("cohesion_changed", "nb-a"),
        ("cohesion_changed", "nb-c"),
    ]


def test_events_are_plain_values() -> None:
    before = (hood("nb-a", A + B, 0.9), hood("nb-c", C))
    after = (hood("nb-a", A, 0.2), hood("nb-n", B + C))
    plain = (str, int, float, tuple)
    for event in diff_neighborhoods(before, after):
        fields = dataclasses.asdict(event)
        assert fields["kind"] == event.kind
        assert all(isinstance(value, plain) for value in fields.values())


def test_clustering_an_edit_that_joins_two_cliques_reports_a_merge() -> None:
    left, right = files("left", 5), files("right", 5)
    cliques = {(a, b): 1.0 for g in (left, right) for a in g for b in g if a < b}
    graph = FileGraph(tuple(sorted(left + right)), cliques)
    partition = cluster(graph)
    joined = FileGraph(graph.files, cliques | {(a, b): 1.0 for a in left for b in right})
    after = describe(joined, cluster(joined, partition))

    events = diff_neighborhoods(describe(graph, partition), after)
    survivor = min(partition.kinds)  # equal overlaps and shares: the smaller id survives
    # Cohesion stays 1: each clique had no cut before, the merged one has none after.
    assert [e.kind for e in events] == ["removed", "merged", "files_moved"]
    assert events[1] == NeighborhoodsMerged(survivor, tuple(sorted(partition.kinds)))
