"""Search and context packs over HTTP, on a read model fed with real deltas."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.read_model import ReadModel
from query.search.ranking import OFF_PYTHON, RankWeights
from stores.projections.graph_state import FileGraphState
from stores.ranking import RankingProfile
from tests.factories import Stamp

FILES = {
    "app/sessions.py": (
        "from app.models import Response\n\n"
        "class Session:\n"
        "    def send(self, request):\n"
        '        """Send a request and follow its redirects."""\n'
        "        return self.resolve_redirects(Response())\n\n"
        "    def resolve_redirects(self, resp):\n"
        "        return resp.iter_content(1)\n"
    ),
    "app/models.py": (
        "class Response:\n"
        "    def iter_content(self, chunk_size):\n"
        '        """Iterate over the response body in chunks."""\n'
        "        return [chunk_size]\n"
    ),
    "tests/test_sessions.py": (
        "from app.sessions import Session\n\ndef test_send():\n    Session().send(None)\n"
    ),
}


@pytest.fixture
def model() -> ReadModel:
    return indexed_model()


def indexed_model() -> ReadModel:
    """``app-1`` (FILES) indexed and clustered."""
    model, index, stamp = ReadModel(clock=lambda: 1002.0), RepoIndex("app-1"), Stamp()
    events = [stamp.changed(p, t, origin="scan") for p, t in FILES.items()]
    for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        model.apply_delta(delta)
    model.apply_snapshot(
        recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=1001.0)
    )
    return model


@pytest.fixture
def client(model: ReadModel) -> TestClient:
    return TestClient(create_api(model, ready=lambda: True))


def test_search_ranks_files_with_what_to_read_and_how_they_stand(client: TestClient) -> None:
    page = client.get(
        "/repositories/app-1/search", params={"q": "resolve_redirects loops forever"}
    ).json()
    assert page["retrievers"] == ["bm25", "mentions"]
    top = page["items"][0]
    assert top["path"] == "app/sessions.py"
    assert top["signals"]["symbol"] == 1.0 and top["best_chunk"]["qualname"] in (
        "Session.resolve_redirects",
        "Session",
    )
    chunk = top["best_chunk"]
    assert top["read"] == f"L{chunk['line_start']}-{chunk['line_end']}"
    assert top["inbound_degree"] == 1 and top["neighborhood_label"] is not None
    assert page["freshness"]["indexed_commit"] == "c1"


def test_search_is_bounded_by_max_tokens_and_keeps_the_true_total(client: TestClient) -> None:
    full = client.get("/repositories/app-1/search", params={"q": "response session"}).json()
    small = client.get(
        "/repositories/app-1/search", params={"q": "response session", "max_tokens": 100}
    ).json()
    assert full["total"] == small["total"] >= 2
    assert len(small["items"]) == 1 and small["truncated"] is True
    assert client.get("/repositories/nope/search", params={"q": "x"}).status_code == 404
    assert client.get("/repositories/app-1/search").status_code == 422


def test_context_for_a_question_a_symbol_and_a_file_stays_within_budget(
    client: TestClient,
) -> None:
    by_question = client.get(
        "/repositories/app-1/context", params={"q": "iter_content of a response"}
    ).json()
    assert by_question["targets"][0].startswith("app/models.py#Response")
    assert "[TARGET]" in by_question["text"] and by_question["tokens"] <= 8000
    by_symbol = client.get(
        "/repositories/app-1/context", params={"symbol": "Session.send", "budget": 120}
    ).json()
    assert by_symbol["targets"] == ["app/sessions.py#Session.send"]
    assert by_symbol["tokens"] <= 120 and len(by_symbol["text"]) <= 120 * 4
    by_file = client.get("/repositories/app-1/context", params={"path": "app/models.py"}).json()
    assert by_file["read_first"][0].startswith("app/models.py:L")
    assert client.get("/repositories/app-1/context").status_code == 422
    missing = client.get("/repositories/app-1/context", params={"path": "nope.py"})
    assert missing.status_code == 404


def test_a_session_lifts_what_it_touched_and_starts_at_its_neighborhoods(
    client: TestClient,
) -> None:
    question = {"q": "response chunks", "limit": 3}
    plain = client.get("/repositories/app-1/search", params=question).json()
    assert all("session" not in hit["signals"] for hit in plain["items"])
    start = client.get(
        "/repositories/app-1/session-start", params={"q": "send a request", "session": "s1"}
    ).json()
    assert start["total"] == len(start["neighborhoods"]) >= 1
    first = start["neighborhoods"][0]
    assert first["size"] > 1 and first["entry_points"] and first["matched"]
    assert first["matched"][0]["neighborhood"] == first["id"]
    touched = first["matched"][0]["path"]
    later = client.get("/repositories/app-1/search", params={**question, "session": "s1"}).json()
    boosted = {hit["path"]: hit["signals"].get("session") for hit in later["items"]}
    assert boosted[touched] == 1.0  # the latest thing the session touched
    other = client.get("/repositories/app-1/search", params={**question, "session": "s2"})
    assert all("session" not in hit["signals"] for hit in other.json()["items"])


def test_stored_weights_rank_the_files_and_the_answer_says_which(
    model: ReadModel, client: TestClient
) -> None:
    question = {"q": "iter_content of the response in a session"}
    before = client.get("/repositories/app-1/search", params=question).json()
    assert before["ranking"] == {
        "scope": None,
        "source": "defaults",
        "weights": RankWeights().as_dict(),
        "weights_off_python": OFF_PYTHON.as_dict(),
        "set_at": None,
        "scores": {},
    }
    assert client.get("/repositories/app-1/ranking").json() == before["ranking"]
    assert client.get("/repositories/nope/ranking").status_code == 404
    order = [hit["path"] for hit in before["items"]]
    assert order[:2] == ["app/models.py", "app/sessions.py"]

    # Weights for every repository, then the repository's own: the latest of a scope wins.
    only_symbols = {"text": 0.0, "symbol": 1.0, "structural": 0.0, "source": 0.0}
    assert model.apply_ranking(profile("*", {"text": 2.0}, at=5.0))
    assert model.apply_ranking(profile("app-1", only_symbols, at=6.0))
    assert not model.apply_ranking(profile("app-1", {"text": 3.0}, at=4.0))  # older
    assert not model.apply_ranking(profile("app-1", {"bogus": 1.0}, at=7.0))  # unknown name
    after = client.get("/repositories/app-1/search", params=question).json()
    assert after["ranking"]["scope"] == "app-1" and after["ranking"]["set_at"] == 6.0
    assert after["ranking"]["weights"] == {**RankWeights().as_dict(), **only_symbols}
    # Only the symbol signal counts now (before, the text counted too).
    assert before["items"][0]["score"] != before["items"][0]["signals"].get("symbol", 0.0)
    assert all(
        hit["score"] == pytest.approx(hit["signals"].get("symbol", 0.0)) for hit in after["items"]
    )
    pack = client.get("/repositories/app-1/context", params=question).json()
    assert pack["targets"][0].startswith("app/models.py")


def profile(scope: str, weights: dict[str, float], at: float) -> RankingProfile:
    return RankingProfile(scope=scope, weights=weights, source="test", set_at=at)


def test_the_read_side_counts_references_without_keeping_them(
    model: ReadModel, client: TestClient
) -> None:
    index, stamp = RepoIndex("app-1"), Stamp()
    stamp.claimed(index)
    found = index.handle(stamp.changed("app/sessions.py", FILES["app/sessions.py"]), now=1.0)
    assert found is not None
    worker_saw = len(found.files_upserted[0].references)
    assert worker_saw >= 3  # Response(), self.resolve_redirects(...), resp.iter_content(...)
    detail = client.get("/repositories/app-1/files/app/sessions.py").json()
    assert detail["references"] == worker_saw
    assert all(not r.references for r in model.repos["app-1"].state.files.values())


def test_weights_on_the_graph_signals_make_the_service_read_the_graph(
    model: ReadModel, client: TestClient
) -> None:
    question = {"q": "resolve_redirects iterates the response"}
    plain = client.get("/repositories/app-1/search", params=question).json()["items"]
    assert plain[0]["path"] == "app/sessions.py" and plain[0]["signals"]["symbol"] == 1.0
    assert all("imports" not in hit["signals"] for hit in plain)  # weight 0: not computed
    assert model.apply_ranking(profile("app-1", {"imports": 0.5, "graph": 0.5}, at=6.0))
    near = client.get("/repositories/app-1/search", params=question).json()["items"]
    by_path = {hit["path"]: hit["signals"] for hit in near}
    # models.py is imported by the named sessions.py (which defines resolve_redirects)
    assert by_path["app/models.py"]["imports"] == pytest.approx(1 / 3)
    assert "imports" not in by_path["app/sessions.py"]
    pack = client.get("/repositories/app-1/context", params=question).json()
    assert pack["targets"][0].startswith("app/sessions.py")


def test_a_long_question_is_ranked_by_its_beginning_and_the_answer_says_so(
    client: TestClient,
) -> None:
    # 20,018 characters, then a name: the ranking reads the first 20,000, less the
    # word cut in half ("zz" of a "zzz"), so the name at the end counts for nothing.
    head = "resolve_redirects " + "zzz " * 4995
    long = head + "zzz " * 5 + "iter_content"
    page = client.get("/repositories/app-1/search", params={"q": long}).json()
    assert (page["question_chars"], page["question_truncated"]) == (len(long), True)
    assert page["query"] == head and len(head) == 19_998
    signals = {hit["path"]: hit["signals"] for hit in page["items"]}
    assert signals["app/sessions.py"]["symbol"] == 1.0
    assert "symbol" not in signals.get("app/models.py", {})  # iter_content was not read
    short = client.get("/repositories/app-1/search", params={"q": "iter_content"}).json()
    assert (short["query"], short["question_chars"], short["question_truncated"]) == (
        "iter_content",
        12,
        False,
    )
    assert short["items"][0]["path"] == "app/models.py"
    start = client.get("/repositories/app-1/session-start", params={"q": long}).json()
    assert (start["query"], start["question_truncated"]) == (head, True)
    pack = client.get("/repositories/app-1/context", params={"q": long}).json()
    assert pack["question_truncated"] is True
    assert pack["targets"][0].startswith("app/sessions.py")
    by_symbol = client.get("/repositories/app-1/context", params={"symbol": "Session.send"})
    assert by_symbol.json()["question_truncated"] is None


JS_FILES = {
    "web/session.js": (
        'import { Response } from "./models.js";\n\n'
        "export class Session {\n"
        "  resolveRedirects(resp) {\n"
        "    return new Response(resp).iterContent(1);\n"
        "  }\n"
        "}\n"
    ),
    "web/models.js": (
        "export class Response {\n  iterContent(size) {\n    return [size];\n  }\n}\n"
    ),
}


def test_by_default_a_repository_with_code_not_in_python_reads_the_graph() -> None:
    model, index, stamp = ReadModel(clock=lambda: 1002.0), RepoIndex("web-1"), Stamp()
    events = [stamp.changed(p, t, origin="scan") for p, t in JS_FILES.items()]
    for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        model.apply_delta(delta)
    client = TestClient(create_api(model, ready=lambda: True))
    found = client.get(
        "/repositories/web-1/search", params={"q": "resolveRedirects fails on a response"}
    )
    by_path = {hit["path"]: hit["signals"] for hit in found.json()["items"]}
    assert by_path["web/session.js"]["symbol"] == 1.0
    # OFF_PYTHON weighs imports: models.js, imported by the named session.js, is near it.
    assert by_path["web/models.js"]["imports"] == pytest.approx(1 / 3)
