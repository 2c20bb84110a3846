"""The router in front of two shards (one with a replica down), against one replica that
holds every repository: the same answers, a replica down retried, a shard down said."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from processors.indexer import RepoIndex
from query.api import create_api
from query.materializer import partition_of
from query.read_model import ReadModel
from query.router import Router, ShardReplicas, check_cover, create_router_app, parse_shard_spec
from query.shard import Shard, spans
from tests.factories import Stamp
from tests.unit.test_org_search import QUESTIONS, REPOS

PARTITIONS = 4
FIRST = partition_of("billing", PARTITIONS)
REST = frozenset(set(range(PARTITIONS)) - {FIRST})


class Down(httpx.AsyncBaseTransport):
    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)


def model_of(repos: list[str]) -> ReadModel:
    model = ReadModel(clock=lambda: 1002.0)
    for repo in repos:
        index, stamp = RepoIndex(repo), Stamp(repo=repo)
        events = [stamp.changed(p, t, origin="scan") for p, t in REPOS[repo].items()]
        for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
            delta = index.handle(event, now=1000.0)
            assert delta is not None
            model.apply_delta(delta)
    return model


def shard_apps(*, b_down: bool = False) -> dict[str, httpx.AsyncBaseTransport]:
    a = [r for r in REPOS if partition_of(r, PARTITIONS) == FIRST]
    b = [r for r in REPOS if r not in a]
    a_model, b_model = model_of(a), model_of(b)
    a_model.serves, b_model.serves = str(FIRST), "rest"
    return {
        "http://a1": Down(),  # shard a's first replica is down: its requests go to a2
        "http://a2": httpx.ASGITransport(app=create_api(a_model, ready=lambda: True)),
        "http://b1": Down()
        if b_down
        else httpx.ASGITransport(app=create_api(b_model, ready=lambda: True)),
    }


@pytest.fixture
async def clients() -> AsyncIterator[tuple[httpx.AsyncClient, httpx.AsyncClient]]:
    async with await _clients() as pair:
        yield pair


class _Pair:
    def __init__(self, b_down: bool = False) -> None:
        shards = [
            ShardReplicas(Shard(partitions=frozenset({FIRST})), ["http://a1", "http://a2"]),
            ShardReplicas(
                Shard(partitions=frozenset(set(range(PARTITIONS)) - {FIRST})), ["http://b1"]
            ),
        ]
        self.backend = httpx.AsyncClient(mounts=shard_apps(b_down=b_down))
        app = create_router_app(Router(shards, PARTITIONS, self.backend))
        self.routed = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://router"
        )
        whole = create_api(model_of(list(REPOS)), ready=lambda: True)
        self.whole = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=whole), base_url="http://whole"
        )

    async def __aenter__(self) -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
        return self.routed, self.whole

    async def __aexit__(self, *exc: object) -> None:
        for client in (self.routed, self.whole, self.backend):
            await client.aclose()


async def _clients(b_down: bool = False) -> _Pair:
    return _Pair(b_down)


def without(page: dict, *keys: str) -> dict:
    return {k: v for k, v in page.items() if k not in keys}


@pytest.mark.parametrize("question", QUESTIONS)
async def test_search_through_the_router_is_the_search_of_one_replica_holding_all(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient], question: str
) -> None:
    routed, whole = clients
    params = {"q": question, "limit": 10}
    through = (await routed.get("/search", params=params)).json()
    alone = (await whole.get("/search", params=params)).json()
    assert through["items"], "no hit: the comparison would prove nothing"
    assert through["items"] == alone["items"]
    assert (through["partial"], through["missing"], through["repositories"]) == (False, [], 3)


async def test_a_repositorys_requests_go_to_its_shard_and_past_a_replica_down(
    clients: tuple[httpx.AsyncClient, httpx.AsyncClient],
) -> None:
    routed, whole = clients
    for repo in REPOS:
        for path in (f"/repositories/{repo}", f"/repositories/{repo}/files?limit=5"):
            answer, expected = await routed.get(path), await whole.get(path)
            assert answer.status_code == 200, (path, answer.text)
            on_a = partition_of(repo, PARTITIONS) == FIRST
            assert answer.headers["gazetteer-shard"] == (str(FIRST) if on_a else spans(REST))
            assert answer.headers["gazetteer-replica"] == ("http://a2" if on_a else "http://b1")
            assert without(answer.json(), "freshness") == without(expected.json(), "freshness")
    search = "/repositories/gateway/search?q=TooManyRequests"
    assert (await routed.get(search)).json()["items"] == (await whole.get(search)).json()["items"]
    impact = await routed.post(
        "/repositories/billing/impact", json={"files": ["billing/limits.py"]}
    )
    assert impact.status_code == 200 and impact.json()["repo"] == "billing"
    missing = await routed.get("/repositories/nope/files")
    assert missing.status_code == 404 and "unknown repository" in missing.json()["detail"]


async def test_the_merged_list_and_health_name_the_shards() -> None:
    async with await _clients() as (routed, whole):
        page = (await routed.get("/repositories", params={"limit": 2, "offset": 1})).json()
        alone = (await whole.get("/repositories", params={"limit": 2, "offset": 1})).json()
        assert [i["repo"] for i in page["items"]] == [i["repo"] for i in alone["items"]]
        assert (page["total"], page["partial"]) == (3, False)
        health = (await routed.get("/health")).json()
        assert health["ready"] is True
        assert [[r["ready"] for r in s["replicas"]] for s in health["shards"]] == [
            [False, True],
            [True],
        ]
    async with await _clients(b_down=True) as (routed, _):
        page = (await routed.get("/repositories")).json()
        rest = frozenset(set(range(PARTITIONS)) - {FIRST})
        assert page["partial"] is True and page["missing"] == [spans(rest)]
        assert {i["repo"] for i in page["items"]} == {
            r for r in REPOS if partition_of(r, PARTITIONS) == FIRST
        }
        found = (await routed.get("/search", params={"q": "rate limit"})).json()
        assert found["partial"] is True
        assert all(partition_of(h["repo"], PARTITIONS) == FIRST for h in found["items"])
        down = [r for r in REPOS if partition_of(r, PARTITIONS) != FIRST]
        if down:
            answer = await routed.get(f"/repositories/{down[0]}/files")
            assert answer.status_code == 503 and "no replica of shard" in answer.json()["detail"]
        assert (await routed.get("/health")).json()["ready"] is False


def test_shard_specs_and_the_partitions_they_cover() -> None:
    spec = parse_shard_spec("0-1=http://a:1/,http://b:2")
    assert (spec.shard, spec.replicas) == (
        Shard(partitions=frozenset({0, 1})),
        ["http://a:1", "http://b:2"],
    )
    assert parse_shard_spec("1/2=http://c:3").shard == Shard(index=1, count=2)
    with pytest.raises(ValueError, match="not a shard like"):
        parse_shard_spec("0-1")
    check_cover([parse_shard_spec("0/2=http://a"), parse_shard_spec("1/2=http://b")], 4)
    with pytest.raises(ValueError, match=r"partitions \[3\] of 4 are served by no shard"):
        check_cover([parse_shard_spec("0-2=http://a")], 4)
    with pytest.raises(ValueError, match="more than one shard"):
        check_cover([parse_shard_spec("0-3=http://a"), parse_shard_spec("3=http://b")], 4)


class DownForStatistics(httpx.AsyncBaseTransport):
    """A replica that misses the first pass of a search and answers the others."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/shard/search/statistics":
            raise httpx.ConnectError("connection refused", request=request)
        return await self.inner.handle_async_request(request)


async def test_a_shard_missing_the_first_pass_is_left_out_of_the_later_ones() -> None:
    pair = _Pair()
    b = pair.backend._mounts  # the mounted transports, by URL pattern
    for pattern in list(b):
        if "b1" in str(pattern.pattern):
            b[pattern] = DownForStatistics(b[pattern])
    async with pair as (routed, _):
        found = (await routed.get("/search", params={"q": "rate limit request"})).json()
        assert found["partial"] is True and found["missing"] == [spans(REST)]
        assert found["items"], "shard a answered nothing: the test would prove nothing"
        assert all(partition_of(h["repo"], PARTITIONS) == FIRST for h in found["items"])
