"""Impact over HTTP (issue 20): ``POST /repositories/{repo}/impact`` answers the
`QueryService`'s JSON, its body's bounds are the OpenAPI document's, and a refusal is
the status every route gives."""

from __future__ import annotations

from fastapi.testclient import TestClient

from query.api import create_api
from tests.unit.test_retrieval_api import indexed_model

ITER_CONTENT = (
    "diff --git a/app/models.py b/app/models.py\n--- a/app/models.py\n+++ b/app/models.py\n"
    "@@ -4 +4 @@\n-        return [chunk_size]\n+        return [chunk_size, 2]\n"
)


def client() -> TestClient:
    return TestClient(create_api(indexed_model(), ready=lambda: True))


def test_a_diff_answers_what_it_touches() -> None:
    answer = client().post("/repositories/app-1/impact", json={"diff": ITER_CONTENT}).json()
    assert [(f["path"], f["lines"]) for f in answer["changed_files"]] == [("app/models.py", ["L4"])]
    assert [s["id"] for s in answer["changed_symbols"]] == [
        "sym:app/models.py:Response.iter_content"
    ]
    assert [(d["id"], d["hop"], d["confidence"], d["edge_kind"]) for d in answer["dependents"]] == [
        ("sym:app/sessions.py:Session.resolve_redirects", 1, "name_match", "CALLS")
    ]
    assert [(t["path"], t["link"], t["hop"], t["of"]) for t in answer["tests"]] == [
        ("tests/test_sessions.py", "graph", 1, "app/sessions.py")
    ]
    assert [(n["label"], n["changed"], n["dependents"]) for n in answer["neighborhoods"]] == [
        ("app", 1, 1)
    ]
    # Its one dependent is a guess: the test of that dependent's file does not count.
    assert (answer["risk"]["level"], answer["risk"]["untested"]) == (
        "medium",
        ["sym:app/models.py:Response.iter_content"],
    )
    assert answer["freshness"]["indexed_commit"] == "c1"


def test_files_and_symbols_and_the_bounds() -> None:
    http = client()
    files = http.post(
        "/repositories/app-1/impact", json={"files": ["app/models.py"], "depth": 1}
    ).json()
    assert [(d["id"], d["edge_kind"], d["confidence"]) for d in files["dependents"]] == [
        ("file:app/sessions.py", "IMPORTS", "import"),
        ("sym:app/sessions.py:Session.send", "CALLS", "import"),
        ("sym:app/sessions.py:Session.resolve_redirects", "CALLS", "name_match"),
    ]
    symbols = http.post(
        "/repositories/app-1/impact", json={"symbols": ["app/sessions.py:Session.send"]}
    ).json()
    assert [(t["path"], t["link"], t["hop"]) for t in symbols["tests"]] == [
        ("tests/test_sessions.py", "graph", 0)
    ]
    assert symbols["risk"]["level"] == "low"
    too_deep = http.post("/repositories/app-1/impact", json={"files": ["x"], "depth": 5})
    assert too_deep.status_code == 422
    unknown = http.post("/repositories/app-1/impact", json={"files": ["x"], "bogus": 1})
    assert unknown.status_code == 422


def test_refusals() -> None:
    http = client()
    cases = [
        ("nope", {"files": ["x.py"]}, 404, "unknown repository 'nope'; see /repositories"),
        ("app-1", {}, 422, "give exactly one of diff, files, symbols"),
        (
            "app-1",
            {"diff": "@@ -1 +1 @@\n"},
            400,
            "malformed diff: line 1: a hunk before any '--- a/… +++ b/…' header",
        ),
        (
            "app-1",
            {"files": ["app/nope.py"]},
            400,
            "files the index of 'app-1' does not hold: "
            "'app/nope.py' (see /repositories/app-1/files)",
        ),
        ("app-1", {"symbols": ["Nothing"]}, 404, "no symbol 'Nothing' in repository 'app-1'"),
    ]
    for repo, body, status, detail in cases:
        refused = http.post(f"/repositories/{repo}/impact", json=body)
        assert (refused.status_code, refused.json()) == (status, {"detail": detail}), body
