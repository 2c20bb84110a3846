"""Navigation over HTTP (issue 20): the routes answer the `QueryService`'s JSON, their
bounds are the OpenAPI document's, and a refusal is the status every route gives."""

from __future__ import annotations

from fastapi.testclient import TestClient

from query.api import create_api
from tests.unit.test_retrieval_api import indexed_model


def client() -> TestClient:
    return TestClient(create_api(indexed_model(), ready=lambda: True))


def test_the_routes_answer_definitions_callers_paths_and_neighbors() -> None:
    http = client()
    found = http.get("/repositories/app-1/definition", params={"name": "Session.send"}).json()
    assert [(d["id"], d["line_start"], d["line_end"], d["match"]) for d in found["items"]] == [
        ("sym:app/sessions.py:Session.send", 4, 6, "exact")
    ]
    assert found["freshness"]["indexed_commit"] == "c1"
    callers = http.get(
        "/repositories/app-1/callers", params={"symbol": "send", "path": "app/sessions.py"}
    ).json()
    assert [
        (e["other"]["id"], e["kind"], e["confidence"], e["site_path"], e["site_line"])
        for e in callers["items"]
    ] == [
        ("sym:tests/test_sessions.py:test_send", "CALLS", "name_match", "tests/test_sessions.py", 4)
    ]
    assert (callers["total"], callers["next_offset"]) == (1, None)
    path = http.get(
        "/repositories/app-1/path",
        params={"source": "tests/test_sessions.py", "target": "app/models.py"},
    ).json()
    assert [n["id"] for n in path["nodes"]] == [
        "file:tests/test_sessions.py",
        "file:app/sessions.py",
        "file:app/models.py",
    ]
    assert [h["kind"] for h in path["hops"]] == ["TESTS", "IMPORTS"]
    near = http.get(
        "/repositories/app-1/neighbors", params={"node": "app/models.py", "limit": 1}
    ).json()
    assert [n["id"] for n in near["items"]] == ["file:app/models.py"]
    assert (near["total"], near["next_offset"]) == (3, 1)


def test_refusals_and_bounds() -> None:
    http = client()
    unknown = http.get("/repositories/nope/callees", params={"symbol": "send"})
    assert (unknown.status_code, unknown.json()) == (
        404,
        {"detail": "unknown repository 'nope'; see /repositories"},
    )
    missing = http.get("/repositories/app-1/references", params={"symbol": "Nothing"})
    assert (missing.status_code, missing.json()["detail"]) == (
        404,
        "no symbol 'Nothing' in repository 'app-1'",
    )
    assert (
        http.get("/repositories/app-1/callers", params={"symbol": "x", "limit": 201}).status_code
        == 422
    )
    too_far = http.get(
        "/repositories/app-1/path", params={"source": "a", "target": "b", "max_hops": 9}
    )
    assert too_far.status_code == 422
