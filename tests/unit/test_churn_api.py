"""The churn and structural diff endpoints over a real read model fed real deltas."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.mcp_tools import operations
from query.read_model import ReadModel
from stores.projections.graph_state import FileGraphState
from tests.factories import Stamp
from tests.unit.test_neighborhood_stream import FILES

C2 = "2" * 40
B3_USES_A2 = "from pkg_b.b1 import g1\nfrom pkg_a.a2 import f2\ndef g3():\n    g1()\n    f2()\n"
DEPENDENCY = {"source": "pkg_b/b3.py", "target": "pkg_a/a2.py", "weight": 1.0}


def feed(model: ReadModel, index: RepoIndex, events: list) -> None:
    for event in events:
        delta = index.handle(event, now=1000.0 + event.seq)
        assert delta is not None
        model.apply_delta(delta)


def clustered(model: ReadModel, index: RepoIndex, previous=None):
    snapshot = recluster(FileGraphState.of(index.state), previous, ReclusterSettings(), now=1001.0)
    model.apply_snapshot(snapshot)
    return snapshot


@pytest.fixture
def indexed() -> tuple[ReadModel, RepoIndex, Stamp, TestClient]:
    """A scan at c1 (clustered), then commit C2 where b3 starts using pkg_a's f2."""
    model, index, stamp = ReadModel(clock=lambda: 1100.0), RepoIndex("app-1"), Stamp()
    scan = [stamp.changed(p, t, origin="scan") for p, t in FILES.items()]
    feed(model, index, [stamp.claim(), *scan, stamp.scan_completed("c1")])
    first = clustered(model, index)
    feed(
        model,
        index,
        [
            stamp.commit_observed(C2, ("pkg_b/b3.py",)),
            stamp.changed("pkg_b/b3.py", B3_USES_A2, origin="commit", commit=C2),
            stamp.commit_completed(C2),
        ],
    )
    clustered(model, index, previous=first)
    return model, index, stamp, TestClient(create_api(model, ready=lambda: True))


def test_the_ledger_lists_the_scan_then_the_commit(indexed) -> None:
    model, _, _, client = indexed
    page = client.get("/repositories/app-1/churn").json()
    assert (page["total"], page["offset"], page["limit"], page["truncated"]) == (2, 0, 50, False)
    scan, commit = page["items"]
    assert (scan["id"], scan["kind"], scan["files_added"], scan["dependencies_added"]) == (
        "scan:c1",
        "scan",
        6,
        7,
    )
    assert (scan["first_seq"], scan["last_seq"], scan["new_cycles"]) == (1, 8, 2)
    assert scan["neighborhood_changes"]["created"] == scan["size"]["neighborhoods"] == 2
    snapshot = model.repos["app-1"].neighborhoods
    assert snapshot is not None
    assert commit == {
        "id": C2,
        "kind": "commit",
        "commit": C2,
        "parents": ["0" * 40],
        "subject": "change",
        "branch": "main",
        "committed_at": 999.0,
        "indexed_at": 1011.0,
        "first_seq": 9,
        "last_seq": 11,
        "files_added": 0,
        "files_removed": 0,
        "files_changed": 1,
        "symbols_added": 0,
        "symbols_removed": 0,
        "symbols_changed": 1,
        "edges_added": {"CALLS": 1, "IMPORTS": 1},
        "edges_removed": {},
        "dependencies_added": 1,
        "dependencies_removed": 0,
        "neighborhood_changes": {
            "created": 0,
            "removed": 0,
            "split": 0,
            "merged": 0,
            "files_moved": 0,
            "cohesion_changed": 2,
        },
        "hubs_gained": [],
        "hubs_lost": [],
        "new_cycles": 1,
        "size": {
            "files": 6,
            "symbols": 6,
            "nodes": scan["size"]["nodes"],
            "edges": scan["size"]["edges"] + 2,
            "neighborhoods": len(snapshot.neighborhoods),
        },
        "modularity": snapshot.modularity,
    }
    assert page["freshness"]["indexed_commit"] == C2

    cut = client.get("/repositories/app-1/churn", params={"max_tokens": 100}).json()
    assert (cut["total"], len(cut["items"]), cut["truncated"]) == (2, 1, True)
    paged = client.get("/repositories/app-1/churn", params={"offset": 1, "limit": 1}).json()
    assert [i["id"] for i in paged["items"]] == [C2] and not paged["truncated"]
    assert client.get("/repositories/nope/churn").status_code == 404


def test_one_entry_with_its_lists_bounded_by_max_tokens(indexed) -> None:
    model, _, _, client = indexed
    detail = client.get(f"/repositories/app-1/churn/{C2[:8]}").json()
    assert detail["id"] == C2 and not detail["truncated"]
    snapshot = model.repos["app-1"].neighborhoods
    assert snapshot is not None
    events = [c.model_dump(mode="json") for c in snapshot.changes]
    assert detail["neighborhood_events"] == {"total": len(events), "items": events}
    assert detail["files"]["changed"] == {"total": 1, "items": ["pkg_b/b3.py"]}
    assert detail["symbols"]["changed"] == {"total": 1, "items": ["pkg_b/b3.py:g3"]}
    assert detail["dependencies"] == {
        "added": {"total": 1, "items": [DEPENDENCY]},
        "removed": {"total": 0, "items": []},
    }
    assert detail["cycles"] == {"total": 1, "items": [sorted(FILES)]}

    scan = client.get("/repositories/app-1/churn/scan:c1").json()
    assert scan["files"]["added"] == {"total": 6, "items": []}  # a scan keeps counts
    assert scan["truncated"] is True
    assert scan["cycles"]["total"] == 2 and len(scan["cycles"]["items"]) == 2

    tight = client.get(f"/repositories/app-1/churn/{C2}", params={"max_tokens": 100}).json()
    assert tight["truncated"] is True and tight["dependencies"]["added"]["total"] == 1
    kept = [tight["files"]["changed"]["items"], tight["dependencies"]["added"]["items"]]
    assert kept == [["pkg_b/b3.py"], []]  # the summary spent the budget: one item, the first
    assert client.get("/repositories/app-1/churn/deadbeef").status_code == 404
    assert client.get("/repositories/app-1/churn/working-tree").status_code == 404


def test_the_working_tree_entry_follows_edits_since_the_last_commit(indexed) -> None:
    model, index, stamp, client = indexed
    feed(model, index, [stamp.changed("pkg_b/b3.py", FILES["pkg_b/b3.py"])])
    page = client.get("/repositories/app-1/churn").json()
    assert [i["id"] for i in page["items"]] == ["scan:c1", C2, "working-tree"]
    wt = client.get("/repositories/app-1/churn/working-tree").json()
    assert (wt["kind"], wt["commit"], wt["first_seq"], wt["dependencies_removed"]) == (
        "working_tree",
        None,
        12,
        1,
    )
    assert wt["dependencies"]["removed"]["items"] == [DEPENDENCY]


def test_the_structural_diff_between_two_commits(indexed) -> None:
    _, _, _, client = indexed
    diff = client.get("/repositories/app-1/diff", params={"base": "c1", "head": C2}).json()
    assert {k: v for k, v in diff.items() if k != "freshness"} == {
        "repo": "app-1",
        "base": "c1",
        "head": C2,
        "entries": 1,
        "dependencies_added": {"total": 1, "items": [DEPENDENCY]},
        "dependencies_removed": {"total": 0, "items": []},
        "files_added": {"total": 0, "items": []},
        "files_removed": {"total": 0, "items": []},
        "files_renamed": {"total": 0, "items": []},
        "files_moved": diff["files_moved"],
        "entry_points_changed": diff["entry_points_changed"],
        "truncated": False,
    }
    reversed_ = client.get("/repositories/app-1/diff", params={"base": C2, "head": "c1"})
    assert reversed_.status_code == 400
    unknown = client.get("/repositories/app-1/diff", params={"base": "c0", "head": C2})
    assert unknown.status_code == 404 and "base commit" in unknown.text


def test_the_endpoints_are_mcp_tools() -> None:
    api = create_api(ReadModel(), ready=lambda: True)
    tools = {op.tool: op for op in operations(api.openapi())}
    assert tools["churn"].query_params == ("limit", "offset", "max_tokens")
    assert tools["churn_entry"].path_params == ("repo", "entry_id")
    assert tools["structural_diff"].query_params == ("base", "head", "max_tokens")
    assert tools["structural_diff"].input_schema["required"] == ["repo", "base", "head"]
