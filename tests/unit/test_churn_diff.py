"""The structural diff: entries composed from base to head, net."""

from __future__ import annotations

import pytest

from query.churn.diff import EntryPointChange, Move, Rename, structural_diff
from query.churn.entry import Dependency
from stores.neighborhoods import FilesMoved
from tests.factories import file_record, import_edge, neighborhood_snapshot
from tests.unit.test_churn_ledger import A, B, C, scanned


def test_a_dependency_added_then_removed_cancels_out_over_the_range() -> None:
    folded = scanned()
    folded.commit("c1", edges_upserted=(import_edge(C, A, 3.0),))
    folded.commit("c2", edges_removed=(import_edge(C, A).key,), edges_upserted=(import_edge(B, C),))
    entries = list(folded.ledger.entries)
    first = structural_diff(entries, 0, 1)
    assert (first.entries, first.dependencies_added, first.dependencies_removed) == (
        1,
        (Dependency(C, A, 3.0),),
        (),
    )
    both = structural_diff(entries, 0, 2)
    assert (both.entries, both.dependencies_added, both.dependencies_removed) == (
        2,
        (Dependency(B, C, 1.0),),
        (),
    )
    second = structural_diff(entries, 1, 2)
    assert second.dependencies_removed == (Dependency(C, A, 3.0),)


def test_renames_pair_a_removed_and_an_added_file_with_the_same_contents() -> None:
    folded = scanned()
    folded.commit("c1", files_removed=(B,), files_upserted=(file_record("lib/b.py"),))
    folded.commit("c2", files_upserted=(file_record("d.py", "h4"),))
    folded.commit("c3", files_removed=(C,), files_upserted=(file_record("e.py", "h5"),))
    folded.commit("c4", files_removed=("d.py",))
    d = structural_diff(list(folded.ledger.entries), 0, 4)
    assert d.files_renamed == (Rename(B, "lib/b.py"),)
    assert (d.files_added, d.files_removed) == (("e.py",), (C,))  # d.py came and went
    assert d.dependencies_removed == (Dependency(A, B, 1.0),)


def test_files_moved_between_neighborhoods_and_entry_points_changed() -> None:
    folded = scanned()
    ledger = folded.ledger
    ledger.apply_snapshot(neighborhood_snapshot("app", 1, 4, {"nb-1": (A, B), "nb-2": (C,)}))
    folded.commit("c1", edges_upserted=(import_edge(C, B),))
    to_one = FilesMoved(source="nb-2", target="nb-1", paths=(C,))
    ledger.apply_snapshot(
        neighborhood_snapshot("app", 2, 7, {"nb-1": (B, A, C)}, changes=(to_one,))
    )
    folded.commit("c2", edges_upserted=(import_edge(A, C),))
    back = FilesMoved(source="nb-1", target="nb-2", paths=(C,))
    away = FilesMoved(source="nb-1", target="nb-3", paths=(A,))
    ledger.apply_snapshot(
        neighborhood_snapshot(
            "app", 3, 10, {"nb-1": (B,), "nb-2": (C,), "nb-3": (A,)}, changes=(back, away)
        )
    )
    entries = list(ledger.entries)
    d = structural_diff(entries, 0, 2)
    assert d.files_moved == (Move(A, "nb-1", "nb-3"),)  # c moved and moved back
    assert d.entry_points_changed == (
        EntryPointChange("nb-1", "NB-1", (A, B), (B,)),
        EntryPointChange("nb-3", "NB-3", (), (A,)),
    )
    one = structural_diff(entries, 0, 1)
    assert one.files_moved == (Move(C, "nb-2", "nb-1"),)
    assert one.entry_points_changed == (
        EntryPointChange("nb-1", "NB-1", (A, B), (B, A)),
        EntryPointChange("nb-2", "NB-2", (C,), ()),
    )


def test_base_must_come_before_head() -> None:
    entries = list(scanned().ledger.entries)
    with pytest.raises(ValueError, match="before head"):
        structural_diff(entries, 0, 0)
