"""The router's request limits and audit line: an org-wide search names the
repositories of its hits, a forwarded request its repository; the limits refuse at
the router, before any shard is asked."""

from __future__ import annotations

import httpx
from structlog.testing import capture_logs

from query.request_limits import RequestLimits
from query.router import Router, ShardReplicas, create_router_app
from query.shard import Shard
from query.token_bucket import Rate
from tests.unit.test_router import FIRST, PARTITIONS, REST, shard_apps


def router_client(backend: httpx.AsyncClient, limits: RequestLimits) -> httpx.AsyncClient:
    shards = [
        ShardReplicas(Shard(partitions=frozenset({FIRST})), ["http://a1", "http://a2"]),
        ShardReplicas(Shard(partitions=REST), ["http://b1"]),
    ]
    app = create_router_app(Router(shards, PARTITIONS, backend), limits=limits)
    transport = httpx.ASGITransport(app=app, client=("10.0.0.9", 1))
    return httpx.AsyncClient(transport=transport, base_url="http://router")


async def test_the_router_audits_its_fan_out_and_forwards() -> None:
    async with httpx.AsyncClient(mounts=shard_apps()) as backend:
        async with router_client(backend, RequestLimits()) as routed:
            with capture_logs() as logs:
                search = await routed.get("/search", params={"q": "TooManyRequests limits"})
                one = await routed.get("/repositories/billing/files", params={"limit": 1})
    assert (search.status_code, one.status_code) == (200, 200)
    hits = sorted({h["repo"] for h in search.json()["items"]})
    assert len(hits) >= 2, "a search of one repository would show no fan-out"
    lines = [e for e in logs if e["event"] == "request_handled"]
    assert [(e["route"], e["repositories"], e["status"]) for e in lines] == [
        ("/search", hits, 200),
        ("/repositories/{repo}/{rest:path}", ["billing"], 200),
    ]


async def test_the_router_refuses_before_asking_a_shard() -> None:
    asked: list[str] = []

    async def count(request: httpx.Request) -> None:
        asked.append(request.url.path)

    limits = RequestLimits(max_body_bytes=10, rate=Rate(per_s=1.0, burst=1))
    async with httpx.AsyncClient(mounts=shard_apps(), event_hooks={"request": [count]}) as backend:
        async with router_client(backend, limits) as routed:
            large = await routed.post("/repositories/billing/impact", content=b"{" + b" " * 20)
            first = await routed.get("/repositories/billing")
            second = await routed.get("/repositories/billing")
    assert (large.status_code, first.status_code, second.status_code) == (413, 200, 429)
    assert second.headers["retry-after"] == "1"
    # Only the request admitted reached the shard: its replica a1 (down), then a2.
    assert asked == ["/repositories/billing", "/repositories/billing"]


async def test_the_router_audits_an_org_pack_with_the_repositories_it_drew_from() -> None:
    params = {"q": "rate limit request invoice", "budget": 3000, "seeds": 6}
    async with httpx.AsyncClient(mounts=shard_apps()) as backend:
        async with router_client(backend, RequestLimits()) as routed:
            with capture_logs() as logs:
                pack = await routed.get("/context", params=params)
    drawn = [s["repo"] for s in pack.json()["sections"]]
    assert len(drawn) >= 2, "a pack of one repository would show no fan-out"
    lines = [e for e in logs if e["event"] == "request_handled"]
    assert [(e["route"], e["repositories"], e["status"]) for e in lines] == [
        ("/context", sorted(drawn), 200)
    ]
