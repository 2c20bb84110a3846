"""The neighborhood, importance, folder and overview endpoints over a real read model."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.read_model import ReadModel
from stores.projections.graph_state import FileGraphState
from tests.factories import Stamp
from tests.unit.test_neighborhood_stream import FILES

MOVED_B3 = "from pkg_a.a1 import f1\nfrom pkg_a.a2 import f2\ndef g3():\n    f1()\n    f2()\n"


@pytest.fixture
def indexed() -> tuple[ReadModel, RepoIndex, Stamp]:
    model, index, stamp = ReadModel(clock=lambda: 1002.0), RepoIndex("app-1"), Stamp()
    events = [stamp.claim(), *(stamp.changed(p, t, origin="scan") for p, t in FILES.items())]
    events += [stamp.changed("README.md", "# app", origin="scan"), stamp.scan_completed("c1")]
    for event in events:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        model.apply_delta(delta)
    return model, index, stamp


def clustered(model: ReadModel, index: RepoIndex, previous=None):
    snapshot = recluster(FileGraphState.of(index.state), previous, ReclusterSettings(), now=1001.0)
    model.apply_snapshot(snapshot)
    return snapshot


def test_neighborhoods_are_409_until_clustered_then_listed_with_their_stamp(indexed) -> None:
    model, index, _ = indexed
    client = TestClient(create_api(model, ready=lambda: True))
    assert client.get("/repositories/app-1/hubs").status_code == 409
    empty = client.get("/repositories/app-1/neighborhoods").json()
    assert (empty["total"], empty["snapshot"]["seq"], empty["snapshot"]["stale"]) == (0, None, True)

    clustered(model, index)
    page = client.get("/repositories/app-1/neighborhoods", params={"limit": 1}).json()
    assert page["total"] == 2 and len(page["items"]) == 1
    assert page["snapshot"] == {
        "seq": 1,
        "graph_seq": 9,
        "indexed_commit": "c1",
        "computed_at": 1001.0,
        "recluster_ms": page["snapshot"]["recluster_ms"],
        "modularity": page["snapshot"]["modularity"],
        "resolution": 1.0,
        "stale": False,
    }
    assert page["freshness"]["indexed_commit"] == "c1"
    assert client.get("/repositories/nope/neighborhoods").status_code == 404


def test_one_neighborhood_its_members_links_and_the_neighborhood_of_a_file(indexed) -> None:
    model, index, _ = indexed
    snapshot = clustered(model, index)
    client = TestClient(create_api(model, ready=lambda: True))
    of = client.get("/repositories/app-1/neighborhood-of", params={"path": "pkg_b/b1.py"})
    body = of.json()
    assert body["neighborhood"]["label"] == "pkg_b"
    # Inside: b1 -> b2 and b3 -> b1 (one call each); outside: a1 -> b1. (2 - 1) / 3.
    assert body["standing"]["in_degree"] == 2
    assert body["standing"]["strength"] == pytest.approx(1 / 3, abs=1e-6)
    nid = body["neighborhood"]["id"]
    detail = client.get(f"/repositories/app-1/neighborhoods/{nid}", params={"limit": 2}).json()
    assert detail["members_total"] == 3 and len(detail["members"]) == 2
    assert [m["path"].split("/")[0] for m in detail["members"]] == ["pkg_b", "pkg_b"]
    other = next(n.id for n in snapshot.neighborhoods if n.id != nid)
    assert detail["links"] == [{"neighborhood": other, "label": "pkg_a", "weight": 1.0}]
    missing = client.get("/repositories/app-1/neighborhood-of", params={"path": "README.md"})
    assert missing.status_code == 404 and "only parsed source files" in missing.text
    assert client.get("/repositories/app-1/neighborhoods/nb-nope").status_code == 404


def test_changes_are_listed_newest_first_and_a_moved_graph_is_stale(indexed) -> None:
    model, index, stamp = indexed
    first = clustered(model, index)
    delta = index.handle(stamp.changed("pkg_b/b3.py", MOVED_B3), now=1003.0)
    assert delta is not None
    model.apply_delta(delta)
    client = TestClient(create_api(model, ready=lambda: True))
    assert client.get("/repositories/app-1/neighborhoods").json()["snapshot"]["stale"] is True

    clustered(model, index, previous=first)
    changes = client.get("/repositories/app-1/neighborhood-changes").json()
    kinds = [(c["snapshot"], c["change"]["kind"]) for c in changes["items"]]
    assert kinds[-2:] == [(1, "created"), (1, "created")]  # newest first
    moved = [
        (c["snapshot"], c["change"]["paths"])
        for c in changes["items"]
        if c["change"]["kind"] == "files_moved"
    ]
    assert moved == [(2, ["pkg_b/b3.py"])]
    assert client.get("/repositories/app-1/neighborhoods").json()["snapshot"]["stale"] is False


def test_hubs_importance_folders_and_overview(indexed) -> None:
    model, index, _ = indexed
    clustered(model, index)
    client = TestClient(create_api(model, ready=lambda: True))
    hubs = client.get("/repositories/app-1/hubs", params={"limit": 2}).json()
    assert hubs["total"] == 6 and hubs["hub_threshold"] == 50.0
    assert [h["path"] for h in hubs["items"]] == ["pkg_a/a1.py", "pkg_b/b1.py"]  # degree 3
    assert not any(h["hub"] for h in hubs["items"])
    ranked = client.get("/repositories/app-1/importance").json()
    assert ranked["total"] == 6
    scores = [f["importance"] for f in ranked["items"]]
    assert scores == sorted(scores, reverse=True)

    level1 = client.get("/repositories/app-1/folders", params={"level": 1}).json()
    assert [(f["path"], f["total"]["files"], f["total"]["functions"]) for f in level1["items"]] == [
        ("pkg_a", 3, 3),
        ("pkg_b", 3, 3),
    ]
    root = client.get("/repositories/app-1/folders", params={"level": 2}).json()["items"][0]
    assert (root["path"], root["total"]["files"], root["total"]["internal_imports"]) == ("", 7, 7)
    files = client.get("/repositories/app-1/files-by-level", params={"level": 2}).json()
    assert [f["path"] for f in files["items"]] == ["README.md"]

    overview = client.get("/repositories/app-1/overview").json()
    assert overview["sizes"]["files"] == 7 and overview["sizes"]["source_files"] == 6
    assert overview["neighborhoods_total"] == 2
    assert [lang["language"] for lang in overview["languages"]] == ["python", "unknown"][
        : len(overview["languages"])
    ]
    assert overview["importance"][0]["path"] == ranked["items"][0]["path"]


def test_a_snapshot_maps_each_file_to_its_neighborhood_and_importance(indexed) -> None:
    model, index, _ = indexed
    snapshot = clustered(model, index)
    membership, importance = snapshot.membership(), snapshot.importance()
    assert set(membership) == set(importance) == {f.path for f in snapshot.files}
    assert set(membership.values()) <= {n.id for n in snapshot.neighborhoods}
    for standing in snapshot.files:
        assert (membership[standing.path], importance[standing.path]) == (
            standing.neighborhood,
            standing.importance,
        )
