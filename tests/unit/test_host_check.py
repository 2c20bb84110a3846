"""The Host header check (DNS rebinding), on every route of the query service."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from query.api import create_api
from query.host_check import HostRule, host_of, host_rule
from query.mcp_http import mount_mcp
from tests.unit.test_retrieval_api import indexed_model

# A value for each path parameter of the routes (an indexed file, a neighborhood id and
# a churn entry need not exist: a 404 is an answer too, only not a refusal).
PATH_VALUES = {
    "repo": "app-1",
    "path": "app/sessions.py",
    "nid": "n0",
    "entry_id": "1",
    "name": "dashboard.js",
}
REFUSED = (400, 421)


def service(bind: str = "127.0.0.1", listed: tuple[str, ...] = ()) -> FastAPI:
    """The app as `run_query` builds it: the rule of its bind address, MCP mounted."""
    model = indexed_model()
    api = create_api(model, ready=lambda: True, hosts=host_rule(bind, listed))
    api.state.stopping = asyncio.Event()
    api.state.stopping.set()  # the dashboard's event stream ends at once
    endpoint = mount_mcp(api)
    api.router.lifespan_context = lambda app: endpoint.run()  # run by `with TestClient`
    return api


# An ASGI app's route (/mcp) takes any method: its requests are JSON-RPC POSTs (a GET
# would open the server's event stream, which never ends).
MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
MCP_HEADERS = {"accept": "application/json, text/event-stream"}


def every_route(api: FastAPI) -> list[tuple[str, str]]:
    """(method, URL) of every route of the app, its path parameters filled."""
    found = []
    for route in iter_route_contexts(api.routes):  # included routers' routes too
        assert route.path is not None, route
        url = re.sub(r"{(\w+)(:\w+)?}", lambda m: PATH_VALUES[m.group(1)], route.path)
        methods = sorted(route.methods or {"POST"})
        method = "GET" if "GET" in methods else methods[0]
        found.append((method, url))
    return found


def ask(client: TestClient, method: str, url: str, host: str) -> httpx.Response:
    if method == "POST":
        return client.post(url, json=MCP_CALL, headers={**MCP_HEADERS, "host": host})
    return client.request(method, url, headers={"host": host})


def test_every_route_refuses_a_foreign_host_and_answers_an_allowed_one() -> None:
    api = service()
    routes = every_route(api)
    urls = {url for _, url in routes}
    assert {"/health", "/repositories", "/metrics", "/mcp", "/docs", "/dashboard"} <= urls
    assert len(routes) >= 30
    with TestClient(api, base_url="http://127.0.0.1:8765") as client:
        for method, url in routes:
            foreign = ask(client, method, url, "evil.example:8765")
            assert foreign.status_code == 421, (method, url, foreign.status_code)
            assert foreign.text == "Invalid Host header"
            for host in ("127.0.0.1:8765", "localhost:8765", "[::1]:8765", "localhost"):
                allowed = ask(client, method, url, host)
                assert allowed.status_code not in REFUSED, (method, url, host, allowed.text)
        tools = ask(client, "POST", "/mcp", "localhost").json()["result"]["tools"]
        assert "repositories" in {tool["name"] for tool in tools}
        # A browser's Origin must name an allowed host as well.
        cross = client.get("/health", headers={"origin": "http://evil.example"})
        assert (cross.status_code, cross.text) == (403, "Invalid Origin header")
        same = client.get("/health", headers={"origin": "http://localhost:8765"})
        assert same.status_code == 200


def test_the_mcp_tools_call_the_api_under_an_allowed_host() -> None:
    with TestClient(service("10.1.2.3"), base_url="http://10.1.2.3:8765") as client:
        call = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "repositories", "arguments": {}},
        }
        headers = {"accept": "application/json, text/event-stream"}
        answer = client.post("/mcp", json=call, headers=headers).json()
        assert answer["result"].get("isError") is not True, answer
        listed = answer["result"]["structuredContent"]["items"]
        assert [r["repo"] for r in listed] == ["app-1"]
        refused = client.post("/mcp", json=call, headers={**headers, "host": "evil.example"})
        assert refused.status_code == 421


@pytest.mark.parametrize(
    ("bind", "listed", "accepted", "refused"),
    [
        (
            "127.0.0.1",
            (),
            ["localhost", "127.0.0.1:1", "[::1]:8765", "LOCALHOST:80"],
            ["10.0.0.1", "evil.example", "127.0.0.2", "localhost.evil.example", ""],
        ),
        ("::1", (), ["[::1]", "localhost:8765"], ["[::2]", "evil.example"]),
        (
            "10.1.2.3",
            ("gazetteer.acme.internal",),
            ["10.1.2.3:8765", "gazetteer.acme.internal", "Gazetteer.Acme.Internal:443"],
            ["localhost", "127.0.0.1", "10.1.2.4", "acme.internal"],
        ),
        (
            "0.0.0.0",
            ("query",),
            ["10.9.8.7:8765", "[fd00::1]:8765", "localhost:8765", "query:8765"],
            ["evil.example", "query.evil.example", "10.9.8.7:port"],
        ),
        ("0.0.0.0", ("*",), ["evil.example", "anything:1"], []),
    ],
)
def test_the_rule_follows_the_bind_address_and_the_listed_names(
    bind: str, listed: tuple[str, ...], accepted: list[str], refused: list[str]
) -> None:
    rule = host_rule(bind, listed)
    assert [h for h in accepted if not rule.allows(h)] == []
    assert [h for h in refused if rule.allows(h)] == []


def test_host_headers_are_read_strictly() -> None:
    assert host_of("Example.COM:8765") == "example.com"
    assert host_of("[::1]:80") == "::1"
    assert host_of("[::1]") == "::1"
    assert host_of("example.com.") == "example.com"
    for malformed in ("", ":80", "example.com:", "example.com:x", "[::1", "[nope]:1", "[::1]x"):
        assert host_of(malformed) is None, malformed
    assert HostRule(frozenset({"::1"})).own_name == "[::1]"
    assert host_rule("10.1.2.3").own_name == "10.1.2.3"
    assert host_rule("0.0.0.0").own_name == "localhost"
