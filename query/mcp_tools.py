"""Every query operation as an MCP tool: one product, one code path.

The tools are the HTTP API's operations under the same names, with the arguments,
defaults, bounds and descriptions its OpenAPI document gives them. A call is an HTTP
GET through an ``httpx.AsyncClient`` -- in-process over ASGI when mounted in the query
service (``mount_mcp``), over the network for the stdio server (``serve_stdio``) -- so
a tool answers exactly the endpoint's JSON, bounded as the endpoint bounds it, and a
refusal becomes a tool error carrying the service's message.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
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
    Tool,
    ToolAnnotations,
)
from starlette.routing import Route

from query.api import create_api
from query.host_check import HostRule
from query.read_model import ReadModel
from query.service_client import QueryError, expand, get_json

TOOLS: Mapping[str, str] = {
    "health": "/health",
    "repositories": "/repositories",
    "repository": "/repositories/{repo}",
    "freshness": "/repositories/{repo}/freshness",
    "files": "/repositories/{repo}/files",
    "file_detail": "/repositories/{repo}/files/{path}",
    "symbols": "/repositories/{repo}/symbols",
    "search": "/repositories/{repo}/search",
    "context": "/repositories/{repo}/context",
    "graph_search": "/repositories/{repo}/graph-search",
    "ranking": "/repositories/{repo}/ranking",
    "session_start": "/repositories/{repo}/session-start",
    "neighborhoods": "/repositories/{repo}/neighborhoods",
    "neighborhood": "/repositories/{repo}/neighborhoods/{nid}",
    "neighborhood_of": "/repositories/{repo}/neighborhood-of",
    "neighborhood_changes": "/repositories/{repo}/neighborhood-changes",
    "hubs": "/repositories/{repo}/hubs",
    "importance": "/repositories/{repo}/importance",
    "folders": "/repositories/{repo}/folders",
    "files_by_level": "/repositories/{repo}/files-by-level",
    "overview": "/repositories/{repo}/overview",
    "churn": "/repositories/{repo}/churn",
    "churn_entry": "/repositories/{repo}/churn/{entry_id}",
    "structural_diff": "/repositories/{repo}/diff",
    "dead_letters": "/dead-letters",
}
"""Tool name -> the GET operation it is; the names are the endpoints' (``repository``
for ``one_repository``)."""

UNDOCUMENTED: Mapping[str, str] = {
    "health": "Whether the read side has caught up with the topics as of start.",
    "repositories": "Each indexed repository with its counts and freshness.",
    "repository": "One repository: name, branch, counts, dead letters and freshness.",
    "freshness": "How far to trust a repository's index: status, lag, pending events.",
    "files": "A repository's files, filtered and paged, with the true total.",
    "file_detail": "One file: language, size, lines, symbols with line ranges, imports, "
    "what it depends on and what imports it.",
    "symbols": "A file's symbols with their line ranges.",
    "dead_letters": "The most recent dead letters and their total.",
}
"""For the endpoints without a docstring (the README's words); a docstring wins."""

INSTRUCTIONS = (
    "Gazetteer knows where things are in an organization's code and how far to trust it. "
    "Start with `repositories`, then `overview`; `search` ranks files for a question with "
    "the lines to read first; `context` packs the code to read within a token budget. "
    "Every answer is bounded and carries the repository's freshness."
)

PATH_ARGUMENTS: Mapping[str, str] = {
    "repo": "a repository id, as `repositories` lists them",
    "path": "a file's path in the repository",
    "nid": "a neighborhood id, as `neighborhoods` lists them (ids survive reclustering)",
}

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)


@dataclass(frozen=True, slots=True)
class Operation:
    """One tool: the GET it makes and the arguments it takes."""

    tool: str
    path: str
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    description: str
    input_schema: Mapping[str, Any]

    def as_tool(self) -> Tool:
        return Tool(
            name=self.tool,
            description=self.description,
            input_schema=dict(self.input_schema),
            annotations=READ_ONLY,
        )


def operations(openapi: Mapping[str, Any]) -> list[Operation]:
    """The tools, read from the API's OpenAPI document (``FastAPI.openapi()``)."""
    found = []
    for tool, path in TOOLS.items():
        op = openapi["paths"].get(path, {}).get("get")
        if op is None:
            raise LookupError(f"the HTTP API has no GET {path} for the tool {tool!r}")
        params = [p for p in op.get("parameters", ()) if p["in"] in ("path", "query")]
        properties = {p["name"]: argument_schema(p) for p in params}
        required = [p["name"] for p in params if p.get("required")]
        found.append(
            Operation(
                tool=tool,
                path=path,
                path_params=tuple(p["name"] for p in params if p["in"] == "path"),
                query_params=tuple(p["name"] for p in params if p["in"] == "query"),
                description=op.get("description") or UNDOCUMENTED.get(tool) or op["summary"],
                input_schema={
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                },
            )
        )
    return found


def argument_schema(parameter: Mapping[str, Any]) -> dict[str, Any]:
    schema = {k: v for k, v in parameter["schema"].items() if k != "title"}
    description = parameter.get("description") or PATH_ARGUMENTS.get(parameter["name"])
    if description:
        schema["description"] = description
    return schema


async def call(
    client: httpx.AsyncClient, op: Operation, arguments: Mapping[str, Any]
) -> CallToolResult:
    """One tool call: the endpoint's JSON as structured content, or its refusal as an error.

    Bounds and types are the endpoint's to check (its 422 says which argument is wrong);
    only what cannot make a URL is refused here.
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
    path = expand(op.path, {p: arguments[p] for p in op.path_params})
    try:
        answer = await get_json(client, path, {q: arguments.get(q) for q in op.query_params})
    except QueryError as exc:
        return failure(exc.message)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(answer, ensure_ascii=False))],
        structured_content=answer,
    )


def failure(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def create_server(client: httpx.AsyncClient, ops: Sequence[Operation]) -> Server[Any]:
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
        return await call(client, op, params.arguments or {})

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

    def __init__(self, manager: StreamableHTTPSessionManager, client: httpx.AsyncClient) -> None:
        self._manager = manager
        self._client = client

    @contextlib.asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with self._client, self._manager.run():
            yield


def mount_mcp(api: FastAPI, *, path: str = "/mcp") -> McpEndpoint:
    """Serve the tools at ``path`` on ``api`` itself, calling it in-process.

    Stateless, JSON answers: every MCP request stands alone, so any replica answers it,
    and no session or open stream outlives the request that made it. The Host and Origin
    headers are checked by the app, for /mcp as for every route (`create_api`'s
    ``hosts``, query/host_check.py): one rule, so the SDK's own check is off, and the
    tools call the API under a Host that rule accepts.
    """
    rule: HostRule | None = getattr(api.state, "host_rule", None)
    own = rule.own_name if rule is not None else "gazetteer.internal"
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=api), base_url=f"http://{own}", timeout=60
    )
    manager = StreamableHTTPSessionManager(
        app=create_server(client, operations(api.openapi())),
        json_response=True,
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    api.router.routes.append(Route(path, StreamableHTTPASGIApp(manager), include_in_schema=False))
    return McpEndpoint(manager, client)


async def serve_stdio(url: str) -> None:
    """The tools over stdin/stdout, calling the query service at ``url``.

    The tools come from this installation's own API document, so the server starts
    and lists them even before the service is up (a call then says it is unreachable).
    """
    openapi = create_api(ReadModel(), ready=lambda: False).openapi()
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        server = create_server(client, operations(openapi))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
