"""The audit log: one structured line per request, ``request_handled``.

Each line says who asked (the token's name, or ``anonymous``; query/caller.py), from
which address, what (method, and the route's template, ``/repositories/{repo}/search``,
else the path when no route matched), about which repositories, and how it went (the
status, and the time to the end of the answer). Never the headers, the query string or
the body: a token or a question's text is not the log's to keep.

The repositories are the request's ``{repo}`` and its ``repos=`` list (as asked: ids,
names or globs), plus any a handler notes with `note_repositories` (the router's
org-wide search notes the repositories of its hits). An MCP request (``/mcp``, JSON-RPC
over streamable HTTP) names them in its body: the line adds ``tools``, the tools it
calls, and the ``repo`` and ``repos`` of their arguments (`tool_calls`). The middleware
wraps everything else, the Host check and the authentication included, so their
refusals are logged too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

import structlog
from starlette.datastructures import QueryParams
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from query.caller import caller_name, client_address
from query.service.access import noting

log = structlog.get_logger(__name__)

MCP_PATHS = frozenset({"/mcp"})
MAX_PEEK_BYTES = 1 << 20
"""The most of an MCP request's body kept to read its tool calls (the size limit's
default: a larger one is refused anyway)."""
MAX_REPOSITORIES = 50
"""Repositories named on one line at most (``repositories_total`` counts them all)."""
NOTED = "audit_repositories"
"""The key of the repositories a handler notes, in the request's state."""


def note_repositories(scope: Scope, repos: Iterable[str]) -> None:
    """Note ``repos`` as touched by the request of ``scope`` (a handler's
    ``request.scope``: its state is the one the audit line reads)."""
    state = scope.setdefault("state", {})
    state[NOTED] = [*state.get(NOTED, ()), *repos]


class Routable(Protocol):
    """A route as far as naming one goes (Starlette's routes, FastAPI's route contexts)."""

    @property
    def path(self) -> str | None: ...

    def matches(self, scope: Scope) -> tuple[Match, Scope]: ...


Routes = Callable[[], Iterable[Routable]]
"""The app's routes, asked for when needed (routes added after the middleware count)."""


def route_of(scope: Scope, routes: Routes = tuple) -> tuple[str, Mapping[str, Any]]:
    """The template of the route the request matched and its path parameters; for a
    request refused before the app routed it (the Host check, authentication, a limit,
    a wait for a compute slot cut short) the route of ``routes`` it would have taken;
    else its path, and none."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path, scope.get("path_params") or {}
    partial: tuple[str, Mapping[str, Any]] | None = None
    for route in routes():
        match, child = route.matches(scope)
        if match is Match.NONE or route.path is None:
            continue
        if match is Match.FULL:
            return route.path, child.get("path_params", {})
        partial = partial or (route.path, child.get("path_params", {}))
    return partial or (str(scope["path"]), {})


def tool_calls(body: bytes) -> tuple[list[str], list[str]]:
    """The tools an MCP request's body calls (one JSON-RPC message or a batch), in
    order, and the repositories their arguments name (``repo``; ``repos``, a comma list).
    Anything else of the body is not looked at."""
    try:
        decoded = json.loads(body)
    except ValueError:  # not JSON, or cut at MAX_PEEK_BYTES
        return [], []
    tools: list[str] = []
    repos: list[str] = []
    for message in decoded if isinstance(decoded, list) else [decoded]:
        if not isinstance(message, dict) or message.get("method") != "tools/call":
            continue
        params = message.get("params")
        if not isinstance(params, dict):
            continue
        if isinstance(params.get("name"), str):
            tools.append(params["name"])
        arguments = params.get("arguments")
        if isinstance(arguments, dict):
            if isinstance(arguments.get("repo"), str):
                repos.append(arguments["repo"])
            if isinstance(arguments.get("repos"), str):
                repos.extend(arguments["repos"].split(","))
    return tools, repos


def repositories_of(
    scope: Scope, params: Mapping[str, Any], named: Iterable[str] = ()
) -> list[str]:
    """The repositories a request named (its ``{repo}`` in ``params``, its ``repos=``,
    ``named`` in its body) or a handler noted: sorted, each once."""
    found = {r.strip() for r in named if r.strip()}
    if isinstance(params.get("repo"), str):
        found.add(params["repo"])
    for value in QueryParams(scope.get("query_string", b"")).getlist("repos"):
        found.update(r.strip() for r in value.split(",") if r.strip())
    state = scope.get("state")
    noted = state.get(NOTED) if isinstance(state, Mapping) else None
    if isinstance(noted, list):
        found.update(r for r in noted if isinstance(r, str))
    return sorted(found)


class AuditLog:
    """Pure ASGI middleware: the `request_handled` line of every HTTP request.

    ``routes``: the app's, to name the route of a request refused before it was
    routed."""

    def __init__(
        self, app: ASGIApp, routes: Routes = tuple, mcp_paths: frozenset[str] = MCP_PATHS
    ) -> None:
        self.app = app
        self.routes = routes
        self.mcp_paths = mcp_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None  # None: no answer begun (the client left first)
        mcp = scope["path"] in self.mcp_paths and scope["method"] == "POST"
        body = bytearray()

        async def receiving() -> Message:
            message = await receive()
            if mcp and message["type"] == "http.request" and len(body) < MAX_PEEK_BYTES:
                body.extend(message.get("body", b"")[: MAX_PEEK_BYTES - len(body)])
            return message

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        with noting() as drawn:  # what the service's answers drew from (`touched`)
            try:
                await self.app(scope, receiving, sending)
            except Exception:
                status = status or 500  # what the server's error handler answers
                raise
            finally:
                route, params = route_of(scope, self.routes)
                tools, named = tool_calls(bytes(body)) if mcp else ([], [])
                repos = repositories_of(scope, params, [*named, *drawn])
                log.info(
                    "request_handled",
                    **({"tools": tools} if mcp else {}),
                    token=caller_name(scope),
                    client=client_address(scope),
                    method=scope["method"],
                    route=route,
                    repositories=repos[:MAX_REPOSITORIES],
                    repositories_total=len(repos),
                    status=status,
                    duration_ms=round((time.perf_counter() - started) * 1000, 1),
                )
