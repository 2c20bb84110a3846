"""The seven-channel search, on states indexed from real files, and over HTTP."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from processors.indexer import RepoIndex
from query.api import create_api
from query.read_model import ReadModel
from query.search.graph_search import (
    TEXT_CAP,
    Channel,
    ChannelPage,
    glob_matches,
    graph_search,
    search_channel,
)
from stores.records import FileRecord
from tests.factories import Stamp

FILES = {
    "app/models.py": (
        '"""Data models for users and orders."""\n'
        "from django.db import models\n\n"
        "class User(models.Model):\n"
        "    def save(self):\n"
        "        pass\n\n"
        "class UserProfile(models.Model):\n"
        "    pass\n\n"
        "def user_count():\n"
        "    return 1\n"
    ),
    "app/views/user_views.py": (
        '"""Views rendering user pages."""\n'
        "from app.models import User\n\n"
        "class UserView:\n"
        "    pass\n\n"
        "def render_users():\n"
        "    return User()\n"
    ),
    "app/views/admin.py": (
        '"""Admin pages for the user."""\n'
        "import os.path\n\n"
        "class SuperUser:\n"
        "    pass\n\n"
        "def superuser_check():\n"
        "    return True\n"
    ),
    "lib/util_models.py": ('"""Helpers for orders."""\n\ndef parse():\n    return 0\n'),
}


def indexed(files: dict[str, str], repo: str = "app-1") -> tuple[RepoIndex, list[object]]:
    index, stamp = RepoIndex(repo), Stamp(repo)
    events = [stamp.changed(p, t, origin="scan") for p, t in files.items()]
    deltas = [
        index.handle(e, now=1000.0) for e in [stamp.claim(), *events, stamp.scan_completed("c1")]
    ]
    return index, [d for d in deltas if d is not None]


@pytest.fixture(scope="module")
def records() -> list[FileRecord]:
    index, _ = indexed(FILES)
    return list(index.state.files.values())


def channel(records: list[FileRecord], name: Channel, q: str, **kwargs: object) -> ChannelPage:
    kwargs.setdefault("importance", {})
    return search_channel(records, name, q, **kwargs)  # type: ignore[arg-type]


def texts(page: ChannelPage) -> list[tuple[str, str]]:
    return [(h.text, h.match) for h in page.hits]


def test_exact_before_prefix_before_substring(records: list[FileRecord]) -> None:
    page = channel(records, "classes", "user")
    assert texts(page) == [
        ("User", "exact"),
        ("UserProfile", "prefix"),
        ("UserView", "prefix"),
        ("SuperUser", "substring"),
    ]
    assert page.hits[0].line_start == 4 and page.hits[0].line_end == 6
    scores = [h.score for h in page.hits]
    assert scores[0] > scores[1] == scores[2] > scores[3] > 0


def test_importance_breaks_ties_before_the_path(records: list[FileRecord]) -> None:
    page = channel(records, "classes", "user", importance={"app/views/user_views.py": 0.9})
    assert [h.text for h in page.hits[1:3]] == ["UserView", "UserProfile"]
    assert page.hits[1].importance == 0.9 and page.hits[2].importance == 0.0


def test_rare_terms_count_more(records: list[FileRecord]) -> None:
    # 'user' is in three purposes, 'orders' in two: an 'orders' match outweighs a 'user' one
    page = channel(records, "purpose", "user orders")
    assert [h.path for h in page.hits] == [
        "app/models.py",  # both terms
        "lib/util_models.py",  # orders, exact
        "app/views/admin.py",  # user, exact
        "app/views/user_views.py",
    ]
    assert page.hits[0].text == "Data models for users and orders."
    assert page.hits[1].score > page.hits[2].score == page.hits[3].score


def test_each_channel_finds_its_facts(records: list[FileRecord]) -> None:
    functions = channel(records, "functions", "user")
    assert ("user_count", "prefix") in texts(functions)
    assert ("superuser_check", "substring") in texts(functions)
    assert all(h.text != "User.save" for h in functions.hits)
    assert texts(channel(records, "functions", "save")) == [("User.save", "exact")]

    imports = channel(records, "imports", "django")
    assert [(h.path, h.text, h.match) for h in imports.hits] == [
        ("app/models.py", "django.db: models", "exact")
    ]
    assert {h.path for h in channel(records, "imports", "models").hits} == {
        "app/models.py",
        "app/views/user_views.py",
    }

    keywords = channel(records, "keywords", "user")
    assert keywords.hits and keywords.hits[0].match == "exact"
    assert keywords.hits[0].text == "user"

    paths = channel(records, "paths", "models")
    assert texts(paths) == [("app/models.py", "exact"), ("lib/util_models.py", "substring")]

    glob = channel(records, "glob", "*/views/*.py")
    assert [h.path for h in glob.hits] == ["app/views/admin.py", "app/views/user_views.py"]
    assert channel(records, "glob", "**/models.py").total == 1


def test_globs_match_at_the_root_too() -> None:
    assert glob_matches("models.py", "**/models.py")
    assert glob_matches("a/b/models.py", "**/models.py")
    assert not glob_matches("a/util_models.py", "**/models.py")
    assert not glob_matches("A/models.py", "a/*.py")


def test_each_channel_is_paged_with_its_true_total(records: list[FileRecord]) -> None:
    pages = graph_search(records, "user", ("classes", "paths"), importance={}, offset=1, limit=2)
    classes, paths = pages
    assert (classes.channel, classes.total, classes.offset, classes.limit) == ("classes", 4, 1, 2)
    assert [h.text for h in classes.hits] == ["UserProfile", "UserView"]
    assert (paths.total, [h.path for h in paths.hits]) == (1, [])
    assert channel(records, "classes", "user", offset=10).hits == ()


def test_prefix_and_glob_filter_every_channel(records: list[FileRecord]) -> None:
    under = channel(records, "classes", "user", prefix="app/views/")
    assert texts(under) == [("UserView", "prefix"), ("SuperUser", "substring")]
    globbed = channel(records, "classes", "user", glob="**/models.py")
    assert [h.text for h in globbed.hits] == ["User", "UserProfile"]
    # filters do not move scores: IDF counts the whole repository
    assert globbed.hits[0].score == channel(records, "classes", "user").hits[0].score


def test_long_purpose_lines_are_capped() -> None:
    index, _ = indexed({"a.py": '"""' + "word " * 100 + '"""\n'})
    (hit,) = channel(list(index.state.files.values()), "purpose", "word").hits
    assert len(hit.text) == TEXT_CAP


@pytest.fixture
def client() -> TestClient:
    model = ReadModel(clock=lambda: 1002.0)
    _, deltas = indexed(FILES)
    for delta in deltas:
        model.apply_delta(delta)  # type: ignore[arg-type]
    return TestClient(create_api(model, ready=lambda: True))


def test_the_endpoint_answers_each_channel_with_freshness(client: TestClient) -> None:
    page = client.get(
        "/repositories/app-1/graph-search",
        params={"q": "user", "channels": "classes,paths", "limit": 2},
    ).json()
    assert page["query"] == "user" and page["freshness"]["indexed_commit"] == "c1"
    classes, paths = page["channels"]
    assert (classes["channel"], classes["total"], classes["limit"]) == ("classes", 4, 2)
    assert classes["items"][0] == {
        "path": "app/models.py",
        "text": "User",
        "match": "exact",
        "score": classes["items"][0]["score"],
        "importance": 0.0,
        "line_start": 4,
        "line_end": 6,
    }
    assert paths["channel"] == "paths" and paths["items"][0]["path"] == "app/views/user_views.py"

    everything = client.get(
        "/repositories/app-1/graph-search", params={"q": "models", "prefix": "/lib"}
    ).json()
    assert [c["channel"] for c in everything["channels"]] == [
        "purpose",
        "classes",
        "functions",
        "imports",
        "keywords",
        "paths",
        "glob",
    ]
    by_name = {c["channel"]: c for c in everything["channels"]}
    assert [i["path"] for i in by_name["paths"]["items"]] == ["lib/util_models.py"]


def test_the_endpoint_refuses_what_it_cannot_answer(client: TestClient) -> None:
    url = "/repositories/app-1/graph-search"
    assert client.get("/repositories/nope/graph-search", params={"q": "x"}).status_code == 404
    assert client.get(url).status_code == 422
    assert client.get(url, params={"q": "x", "limit": 101}).status_code == 422
    refused = client.get(url, params={"q": "x", "channels": "classes,bogus"})
    assert refused.status_code == 422 and "bogus" in refused.json()["detail"]
