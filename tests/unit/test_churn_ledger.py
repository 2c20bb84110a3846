"""The churn ledger on hand-built delta sequences: exact entries out."""

from __future__ import annotations

from query.churn.entry import Changes, CommitInfo, Dependency, Size
from query.churn.ledger import MAX_ENTRIES, ChurnLedger
from stores.neighborhoods import FilesMoved
from stores.projections.graph_state import FileGraphState
from stores.repo_state import RepoState
from tests.factories import (
    commit_record,
    file_record,
    graph_delta,
    import_edge,
    neighborhood_snapshot,
    symbol_record,
)

A, B, C = "a.py", "b.py", "c.py"


class Folded:
    """A repository's state, file graph and ledger, fed as the read model feeds them."""

    def __init__(self) -> None:
        self.state = RepoState("app")
        self.graph = FileGraphState("app")
        self.ledger = ChurnLedger()

    def apply(self, **changes: object) -> None:
        delta = graph_delta("app", self.state.seq + 1, **changes)
        prior = self.ledger.before(self.state, self.graph, delta)
        assert self.state.apply(delta) and self.graph.apply(delta)
        self.ledger.apply(delta, prior, self.state, self.graph)

    def scan(self) -> None:
        """a -> b; c alone; c holds f and g."""
        self.apply(files_upserted=(file_record(A, origin="scan"),))
        self.apply(files_upserted=(file_record(B, origin="scan"),))
        symbols = (symbol_record("f"), symbol_record("g"))
        self.apply(files_upserted=(file_record(C, symbols=symbols, origin="scan"),))
        self.apply(
            edges_upserted=(import_edge(A, B),),
            barrier="scan_completed",
            indexed_commit="c0",
            branch="main",
        )

    def commit(self, sha: str, **changes: object) -> None:
        self.apply(commit=commit_record(sha), branch="main")
        if changes:
            self.apply(**changes)
        self.apply(barrier="commit_completed", indexed_commit=sha, branch="main")

    def working_tree(self):
        return self.ledger.working_tree(self.state, self.graph)


def scanned() -> Folded:
    folded = Folded()
    folded.scan()
    return folded


def test_a_scan_is_one_entry_of_counts() -> None:
    folded = scanned()
    (scan,) = folded.ledger.entries
    assert (scan.id, scan.kind, scan.first_seq, scan.last_seq) == ("scan:c0", "scan", 1, 4)
    assert scan.info == CommitInfo("c0", branch="main")
    assert (scan.detailed, scan.files, scan.symbols) == (
        False,
        Changes(counts=(3, 0, 0)),
        Changes(counts=(2, 0, 0)),
    )
    assert (scan.edges_added, scan.dependency_counts, scan.dependencies_added) == (
        {"IMPORTS": 1},
        (1, 0),
        (),
    )
    assert scan.size == Size(files=3, symbols=2, nodes=0, edges=1)
    assert scan.new_cycles == () and scan.neighborhood is None
    assert folded.working_tree() is None


def test_a_commit_adding_a_dependency_then_one_removing_it() -> None:
    folded = scanned()
    folded.commit(
        "c1",
        files_upserted=(file_record(C, "h1", origin="commit"),),
        edges_upserted=(import_edge(C, A, 2.0),),
    )
    folded.commit("c2", edges_removed=(import_edge(C, A).key,))
    _, adding, removing = folded.ledger.entries
    assert (adding.id, adding.kind, adding.first_seq, adding.last_seq) == ("c1", "commit", 5, 7)
    assert adding.info == CommitInfo("c1", ("0" * 40,), "change", "main", 999.0)
    assert adding.files == Changes(changed=(C,), counts=(0, 0, 1))
    assert adding.symbols == Changes(removed=("c.py:f", "c.py:g"), counts=(0, 2, 0))
    assert (adding.edges_added, adding.edges_removed) == ({"IMPORTS": 1}, {})
    assert adding.dependencies_added == (Dependency(C, A, 2.0),)
    assert adding.dependency_counts == (1, 0)
    assert removing.dependencies_removed == (Dependency(C, A, 2.0),)
    assert (removing.edges_removed, removing.dependency_counts) == ({"IMPORTS": 1}, (0, 1))
    assert removing.files == Changes() and removing.indexed_at == 1010.0


def test_a_change_undone_inside_an_entry_cancels_out() -> None:
    folded = scanned()
    folded.apply(commit=commit_record("c1"), branch="main")
    folded.apply(
        files_upserted=(file_record(A, "h1", origin="commit"),),
        edges_upserted=(import_edge(A, C),),
    )
    folded.apply(
        files_upserted=(file_record(A, "h0", origin="commit"),),
        edges_removed=(import_edge(A, C).key,),
    )
    folded.apply(barrier="commit_completed", indexed_commit="c1", branch="main")
    entry = folded.ledger.entries[-1]
    assert (entry.id, entry.first_seq, entry.last_seq) == ("c1", 5, 8)
    assert (entry.files, entry.edges_added, entry.edges_removed) == (Changes(), {}, {})
    assert (entry.dependencies_added, entry.dependencies_removed) == ((), ())

    folded.apply(files_upserted=(file_record(B, "h5"),), edges_upserted=(import_edge(B, C),))
    assert folded.working_tree() is not None
    folded.apply(files_upserted=(file_record(B, "h0"),), edges_removed=(import_edge(B, C).key,))
    assert folded.working_tree() is None


def test_symbols_added_removed_and_changed() -> None:
    folded = scanned()
    symbols = (symbol_record("g", "def g(x):"), symbol_record("h"))
    folded.commit("c1", files_upserted=(file_record(C, "h1", symbols=symbols),))
    entry = folded.ledger.entries[-1]
    assert entry.symbols == Changes(("c.py:h",), ("c.py:f",), ("c.py:g",), (1, 1, 1))
    assert entry.size == Size(files=3, symbols=2, nodes=0, edges=1)


def test_a_rename_is_a_file_removed_and_one_added_with_the_same_hash() -> None:
    folded = scanned()
    folded.commit("c1", files_removed=(B,), files_upserted=(file_record("lib/b.py"),))
    entry = folded.ledger.entries[-1]
    assert entry.files == Changes(("lib/b.py",), (B,), (), (1, 1, 0))
    assert entry.file_hashes == {"lib/b.py": "h0", B: "h0"}
    # b's file went, so a -> b is no dependency any more (its edge is left dangling).
    assert entry.dependencies_removed == (Dependency(A, B, 1.0),)


def test_a_commit_closing_an_import_loop_has_a_new_cycle_and_a_hub_once_clustered() -> None:
    folded = scanned()
    ledger = folded.ledger
    ledger.apply_snapshot(neighborhood_snapshot("app", 1, 4, {"nb-1": (A, B), "nb-2": (C,)}))
    folded.commit("c1", edges_upserted=(import_edge(B, A),))
    # Computed from the commit's barrier (seq 7) but read before the delta: it waits.
    late = neighborhood_snapshot(
        "app",
        2,
        8,
        {"nb-1": (B, A, C)},
        hubs=(B,),
        changes=(FilesMoved(source="nb-2", target="nb-1", paths=(C,)),),
        modularity=0.25,
    )
    ledger.apply_snapshot(
        neighborhood_snapshot("app", 2, 7, {"nb-1": (B, A), "nb-2": (C,)}, hubs=(B,))
    )
    ledger.apply_snapshot(late)
    scan, commit = ledger.entries
    assert commit.new_cycles == ((A, B),) and scan.new_cycles == ()
    assert (commit.hubs_gained, commit.hubs_lost) == ((B,), ())
    assert commit.neighborhood is not None and commit.neighborhood.modularity == 0.5
    assert scan.neighborhood is not None and scan.neighborhood.entry_points == {
        "nb-1": ("NB-1", (A, B)),
        "nb-2": ("NB-2", (C,)),
    }

    folded.apply(files_upserted=(file_record(C, "h9"),))  # seq 8: the late snapshot's delta
    wt = folded.working_tree()
    assert wt is not None and wt.neighborhood is not None
    assert (wt.neighborhood.files_moved, wt.neighborhood.modularity) == (1, 0.25)
    assert (wt.hubs_gained, wt.hubs_lost, wt.new_cycles) == ((), (), ())


def test_work_tree_edits_show_until_the_commit_that_holds_them_closes() -> None:
    folded = scanned()
    folded.apply(files_upserted=(file_record(C, "h1"),), edges_upserted=(import_edge(C, B),))
    wt = folded.working_tree()
    assert wt is not None
    assert (wt.id, wt.kind, wt.first_seq, wt.last_seq, wt.info) == (
        "working-tree",
        "working_tree",
        5,
        5,
        CommitInfo(branch="main"),
    )
    assert wt.dependencies_added == (Dependency(C, B, 1.0),)

    # The commit reports the file the work tree already had: only its stamp changes.
    folded.commit("c1", files_upserted=(file_record(C, "h1", origin="commit", commit="c1"),))
    assert folded.working_tree() is None
    commit = folded.ledger.entries[-1]
    assert (commit.id, commit.first_seq, commit.last_seq) == ("c1", 5, 8)
    assert commit.files.changed == (C,) and commit.dependencies_added == (Dependency(C, B, 1.0),)


def test_the_ledger_keeps_the_last_entries() -> None:
    folded = scanned()
    for n in range(MAX_ENTRIES + 1):
        folded.commit(f"sha{n:04}")
    entries = folded.ledger.entries
    assert len(entries) == MAX_ENTRIES
    assert (entries[0].id, entries[-1].id) == ("sha0001", f"sha{MAX_ENTRIES:04}")
    assert folded.ledger.find("sha0000") is None and folded.ledger.find("sha0001") == 0


def test_a_replayed_or_unexpected_delta_is_not_folded() -> None:
    folded = scanned()
    old = graph_delta("app", 2, files_upserted=(file_record(A, "h7"),))
    assert folded.ledger.before(folded.state, folded.graph, old) is None
    assert folded.ledger.before(folded.state, None, graph_delta("app", 5)) is None
    folded.ledger.apply(old, None, folded.state, folded.graph)
    assert len(folded.ledger.entries) == 1 and folded.ledger.seq == 4


def test_a_second_scan_of_the_same_commit_gets_its_seq_as_id() -> None:
    folded = scanned()
    folded.apply(files_upserted=(file_record(A, "h3", origin="scan"),))
    folded.apply(barrier="scan_completed", indexed_commit="c0", branch="main")
    again = folded.ledger.entries[-1]
    assert (again.id, again.files, again.dependency_counts) == (
        "scan:6",
        Changes(counts=(0, 0, 1)),
        (0, 0),
    )


def test_a_heavier_dependency_is_no_new_dependency() -> None:
    folded = scanned()
    reference = import_edge(A, B, 2.0).model_copy(update={"kind": "REFERENCES"})
    folded.commit("c1", edges_upserted=(reference,))
    entry = folded.ledger.entries[-1]
    assert (entry.edges_added, entry.dependency_counts) == ({"REFERENCES": 1}, (0, 0))
    assert entry.dependencies_added == () and entry.new_cycles == ()


def test_hubs_compare_the_last_snapshot_of_an_entry_with_the_one_before_it() -> None:
    folded = scanned()
    ledger = folded.ledger
    ledger.apply_snapshot(neighborhood_snapshot("app", 1, 4, {"nb-1": (A, B, C)}, hubs=(A,)))
    folded.apply(commit=commit_record("c1"), branch="main")
    ledger.apply_snapshot(neighborhood_snapshot("app", 2, 5, {"nb-1": (A, B, C)}, hubs=(A, B)))
    folded.apply(barrier="commit_completed", indexed_commit="c1", branch="main")
    ledger.apply_snapshot(neighborhood_snapshot("app", 3, 6, {"nb-1": (A, B, C)}, hubs=(C,)))
    commit = ledger.entries[-1]
    assert commit.neighborhood is not None and commit.neighborhood.snapshots == 2
    assert (commit.hubs_gained, commit.hubs_lost) == ((C,), (A,))  # b came and went


def test_snapshots_read_before_their_deltas_wait_for_them() -> None:
    folded = Folded()
    ledger = folded.ledger
    ledger.apply_snapshot(neighborhood_snapshot("app", 1, 4, {"nb-1": (A, B)}, modularity=0.1))
    ledger.apply_snapshot(neighborhood_snapshot("app", 2, 7, {"nb-1": (A, B)}, modularity=0.2))
    folded.scan()
    folded.commit("c1", edges_upserted=(import_edge(C, A),))
    scan, commit = ledger.entries
    assert scan.neighborhood is not None and commit.neighborhood is not None
    assert (scan.neighborhood.modularity, commit.neighborhood.modularity) == (0.1, 0.2)
    assert scan.neighborhood.entry_points is commit.neighborhood.entry_points  # shared
