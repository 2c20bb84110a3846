"""Org-wide context packs, session starts and graph searches (issue 18): the budget's
split pinned; through a router over two shards (one replica down) the answers of one
replica holding every repository, partial with a shard down; a graph search across
repositories the graph search of one repository holding all their files; an
unreadable repository neither drawn from nor counted."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi.testclient import TestClient
from mcp.types import TextContent

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.auth.principal import Principal
from query.materializer import partition_of
from query.mcp_operations import operations
from query.mcp_tools import readable
from query.org_context import MIN_SECTION, Section, Seed, heading_tokens, plan_sections, shares
from query.read_model import ReadModel
from query.search.graph_search import ChannelStats
from query.service import QueryService
from query.service.access import reading_as
from query.shard import spans
from stores.projections.graph_state import FileGraphState
from tests.factories import Stamp
from tests.unit.test_org_search import QUESTIONS, REPOS
from tests.unit.test_router import FIRST, PARTITIONS, REST, _Pair, model_of

CONTEXT_QUESTIONS = [*QUESTIONS, "rate limit request invoice"]
GRAPH_QUESTIONS = ["RateLimiter allow", "request", "limit", "**/errors.py", "total sum lines"]


def test_the_budget_is_shared_by_the_targets_scores_largest_remainders_first() -> None:
    assert shares(1000, [1.0, 0.5, 0.5]) == [500, 250, 250]
    assert shares(10, [1.0, 1.0, 1.0]) == [4, 3, 3]  # the earlier first among equals
    assert shares(7, [0.0, 0.0]) == [4, 3]  # no score: even
    assert shares(600, [3.0, 0.5]) == [514, 86]  # 514.29 and 85.71: the larger remainder
    assert shares(5, []) == []


def test_the_sections_are_planned_in_the_order_of_their_best_seed() -> None:
    seeds = [Seed("a", "n1", 2.0), Seed("b", "n2", 1.0), Seed("a", "n3", 1.0)]
    head = heading_tokens("a")
    assert head == 6  # '=== repository a ===' and two newlines: 22 characters
    assert plan_sections(seeds, 3000) == [
        Section("a", (("n1", 1.0), ("n3", 0.5)), 2250, 2250 - head),
        Section("b", (("n2", 0.5),), 750, 750 - head),
    ]
    # b's share would be 86 tokens, under MIN_SECTION: a has the whole budget.
    assert 600 * 0.5 / 3.5 < MIN_SECTION
    few = [Seed("a", "n1", 3.0), Seed("b", "n2", 0.5)]
    assert plan_sections(few, 600) == [Section("a", (("n1", 1.0),), 600, 600 - head)]
    assert plan_sections([], 600) == []


@pytest.mark.parametrize("question", CONTEXT_QUESTIONS)
@pytest.mark.parametrize("budget", [300, 1000, 3000])
async def test_the_org_pack_through_the_router_is_one_replicas_within_the_budget(
    question: str, budget: int
) -> None:
    params = {"q": question, "budget": budget, "seeds": 6}
    async with _Pair() as (routed, whole):
        through = (await routed.get("/context", params=params)).json()
        alone = (await whole.get("/context", params=params)).json()
    assert through["sections"], "no section: the comparison would prove nothing"
    shards = {k: through.pop(k) for k in ("shards", "missing", "partial")}
    assert shards == {"shards": [str(FIRST), spans(REST)], "missing": [], "partial": False}
    assert (alone.pop("partitions"), alone.pop("partial")) == ("all", False)
    assert through == alone
    assert through["tokens"] <= budget
    assert sum(s["budget"] + heading_tokens(s["repo"]) for s in through["sections"]) <= budget
    assert all(s["tokens"] <= s["budget"] for s in through["sections"])
    repos = [s["repo"] for s in through["sections"]]
    assert len(repos) == len(set(repos))
    assert [t["repo"] for t in through["targets"]] == [
        s["repo"] for s in through["sections"] for _ in s["targets"]
    ]
    assert all(s["freshness"]["indexed_commit"] == "c1" for s in through["sections"])
    assert through["text"].startswith(f"=== repository {repos[0]} ===\n")


async def test_a_wide_budget_draws_from_every_repository_the_question_reaches() -> None:
    params = {"q": "rate limit request invoice", "budget": 3000, "seeds": 6}
    async with _Pair() as (routed, _):
        page = (await routed.get("/context", params=params)).json()
    assert [(s["repo"], s["budget"]) for s in page["sections"]] == [
        ("gateway", 1484),
        ("billing", 1056),
        ("docs", 439),
    ]


def test_a_pack_of_one_repository_is_its_own_context_pack() -> None:
    # Within a budget that does not bind, the org pack's one section is the pack of the
    # repository's own /context: the same seeds, scored the same.
    client = TestClient(create_api(model_of(list(REPOS)), ready=lambda: True))
    for question in QUESTIONS:
        params = {"q": question, "budget": 8000, "seeds": 3}
        org = client.get("/context", params={**params, "repos": "gateway"}).json()
        own = client.get("/repositories/gateway/context", params=params).json()
        if not own["targets"]:  # the question reaches nothing of gateway
            assert org["sections"] == [] and question == "sum of invoice lines"
            continue
        assert [s["repo"] for s in org["sections"]] == ["gateway"]
        assert org["text"] == f"=== repository gateway ===\n{own['text']}"
        assert org["sections"][0]["tokens"] == own["tokens"]
        assert org["sections"][0]["targets"] == own["targets"]


def test_a_session_start_of_one_repository_is_its_own_session_start() -> None:
    model = model_of(list(REPOS))
    _recluster(model)
    client = TestClient(create_api(model, ready=lambda: True))
    compared = 0
    for question in [*QUESTIONS, "rate limit request"]:
        org = client.get("/session-start", params={"q": question, "repos": "gateway"}).json()
        own = client.get("/repositories/gateway/session-start", params={"q": question}).json()
        keys = ("id", "label", "size", "cohesion", "entry_points", "score")
        assert [
            ({k: n[k] for k in keys}, [(m["path"], m["score"]) for m in n["matched"]])
            for n in org["neighborhoods"]
        ] == [
            ({k: n[k] for k in keys}, [(m["path"], m["score"]) for m in n["matched"]])
            for n in own["neighborhoods"]
        ]
        assert org["total"] == own["total"]
        compared += len(own["neighborhoods"])
    assert compared, "no neighborhood: the comparison would prove nothing"


def test_channel_figures_sum_term_by_term() -> None:
    parts = [ChannelStats(3, {"limit": 1, "rate": 2}), ChannelStats(2, {"limit": 2})]
    assert ChannelStats.merged(parts) == ChannelStats(5, {"limit": 3, "rate": 2})
    assert ChannelStats.merged([]) == ChannelStats(0, {})


def test_a_graph_search_across_repositories_is_one_repositorys_holding_all_files() -> None:
    apart = QueryService(model_of(list(REPOS)), ready=lambda: True)
    together = ReadModel(clock=lambda: 1002.0)
    index, stamp = RepoIndex("all"), Stamp(repo="all")
    files = [stamp.changed(p, t, origin="scan") for fs in REPOS.values() for p, t in fs.items()]
    for event in [stamp.claim(), *files, stamp.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        together.apply_delta(delta)
    one = QueryService(together, ready=lambda: True)
    owner = {p: repo for repo, fs in REPOS.items() for p in fs}
    found = 0
    for q in GRAPH_QUESTIONS:
        for offset, limit in [(0, 10), (1, 2)]:
            org = apart.graph_search_all(q, offset=offset, limit=limit)
            single = one.graph_search("all", q, offset=offset, limit=limit)
            assert org.repositories == 3
            for merged, alone in zip(org.channels, single.channels, strict=True):
                assert (merged.channel, merged.total) == (alone.channel, alone.total)
                assert [h.model_dump(exclude={"repo"}) for h in merged.items] == [
                    h.model_dump() for h in alone.items
                ]
                assert all(owner[h.path] == h.repo for h in merged.items)
                found += len(merged.items)
            shown = {h.repo for c in org.channels for h in c.items}
            assert set(org.freshness) == shown
    assert found > 20, "the questions match little: the test would prove little"


@pytest.mark.parametrize("path", ["/graph-search", "/session-start"])
@pytest.mark.parametrize("question", ["RateLimiter allow", "request", "rate limit", "total"])
async def test_graph_search_and_session_start_through_the_router_are_one_replicas(
    path: str, question: str
) -> None:
    pair = _Pair()
    async with pair as (routed, whole):
        for model in _models(pair):
            _recluster(model)
        params = {"q": question, "limit": 3} if path == "/graph-search" else {}
        through = (await routed.get(path, params={"q": question, **params})).json()
        alone = (await whole.get(path, params={"q": question, **params})).json()
    assert (through.pop("partial"), through.pop("missing")) == (False, [])
    assert through.pop("shards") == [str(FIRST), spans(REST)]
    assert alone.pop("partitions") == "all" and alone.pop("partial") is False
    assert through == alone
    if path == "/session-start":
        assert through["neighborhoods"], "no neighborhood: the comparison would prove nothing"
        for n in through["neighborhoods"]:
            assert n["freshness"]["indexed_commit"] == "c1"
            assert all(m["repo"] == n["repo"] for m in n["matched"])
            assert n["size"] > 1
    else:
        assert any(c["items"] for c in through["channels"])


async def test_with_a_shard_down_the_org_answers_are_partial_and_say_which() -> None:
    async with await _Pair_b_down() as (routed, _):
        for path in ("/context", "/graph-search", "/session-start"):
            page = (await routed.get(path, params={"q": "rate limit request"})).json()
            assert (page["partial"], page["missing"], page["shards"]) == (
                True,
                [spans(REST)],
                [str(FIRST)],
            ), path
            repos = [s["repo"] for s in page.get("sections", [])]
            repos += [h["repo"] for c in page.get("channels", []) for h in c["items"]]
            repos += [n["repo"] for n in page.get("neighborhoods", [])]
            assert all(partition_of(r, PARTITIONS) == FIRST for r in repos), path
            assert page["repositories"] == 1  # billing's shard only
        context = (await routed.get("/context", params={"q": "rate limit request"})).json()
        assert [s["repo"] for s in context["sections"]] == ["billing"]


class DownForPacking(httpx.AsyncBaseTransport):
    """A replica that answers the search passes and fails to pack its sections."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/shard/context":
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)


async def test_a_shard_failing_to_pack_leaves_its_sections_out_and_says_so() -> None:
    pair = _Pair()
    mounts = pair.backend._mounts
    for pattern in list(mounts):
        if "b1" in str(pattern.pattern):
            mounts[pattern] = DownForPacking(mounts[pattern])  # type: ignore[arg-type]
    params = {"q": "rate limit request invoice", "budget": 3000, "seeds": 6}
    async with pair as (routed, whole):
        page = (await routed.get("/context", params=params)).json()
        alone = (await whole.get("/context", params=params)).json()
    assert (page["partial"], page["missing"], page["shards"]) == (True, [spans(REST)], [str(FIRST)])
    on_a = [s for s in alone["sections"] if partition_of(s["repo"], PARTITIONS) == FIRST]
    assert on_a and len(on_a) < len(alone["sections"])
    assert page["sections"] == on_a  # its sections as planned with every shard's seeds
    assert page["repositories"] == 3  # every shard was searched


def test_an_org_answer_draws_from_and_counts_only_the_repositories_the_token_reads() -> None:
    model = model_of(list(REPOS))
    _recluster(model)
    service = QueryService(model, ready=lambda: True)
    with reading_as(Principal("t", frozenset({"read"}), ("billing", "docs"))):
        context = service.context_all("rate limit request invoice", budget=3000, seeds=6)
        graph = service.graph_search_all("request limit")
        start = service.session_start_all("rate limit request")
    assert context.repositories == graph.repositories == start.repositories == 2
    assert {s.repo for s in context.sections} == {"billing", "docs"}
    assert {h.repo for c in graph.channels for h in c.items} <= {"billing", "docs"}
    assert {n.repo for n in start.neighborhoods} <= {"billing", "docs"}
    everyone = service.context_all("rate limit request invoice", budget=3000, seeds=6)
    assert "gateway" in {s.repo for s in everyone.sections}


def test_the_org_routes_refuse_what_they_cannot_answer() -> None:
    client = TestClient(create_api(model_of(list(REPOS)), ready=lambda: True))
    assert client.get("/context", params={"q": ""}).status_code == 422
    assert client.get("/context", params={"q": "x", "budget": 10}).status_code == 422
    assert client.get("/graph-search", params={"q": "x", "offset": 5000}).status_code == 422
    bad = client.get("/graph-search", params={"q": "x", "channels": "nope"})
    assert bad.status_code == 422 and "unknown channels" in bad.text
    none = client.get("/context", params={"q": "rate limit", "repos": "nothing-*"}).json()
    assert (none["repositories"], none["sections"], none["tokens"]) == (0, [], 0)


async def _Pair_b_down() -> _Pair:
    return _Pair(b_down=True)


def _models(pair: _Pair) -> list[ReadModel]:
    """The read models behind the pair's shard replicas and its whole replica."""
    apps = [t.app for t in pair.backend._mounts.values() if isinstance(t, httpx.ASGITransport)]
    whole = pair.whole._transport
    assert isinstance(whole, httpx.ASGITransport)
    return [app.state.service.model for app in [*apps, whole.app]]


def _recluster(model: ReadModel) -> None:
    for repo, view in model.repos.items():
        del repo
        model.apply_snapshot(
            recluster(FileGraphState.of(view.state), None, ReclusterSettings(), now=1001.0)
        )


def test_the_context_all_tool_gives_the_pack_s_text_first_as_context_does() -> None:
    api = create_api(model_of(list(REPOS)), ready=lambda: True)
    op = next(o for o in operations(api.openapi()) if o.tool == "context_all")
    answer = TestClient(api).get("/context", params={"q": "rate limit request"}).json()
    first, rest = readable(op, answer)
    assert isinstance(first, TextContent) and isinstance(rest, TextContent)
    assert first.text == answer["text"] and first.text.startswith("=== repository ")
    assert json.loads(rest.text) == {k: v for k, v in answer.items() if k != "text"}
    assert all("text" not in s for s in answer["sections"])  # the text once, not twice
