"""The HTTP service over a read model fed with real deltas and statuses."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from processors.indexer import RepoIndex
from producers.events import SourceStatus
from query.api import create_api
from query.read_model import ReadModel
from tests.factories import Stamp, source_status, tiny_parse


def status(last_seq: int, **kw: object) -> SourceStatus:
    return source_status(last_seq, **kw)


@pytest.fixture
def model() -> ReadModel:
    model = ReadModel(clock=lambda: 1002.0)
    index, s = RepoIndex("app-1", parse=tiny_parse), Stamp()
    for event in [
        s.claim(),
        s.changed("src/a.py", "import b\ndef run\ndef stop"),
        s.changed("b.py", "def g"),
        s.skipped("logo.png", "binary", 4096),
        s.changed("src/c.py", "import os"),
        s.scan_completed("c1"),
    ]:
        delta = index.handle(event, now=1000.5)
        assert delta is not None
        model.apply_delta(delta)
    model.apply_status(status(5))
    return model


def test_health_and_repositories(model: ReadModel) -> None:
    client = TestClient(create_api(model, ready=lambda: True))
    assert client.get("/health").json() == {
        "status": "ok",
        "ready": True,
        "repositories": 1,
        "deltas_applied": 6,
        "dead_letters": 0,
        "partitions": "all",
    }
    repos = client.get("/repositories").json()
    assert (repos["total"], repos["offset"], repos["limit"]) == (1, 0, 100)
    repo = repos["items"][0]
    assert (repo["repo"], repo["name"], repo["branch"], repo["files"]) == (
        "app-1",
        "app",
        "main",
        4,
    )
    assert repo["freshness"]["status"] == "fresh"
    assert repo["freshness"]["indexed_commit"] == "c1"
    # The root's path on the producer's machine is served nowhere.
    for answer in (client.get("/repositories"), client.get("/repositories/app-1")):
        assert "/src/app" not in answer.text and "root" not in answer.json()


def add_repository(model: ReadModel, repo: str, root: str, sent_at: float) -> None:
    index, s = RepoIndex(repo, parse=tiny_parse), Stamp(repo)
    for event in [s.claim(), s.changed("a.py", "def f"), s.scan_completed("c1")]:
        delta = index.handle(event, now=1000.5)
        assert delta is not None
        model.apply_delta(delta)
    model.apply_status(status(3, repo=repo, root=root, sent_at=sent_at))


def test_repositories_are_paged_filtered_and_sorted_with_the_true_total(
    model: ReadModel,
) -> None:
    add_repository(model, "web-3", "/home/u/code/billing-web", sent_at=1001.0)
    add_repository(model, "api-2", "C:\\code\\billing-api", sent_at=900.0)  # silent: stale
    client = TestClient(create_api(model, ready=lambda: True))

    def listed(**params: object) -> tuple[int, list[tuple[str, str]]]:
        page = client.get("/repositories", params=params).json()
        return page["total"], [(r["repo"], r["name"]) for r in page["items"]]

    everything = [("api-2", "billing-api"), ("app-1", "app"), ("web-3", "billing-web")]
    assert listed() == (3, everything)
    assert listed(offset=1, limit=1) == (3, [everything[1]])
    assert listed(offset=5) == (3, [])
    assert listed(name="billing") == (2, [everything[0], everything[2]])  # a substring
    assert listed(name="BILLING-w*") == (1, [everything[2]])  # a glob, any case
    assert listed(name="app-?") == (1, [everything[1]])  # the id matches too
    assert listed(status="stale") == (1, [everything[0]])
    assert listed(status="fresh", name="billing") == (1, [everything[2]])
    for wrong in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"status": "old"}):
        assert client.get("/repositories", params=wrong).status_code == 422


def test_freshness_follows_the_producer(model: ReadModel) -> None:
    client = TestClient(create_api(model, ready=lambda: True))
    model.apply_status(status(9, batch_first_seq=7, batch_started_at=1001.5, head_commit="c2"))
    body = client.get("/repositories/app-1/freshness").json()
    assert body["status"] == "updating"
    assert body["pending_events"] == 3
    assert body["lag_ms"] == 500.0
    assert body["head_commit"] == "c2" and body["indexed_commit"] == "c1"


def test_files_filters_and_pagination(model: ReadModel) -> None:
    client = TestClient(create_api(model, ready=lambda: True))
    page = client.get("/repositories/app-1/files", params={"limit": 2}).json()
    assert page["total"] == 4 and [f["path"] for f in page["items"]] == ["b.py", "logo.png"]
    page = client.get("/repositories/app-1/files", params={"offset": 2, "limit": 2}).json()
    assert [f["path"] for f in page["items"]] == ["src/a.py", "src/c.py"]
    by_prefix = client.get("/repositories/app-1/files", params={"prefix": "src/"}).json()
    assert by_prefix["total"] == 2
    by_glob = client.get("/repositories/app-1/files", params={"glob": "*.png"}).json()
    assert [f["skipped"] for f in by_glob["items"]] == ["binary"]
    skipped = client.get("/repositories/app-1/files", params={"skipped": "false"}).json()
    assert skipped["total"] == 3
    assert client.get("/repositories/app-1/files", params={"limit": 5000}).status_code == 422


def test_file_details_and_symbols(model: ReadModel) -> None:
    client = TestClient(create_api(model, ready=lambda: True))
    detail = client.get("/repositories/app-1/files/src/a.py").json()
    assert detail["language"] == "python" and detail["lines"] == 3
    assert [(s["name"], s["line_start"], s["line_end"]) for s in detail["symbols"]] == [
        ("run", 2, 2),
        ("stop", 3, 3),
    ]
    assert detail["imports"] == [{"module": "b", "names": [], "level": 0, "line": 1}]
    assert detail["depends_on"] == ["b.py"]
    assert client.get("/repositories/app-1/files/b.py").json()["imported_by"] == ["src/a.py"]
    assert detail["freshness"]["status"] == "fresh"
    assert (detail["symbols_total"], detail["imports_total"]) == (2, 1)
    assert (detail["depends_on_total"], detail["imported_by_total"]) == (1, 0)
    symbols = client.get("/repositories/app-1/symbols", params={"path": "src/a.py"}).json()
    assert symbols["total"] == 2 and symbols["items"][1]["qualname"] == "stop"
    assert (symbols["offset"], symbols["limit"]) == (0, 200)


def test_the_lists_of_a_file_are_bounded_beside_their_totals(model: ReadModel) -> None:
    client = TestClient(create_api(model, ready=lambda: True))
    one = {"limit": 1}
    detail = client.get("/repositories/app-1/files/src/a.py", params=one).json()
    assert [s["name"] for s in detail["symbols"]] == ["run"] and detail["symbols_total"] == 2
    page = client.get(
        "/repositories/app-1/symbols", params={"path": "src/a.py", "offset": 1, "limit": 1}
    ).json()
    assert (page["total"], [s["name"] for s in page["items"]]) == (2, ["stop"])
    too_many = {"path": "src/a.py", "limit": 1001}
    assert client.get("/repositories/app-1/symbols", params=too_many).status_code == 422
    assert client.get("/repositories/app-1/files/b.py", params={"limit": 0}).status_code == 422


def test_unknown_repository_and_file_are_clear_404s(model: ReadModel) -> None:
    client = TestClient(create_api(model, ready=lambda: True))
    missing = client.get("/repositories/nope/files")
    assert missing.status_code == 404 and "unknown repository" in missing.json()["detail"]
    assert client.get("/repositories/app-1/files/nope.py").status_code == 404
    assert client.get("/openapi.json").json()["info"]["title"] == "Gazetteer"


def test_read_model_ignores_replayed_deltas_and_refuses_gaps(model: ReadModel) -> None:
    index, s = RepoIndex("app-1", parse=tiny_parse), Stamp()
    first = index.handle(s.claim(), now=1.0)
    assert first is not None
    assert model.apply_delta(first) is False  # seq 1 again: already applied
    gap = first.model_copy(update={"seq": 9})
    assert model.apply_delta(gap) is False
    assert model.repos["app-1"].state.seq == 6


def test_a_repository_names_its_owner_and_the_producers_it_fenced() -> None:
    model = ReadModel(clock=lambda: 1002.0)
    index = RepoIndex("app-1", parse=tiny_parse)
    first, second = Stamp(producer="p1"), Stamp(producer="p2", epoch=2)
    for event in [first.claim(), first.changed("a.py", "def f"), second.claim()]:
        delta = index.handle(event, now=1000.5)
        assert delta is not None
        model.apply_delta(delta)
    model.apply_status(status(2, producer="p1"))
    model.apply_status(status(1, producer="p2", epoch=2))
    repo = TestClient(create_api(model, ready=lambda: True)).get("/repositories/app-1").json()
    assert repo["owner"] == {"producer": "p2", "epoch": 2, "host": "test-host"}
    assert repo["fenced"] == [{"producer": "p1", "epoch": 1, "host": None}]
    # The fenced producer's status is shown nowhere as progress: the owner's counts.
    assert repo["freshness"]["pending_events"] == 0
