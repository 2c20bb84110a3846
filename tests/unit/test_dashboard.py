"""The dashboard's routes over a real read model: page, assets, data, live events."""

from __future__ import annotations

import asyncio
import json
from importlib.resources import files

import pytest
from fastapi.testclient import TestClient

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.dashboard.live import model_events, signature
from query.dashboard.payload import circle_layout, neighborhood_map
from query.read_model import ReadModel
from stores.neighborhoods import (
    FileStanding,
    NeighborhoodLink,
    NeighborhoodRecord,
    NeighborhoodSnapshot,
)
from stores.projections.graph_state import FileGraphState
from tests.factories import Stamp
from tests.unit.test_neighborhood_stream import FILES


def record(nid: str, label: str, size: int, cohesion: float) -> NeighborhoodRecord:
    return NeighborhoodRecord(
        id=nid,
        kind="cluster",
        label=label,
        size=size,
        cohesion=cohesion,
        entry_points=(f"{label}/main.py",),
        internal_weight=float(size),
        external_weight=1.0,
    )


def standing(path: str, nid: str, degree: int, importance: float, hub: bool = False):
    return FileStanding(
        path=path,
        neighborhood=nid,
        strength=0.5,
        cross_cutting=False,
        degree=degree,
        in_degree=degree,
        out_degree=0,
        weighted_in=float(degree),
        hub=hub,
        expansion_hub=hub,
        pagerank=importance,
        semantic=0.0,
        importance=importance,
    )


SNAPSHOT = NeighborhoodSnapshot(
    repo="app-1",
    seq=1,
    graph_seq=0,
    indexed_commit=None,
    computed_at=5.0,
    recluster_ms=1.0,
    resolution=1.0,
    modularity=0.25,
    hub_threshold=2.0,
    neighborhoods=(
        record("nb-small", "tools", 1, 0.0),
        record("nb-big", "core", 3, 0.9),
        record("nb-mid", "api", 2, 0.5),
    ),
    files=(
        standing("core/main.py", "nb-big", 3, 1.0, hub=True),
        standing("core/util.py", "nb-big", 1, 0.4),
        standing("core/idle.py", "nb-big", 0, 0.1),
        standing("api/main.py", "nb-mid", 2, 0.6),
        standing("api/view.py", "nb-mid", 1, 0.3),
        standing("tools/main.py", "nb-small", 1, 0.2),
    ),
    links=(
        NeighborhoodLink(a="nb-big", b="nb-mid", weight=2.0),
        NeighborhoodLink(a="nb-big", b="nb-small", weight=1.0),
    ),
)


def test_a_circle_starts_at_the_top_and_goes_clockwise() -> None:
    assert circle_layout(1) == [(0.0, 0.0)]
    assert circle_layout(3) == [(0.0, 1.0), (0.866, -0.5), (-0.866, -0.5)]
    assert circle_layout(4) == [(0.0, 1.0), (1.0, 0.0), (0.0, -1.0), (-1.0, 0.0)]


def test_the_map_shows_the_largest_neighborhoods_and_only_the_links_among_them() -> None:
    nodes, links, total = neighborhood_map(SNAPSHOT, max_nodes=2)
    assert [(n.id, n.size, n.hubs, n.x, n.y) for n in nodes] == [
        ("nb-big", 3, 1, 0.0, 1.0),
        ("nb-mid", 2, 0, 0.0, -1.0),
    ]
    assert [(link.a, link.b, link.weight) for link in links] == [("nb-big", "nb-mid", 2.0)]
    assert total == 2


def test_the_data_of_a_repository_is_its_map_hubs_sizes_and_freshness() -> None:
    model = ReadModel(clock=lambda: 10.0)
    model.apply_snapshot(SNAPSHOT)
    client = TestClient(create_api(model, ready=lambda: True))
    body = client.get("/dashboard/data/app-1", params={}).json()
    assert body["neighborhoods"] == [
        {
            "id": "nb-big",
            "label": "core",
            "kind": "cluster",
            "size": 3,
            "cohesion": 0.9,
            "entry_points": ["core/main.py"],
            "hubs": 1,
            "x": 0.0,
            "y": 1.0,
        },
        {
            "id": "nb-mid",
            "label": "api",
            "kind": "cluster",
            "size": 2,
            "cohesion": 0.5,
            "entry_points": ["api/main.py"],
            "hubs": 0,
            "x": 0.866,
            "y": -0.5,
        },
        {
            "id": "nb-small",
            "label": "tools",
            "kind": "cluster",
            "size": 1,
            "cohesion": 0.0,
            "entry_points": ["tools/main.py"],
            "hubs": 0,
            "x": -0.866,
            "y": -0.5,
        },
    ]
    assert (body["neighborhoods_total"], body["links_total"]) == (3, 2)
    assert body["links"] == [
        {"a": "nb-big", "b": "nb-mid", "weight": 2.0},
        {"a": "nb-big", "b": "nb-small", "weight": 1.0},
    ]
    # By degree, then path; a file without dependencies is no hub candidate.
    assert [(h["path"], h["degree"], h["importance"], h["hub"]) for h in body["hubs"]] == [
        ("core/main.py", 3, 1.0, True),
        ("api/main.py", 2, 0.6, False),
        ("api/view.py", 1, 0.3, False),
        ("core/util.py", 1, 0.4, False),
        ("tools/main.py", 1, 0.2, False),
    ]
    assert (body["hubs_total"], body["hub_threshold"]) == (5, 2.0)
    assert body["sizes"] == {"files": 0, "symbols": 0, "edges": 0}
    assert (body["snapshot"]["seq"], body["snapshot"]["modularity"]) == (1, 0.25)
    assert body["freshness"]["status"] == "stale"
    assert client.get("/dashboard/data/nope").status_code == 404


@pytest.fixture
def indexed() -> tuple[ReadModel, RepoIndex, Stamp]:
    model, index, stamp = ReadModel(clock=lambda: 1002.0), RepoIndex("app-1"), Stamp()
    events = [stamp.changed(p, t, origin="scan") for p, t in FILES.items()]
    for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        model.apply_delta(delta)
    return model, index, stamp


def test_data_follow_the_deltas_and_the_recluster(indexed) -> None:
    model, index, _ = indexed
    client = TestClient(create_api(model, ready=lambda: True))
    before = client.get("/dashboard/data/app-1").json()
    assert (before["delta_seq"], before["sizes"]["files"], before["sizes"]["symbols"]) == (8, 6, 6)
    assert (before["neighborhoods"], before["links"], before["hubs"]) == ([], [], [])
    assert (before["snapshot"]["seq"], before["snapshot"]["stale"]) == (None, True)

    snapshot = recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=1001.0)
    model.apply_snapshot(snapshot)
    after = client.get("/dashboard/data/app-1").json()
    ids = sorted(n.id for n in snapshot.neighborhoods)
    assert [(n["id"], n["size"], n["x"], n["y"]) for n in after["neighborhoods"]] == [
        (ids[0], 3, 0.0, 1.0),
        (ids[1], 3, 0.0, -1.0),
    ]
    assert sorted(n["label"] for n in after["neighborhoods"]) == ["pkg_a", "pkg_b"]
    assert after["links"] == [{"a": ids[0], "b": ids[1], "weight": 1.0}]
    assert [(h["path"], h["degree"]) for h in after["hubs"][:2]] == [
        ("pkg_a/a1.py", 3),
        ("pkg_b/b1.py", 3),
    ]
    assert (after["hubs_total"], after["snapshot"]["seq"], after["snapshot"]["stale"]) == (
        6,
        1,
        False,
    )


def test_the_page_and_its_assets_ship_with_the_packages() -> None:
    client = TestClient(create_api(ReadModel(), ready=lambda: True))
    page = client.get("/dashboard")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    for name in ("plotly.min.js", "dashboard.js", "dashboard.css"):
        assert f'"dashboard/assets/{name}"' in page.text
    for chart in ("churn-chart", "size-chart", "neighborhood-map", "hubs-chart"):
        assert f'id="{chart}"' in page.text

    plotly = client.get("/dashboard/assets/plotly.min.js")
    shipped = files("plotly").joinpath("package_data/plotly.min.js").read_bytes()
    assert plotly.content == shipped
    assert plotly.headers["content-type"].startswith("text/javascript")
    script = client.get("/dashboard/assets/dashboard.js")
    assert script.headers["content-type"].startswith("text/javascript")
    assert 'new EventSource("dashboard/events")' in script.text
    style = client.get("/dashboard/assets/dashboard.css")
    assert style.headers["content-type"].startswith("text/css")
    for refused in ("index.html", "payload.py", "..%2Fpayload.py", "plotly.js"):
        assert client.get(f"/dashboard/assets/{refused}").status_code == 404, refused


def test_no_dashboard_route_is_an_operation_of_the_schema() -> None:
    model = ReadModel()
    model.apply_snapshot(SNAPSHOT)
    api = create_api(model, ready=lambda: True)
    client = TestClient(api)
    for path in ("/dashboard", "/dashboard/assets/dashboard.css", "/dashboard/data/app-1"):
        assert client.get(path).status_code == 200, path
    paths = api.openapi()["paths"]
    assert "/repositories/{repo}/hubs" in paths
    assert not [p for p in paths if p.startswith("/dashboard")]


def test_the_signature_names_what_the_page_shows(indexed) -> None:
    model, index, _ = indexed
    assert signature(model) == {"app-1": [8, 0, "stale", 0, "c1", None]}
    model.apply_snapshot(
        recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=1.0)
    )
    assert signature(model) == {"app-1": [8, 1, "stale", 0, "c1", None]}


def parse(chunk: str) -> tuple[str, dict]:
    head, data = chunk.strip().split("\n")
    return head.removeprefix("event: "), json.loads(data.removeprefix("data: "))


async def test_an_event_goes_out_when_the_model_moves_and_the_stream_ends_on_stop(
    indexed,
) -> None:
    model, index, stamp = indexed
    stopping = asyncio.Event()
    stream = model_events(model, poll_s=0.01, lifetime_s=30.0, stopping=stopping)
    assert await anext(stream) == "retry: 500\n\n"
    assert parse(await anext(stream)) == (
        "model",
        {"repos": {"app-1": [8, 0, "stale", 0, "c1", None]}, "deltas_applied": 8},
    )
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    assert not waiting.done(), "an event without a change"
    delta = index.handle(stamp.changed("pkg_a/a4.py", "def f4():\n    pass\n"), now=1003.0)
    assert delta is not None and model.apply_delta(delta)
    assert parse(await asyncio.wait_for(waiting, 1.0)) == (
        "model",
        {"repos": {"app-1": [9, 0, "stale", 0, "c1", None]}, "deltas_applied": 9},
    )
    stopping.set()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(stream), 1.0)


async def test_a_stream_ends_by_itself_after_its_lifetime() -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    chunks = [c async for c in model_events(ReadModel(), poll_s=0.01, lifetime_s=0.2)]
    assert chunks == ["retry: 500\n\n", 'event: model\ndata: {"repos":{},"deltas_applied":0}\n\n']
    assert 0.2 <= loop.time() - started < 1.0
