"""The audit log: one ``request_handled`` line per request, with exactly who, what,
which repositories and how it went, and nothing of the headers or the query string."""

from __future__ import annotations

import json
from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from structlog.testing import capture_logs

from query.api import create_api
from query.audit_log import AuditLog, note_repositories, repositories_of, tool_calls
from query.host_check import HostCheck, host_rule
from query.limits import RequestLimits
from query.read_model import ReadModel
from tests.e2e.query_service import feed
from tests.unit.test_request_limits import Authenticated
from tests.unit.test_retrieval_api import FILES


class Refusing:
    """A refusal before the app routes the request (as the authentication's 401)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (b"x-refuse", b"1") in scope["headers"]:
            await PlainTextResponse("no token", status_code=401)(scope, receive, send)
        else:
            await self.app(scope, receive, send)


SECRET = "gzt_0123456789abcdefSECRET"


def audited() -> Starlette:
    async def search(request: Request) -> Response:
        return JSONResponse({"repo": request.path_params["repo"]})

    async def org_search(request: Request) -> Response:
        note_repositories(request.scope, ["payments-api", "shared-lib"])
        note_repositories(request.scope, ["payments-api"])
        return JSONResponse({})

    async def broken(request: Request) -> Response:
        raise RuntimeError("a bug")

    async def gone(request: Request) -> Response:
        return PlainTextResponse("gone", status_code=410)

    routes = [
        Route("/repositories/{repo}/search", search),
        Route("/search", org_search),
        Route("/broken", broken),
        Route("/gone", gone, methods=["DELETE"]),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(AuditLog, routes=lambda: routes),
            Middleware(HostCheck, rule=host_rule("127.0.0.1")),
            Middleware(Authenticated),
            Middleware(Refusing),
        ],
    )


async def handled(method: str, url: str, **request: Any) -> list[MutableMapping[str, Any]]:
    """The lines of one request, each without its (variable) duration, checked apart."""
    transport = httpx.ASGITransport(
        app=audited(), raise_app_exceptions=False, client=("10.1.2.3", 999)
    )
    with capture_logs() as logs:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            await http.request(method, url, **request)
    for line in logs:
        duration = line.pop("duration_ms")
        assert isinstance(duration, float) and duration >= 0.0
    return logs


async def test_a_request_of_a_token_about_a_repository() -> None:
    lines = await handled(
        "GET",
        f"/repositories/billing/search?q=password%3D{SECRET}&session=abc",
        headers={"x-test-token": "ci-agent", "authorization": f"Bearer {SECRET}"},
    )
    assert lines == [
        {
            "event": "request_handled",
            "log_level": "info",
            "token": "ci-agent",
            "client": "10.1.2.3",
            "method": "GET",
            "route": "/repositories/{repo}/search",
            "repositories": ["billing"],
            "repositories_total": 1,
            "status": 200,
        }
    ]
    assert SECRET not in repr(lines)


async def test_repositories_asked_for_and_noted() -> None:
    lines = await handled("GET", "/search?q=x&repos=shared-lib, billing-*,,")
    assert lines[0]["token"] == "anonymous"
    assert lines[0]["repositories"] == ["billing-*", "payments-api", "shared-lib"]
    assert lines[0]["repositories_total"] == 3


@pytest.mark.parametrize(
    ("method", "url", "headers", "route", "status"),
    [
        ("GET", "/nowhere/at/all", {}, "/nowhere/at/all", 404),  # no route: the path
        ("GET", "/gone", {}, "/gone", 405),
        ("DELETE", "/gone", {}, "/gone", 410),
        ("GET", "/broken", {}, "/broken", 500),  # the server's error answer
        ("GET", "/search", {"host": "evil.example"}, "/search", 421),  # refused outside
        ("GET", "/gone", {"x-refuse": "1"}, "/gone", 401),  # refused before routing
    ],
)
async def test_every_request_is_logged_with_its_status(
    method: str, url: str, headers: dict[str, str], route: str, status: int
) -> None:
    lines = await handled(method, url, headers=headers)
    assert [(line["method"], line["route"], line["status"]) for line in lines] == [
        (method, route, status)
    ]


async def test_a_request_refused_before_routing_names_its_route_and_repository() -> None:
    lines = await handled("GET", "/repositories/billing/search?q=x", headers={"x-refuse": "1"})
    assert [(line["route"], line["repositories"], line["status"]) for line in lines] == [
        ("/repositories/{repo}/search", ["billing"], 401)
    ]


def test_repositories_are_each_named_once_and_sorted() -> None:
    scope = {
        "type": "http",
        "query_string": b"repos=c,a&repos=b",
        "state": {"audit_repositories": ["a", 7]},
    }
    assert repositories_of(scope, {"repo": "b"}) == ["a", "b", "c"]
    assert repositories_of({"type": "http"}, {}) == []


def call(tool: str, **arguments: object) -> dict[str, object]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


@pytest.mark.parametrize(
    ("body", "tools", "repos"),
    [
        (json.dumps(call("search", repo="billing", q=SECRET)), ["search"], ["billing"]),
        (
            json.dumps([call("search_all", repos="a-*,b"), call("repositories")]),
            ["search_all", "repositories"],
            ["a-*", "b"],
        ),
        (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), [], []),
        (json.dumps([1, "x", {"method": "tools/call", "params": 3}]), [], []),
        (json.dumps(call("search", repo=7)), ["search"], []),
        (b'{"jsonrpc": "2.0", "method": "tools/ca', [], []),  # cut short
        (b"\xff not json", [], []),
    ],
)
def test_the_tool_calls_of_an_mcp_body(body: str | bytes, tools: list[str], repos: list[str]):
    raw = body.encode() if isinstance(body, str) else body
    assert tool_calls(raw) == (tools, repos)


async def test_an_mcp_request_names_its_tools_and_repositories() -> None:
    async def mcp(request: Request) -> Response:
        await request.body()
        return JSONResponse({"jsonrpc": "2.0", "id": 1, "result": {}})

    app = Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])
    transport = httpx.ASGITransport(app=AuditLog(app), client=("10.1.2.3", 9))
    with capture_logs() as logs:
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            await http.post("/mcp", json=call("search", repo="billing", q=SECRET))
            await http.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert [(e["route"], e["tools"], e["repositories"]) for e in logs] == [
        ("/mcp", ["search"], ["billing"]),
        ("/mcp", [], []),
    ]
    assert SECRET not in repr(logs)


async def test_an_org_wide_search_of_the_service_names_the_repositories_of_its_hits() -> None:
    """The service notes what an org-wide answer drew from (query/service/access.py
    `touched`): the request named no repository."""
    model = ReadModel(clock=lambda: 1002.0)
    for repo in ("payments-api", "shared-lib", "unrelated"):
        feed(
            model,
            repo,
            FILES if repo != "unrelated" else {"x/y.py": "def z(): pass\n"},
            clustered=True,
        )
    api = create_api(model, ready=lambda: True, limits=RequestLimits(rate=None))
    transport = httpx.ASGITransport(app=api)
    with capture_logs() as logs:
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            answer = await client.get("/search", params={"q": "resolve redirects session"})
    assert answer.status_code == 200
    hits = sorted({h["repo"] for h in answer.json()["items"]})
    assert hits == ["payments-api", "shared-lib"]
    (line,) = [e for e in logs if e["event"] == "request_handled"]
    assert (line["route"], line["repositories"]) == ("/search", hits)
