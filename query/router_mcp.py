"""The MCP tools at the router's ``/mcp`` (issue 18): one address for agents too.

The tools are the query service's (its API document's operations, `query.mcp_tools`),
and each call is made as the HTTP request it stands for, to the router itself, in
process (`OverHttp` over an ASGI transport), with the caller's ``Host`` and
``Authorization``. So a tool answers exactly what its route answers through the router:
a repository's from a replica of its shard (retried on the next), an org-wide search
merged across the shards, partial answers marked; the token is checked by the replicas,
as for HTTP, and each call is one more ``request_handled`` line of the router's audit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from functools import cache

import httpx
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from query.mcp_answers import OverHttp
from query.mcp_http import McpEndpoint
from query.mcp_operations import Operation
from query.mcp_tools import Tools, api_operations, create_server

PASSED = ("host", "authorization")
"""The headers of the MCP request its tool calls carry (the Host check and the token)."""

_CALLER: ContextVar[Mapping[str, str] | None] = ContextVar("gazetteer_mcp_caller", default=None)


def caller_headers() -> Mapping[str, str]:
    """The `PASSED` headers of the MCP request being answered (none outside one)."""
    return _CALLER.get() or {}


class CallerHeaders:
    """Pure ASGI: the MCP request's `PASSED` headers, for the tool calls it makes (they
    run in tasks of the request, which inherit its context)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        token = _CALLER.set({k: headers[k] for k in PASSED if k in headers})
        try:
            await self.app(scope, receive, send)
        finally:
            _CALLER.reset(token)


@cache
def _operations() -> Sequence[Operation]:
    """The query service's tools, read once from its API document (making the document
    builds a whole query app: every router app made in a process shares the one list)."""
    return tuple(api_operations())


def mount_router_mcp(app: Starlette, *, path: str = "/mcp", timeout_s: float = 60.0) -> McpEndpoint:
    """Serve the tools at ``path`` on the router ``app``, each call a request to ``app``.

    Stateless, JSON answers, as the query service's endpoint (query/mcp_http.py)."""
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://router", timeout=timeout_s
    )
    answers = OverHttp(client, headers=caller_headers)
    manager = StreamableHTTPSessionManager(
        app=create_server(answers, Tools.of(_operations())),
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    app.router.routes.append(Route(path, CallerHeaders(StreamableHTTPASGIApp(manager))))
    return McpEndpoint(manager)
