"""The router with authentication on (issue 19): the caller's token goes to the replicas,
which check it; merged answers hold only the token's repositories."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from query.api import create_api
from query.materializer import partition_of
from query.read_model import ReadModel
from query.router import Router, ShardReplicas, create_router_app
from query.shard import Shard
from stores.tokens import TokenRecord, hash_secret, token_id
from tests.unit.test_router import PARTITIONS, model_of

BILLING = "gzt_router_billing"  # reads billing and docs, on two shards
HOST = {"Host": "router"}


def with_tokens(model: ReadModel) -> ReadModel:
    model.tokens.apply(
        TokenRecord(
            id=token_id("billing"),
            name="billing",
            hash=hash_secret(BILLING),
            scopes=("read",),
            repos=("billing", "docs"),
            created_at=1.0,
        )
    )
    return model


def router_app() -> FastAPI:
    first = partition_of("billing", PARTITIONS)
    a, b = ["billing"], ["gateway", "docs"]
    apps = {
        "http://a": httpx.ASGITransport(
            app=create_api(with_tokens(model_of(a)), ready=lambda: True, authenticate=True)
        ),
        "http://b": httpx.ASGITransport(
            app=create_api(with_tokens(model_of(b)), ready=lambda: True, authenticate=True)
        ),
    }
    shards = [
        ShardReplicas(Shard(partitions=frozenset({first})), ["http://a"]),
        ShardReplicas(Shard(partitions=frozenset(set(range(PARTITIONS)) - {first})), ["http://b"]),
    ]
    backend = httpx.AsyncClient(mounts=apps)
    return create_router_app(Router(shards, PARTITIONS, backend), authenticate=True)


def routed(app: FastAPI | None = None) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app or router_app())
    return httpx.AsyncClient(transport=transport, base_url="http://router", headers=HOST)


async def test_no_or_a_wrong_token_is_refused_at_the_router_or_by_the_replicas() -> None:
    async with routed() as client:
        org = ("/context?q=rate", "/session-start?q=rate", "/graph-search?q=rate")
        for path in ("/repositories", "/search?q=rate", *org, "/repositories/billing/files"):
            none = await client.get(path)
            assert none.status_code == 401
            assert none.headers["www-authenticate"] == 'Bearer realm="gazetteer"'
            wrong = await client.get(path, headers={"Authorization": "Bearer gzt_no"})
            assert wrong.status_code == 401, (path, wrong.text)
            assert wrong.json() == {"detail": "invalid or revoked token"}
            assert "invalid_token" in wrong.headers["www-authenticate"]
        assert (await client.get("/health")).status_code == 200


async def test_merged_answers_hold_only_the_token_s_repositories() -> None:
    headers = {"Authorization": f"Bearer {BILLING}"}
    async with routed() as client:
        listed = (await client.get("/repositories", headers=headers)).json()
        assert (listed["total"], [r["repo"] for r in listed["items"]]) == (2, ["billing", "docs"])
        found = (await client.get("/search", params={"q": "rate limit"}, headers=headers)).json()
        assert found["repositories"] == 2 and found["partial"] is False
        assert {h["repo"] for h in found["items"]} <= {"billing", "docs"}
        question = {"q": "rate limit request invoice", "budget": 3000, "seeds": 6}
        pack = (await client.get("/context", params=question, headers=headers)).json()
        assert pack["repositories"] == 2 and pack["partial"] is False
        assert {s["repo"] for s in pack["sections"]} == {"billing", "docs"}
        graph = (await client.get("/graph-search", params={"q": "limit"}, headers=headers)).json()
        assert graph["repositories"] == 2 and graph["partial"] is False
        assert {h["repo"] for c in graph["channels"] for h in c["items"]} <= {"billing", "docs"}
        hidden = await client.get("/repositories/gateway", headers=headers)
        missing = await client.get("/repositories/gatewax", headers=headers)
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json()["detail"] == "unknown repository 'gateway'; see /repositories"
        assert (await client.get("/repositories/docs", headers=headers)).status_code == 200


async def test_the_router_s_mcp_tools_carry_the_caller_s_token_to_the_replicas() -> None:
    app = router_app()
    async with app.state.mcp.run():
        async with routed(app) as http:
            refused = await http.post("/mcp", json={})
            assert refused.status_code == 401  # no token: refused at the router
        headers = {**HOST, "Authorization": f"Bearer {BILLING}"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, headers=headers) as http:
            async with Client(streamable_http_client("http://router/mcp", http_client=http)) as mcp:
                listed = await mcp.call_tool("repositories", {})
                found = await mcp.call_tool("search_all", {"q": "rate limit"})
                hidden = await mcp.call_tool("files", {"repo": "gateway"})
    assert listed.structured_content is not None and found.structured_content is not None
    assert [r["repo"] for r in listed.structured_content["items"]] == ["billing", "docs"]
    assert {h["repo"] for h in found.structured_content["items"]} <= {"billing", "docs"}
    assert hidden.is_error
    text = " ".join(getattr(c, "text", "") for c in hidden.content)
    assert text == "unknown repository 'gateway'; see /repositories (HTTP 404)"
