"""Every query operation as an MCP tool: one product, one code path.

The tools are the HTTP API's operations under the same names, with the arguments,
defaults, bounds and descriptions its OpenAPI document gives them. Mounted in the query
service (``mount_mcp``), a call is answered by the `QueryService` method of the tool's
name, its arguments checked by the route's own declarations and admitted by the app's
compute gate as the GET would be (`InProcess`); the stdio server (``serve_stdio``), a
process of its own, makes the GET to the running service instead (`OverHttp`). Either
way a tool answers exactly the endpoint's JSON, bounded as the endpoint bounds it, and
a refusal becomes a tool error carrying the service's message and status.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import httpx
from fastapi import FastAPI
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)
from starlette.routing import Route

from query.api import create_api
from query.mcp_answers import Answers, InProcess, OverHttp
from query.mcp_operations import TOOLS, Operation, operations
from query.read_model import ReadModel
from query.service_client import QueryError

__all__ = [
    "TOOLS",
    "Answers",
    "InProcess",
    "McpEndpoint",
    "Operation",
    "OverHttp",
    "call",
    "create_server",
    "mount_mcp",
    "operations",
    "serve_stdio",
]

INSTRUCTIONS = (
    "Gazetteer knows where things are in an organization's code and how far to trust it. "
    "Start with `repositories`, then `overview`; `search` ranks files for a question with "
    "the lines to read first; `context` packs the code to read within a token budget. "
    "Every answer is bounded and carries the repository's freshness."
)


async def call(answers: Answers, op: Operation, arguments: Mapping[str, Any]) -> CallToolResult:
    """One tool call: the endpoint's JSON as structured content, or its refusal as an error.

    Bounds and types are the endpoint's to check (its 422 says which argument is wrong);
    only what cannot make a GET is refused here.
    """
    unknown = sorted(set(arguments) - {*op.path_params, *op.query_params})
    missing = [p for p in op.path_params if arguments.get(p) in (None, "")]
    if unknown or missing:
        return failure(
            "; ".join(
                [f"{name}: unexpected argument" for name in unknown]
                + [f"{name}: required" for name in missing]
            )
        )
    try:
        answer = await answers(op, arguments)
    except QueryError as exc:
        return failure(exc.message)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(answer, ensure_ascii=False))],
        structured_content=answer,
    )


def failure(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def create_server(answers: Answers, ops: Sequence[Operation]) -> Server[Any]:
    """The low-level server: the tool list is data here, not Python signatures."""
    by_name = {op.tool: op for op in ops}
    listed = ListToolsResult(tools=[op.as_tool() for op in ops])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        op = by_name.get(params.name)
        if op is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}; see tools/list")
        return await call(answers, op, params.arguments or {})

    return Server(
        "gazetteer",
        version="0.1.0",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


class McpEndpoint:
    """The streamable-HTTP MCP endpoint mounted in the query service.

    Its session manager owns a task group: ``run()`` must be entered before the first
    MCP request and left before the HTTP server stops.
    """

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self._manager = manager

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self._manager.run():
            yield


def mount_mcp(api: FastAPI, *, path: str = "/mcp") -> McpEndpoint:
    """Serve the tools at ``path`` on ``api`` (made by `create_api`), answered in-process
    by its `QueryService` (`InProcess`).

    Stateless, JSON answers: every MCP request stands alone, so any replica answers it,
    and no session or open stream outlives the request that made it. The Host and Origin
    headers are checked by the app, for /mcp as for every route (`create_api`'s
    ``hosts``, query/host_check.py): one rule, so the SDK's own check is off.
    """
    ops = operations(api.openapi())
    manager = StreamableHTTPSessionManager(
        app=create_server(InProcess.of(api, ops), ops),
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    api.router.routes.append(Route(path, StreamableHTTPASGIApp(manager), include_in_schema=False))
    return McpEndpoint(manager)


async def serve_stdio(url: str) -> None:
    """The tools over stdin/stdout, calling the query service at ``url`` (`OverHttp`).

    The tools come from this installation's own API document, so the server starts
    and lists them even before the service is up (a call then says it is unreachable).
    """
    openapi = create_api(ReadModel(), ready=lambda: False).openapi()
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        server = create_server(OverHttp(client), operations(openapi))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
