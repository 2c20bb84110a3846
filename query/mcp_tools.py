"""Every query operation as an MCP tool: one product, one code path.

The tools are the HTTP API's operations under the same names, with the arguments,
defaults, bounds and descriptions its OpenAPI document gives them. Mounted in the query
service (``mount_mcp``, query/mcp_http.py), a call is answered by the `QueryService`
method of the tool's name, its arguments checked by the route's own declarations and
admitted by the app's compute gate as the GET would be (`InProcess`); the stdio server
(``serve_stdio``), a process of its own, makes the GET to the running service instead
(`OverHttp`). Either way a tool answers exactly the endpoint's JSON, bounded as the
endpoint bounds it, and a refusal becomes a tool error carrying the service's message
and status.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
import anyio.to_thread
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
)

from query.mcp_answers import Answers, OverHttp
from query.mcp_operations import TOOLS, Operation, operations
from query.service_client import QueryError

__all__ = [
    "TOOLS",
    "Answers",
    "Operation",
    "OverHttp",
    "Tools",
    "call",
    "create_server",
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
    only what cannot make the request is refused here.
    """
    unknown = sorted(set(arguments) - set(op.params))
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
    return CallToolResult(content=readable(op, answer), structured_content=answer)


def readable(op: Operation, answer: Any) -> list[ContentBlock]:
    """What the agent reads of an answer: its JSON; a context pack's text as it is, for
    the agent to read directly (inside JSON, escaped, a 1,500-token pack cost ~2,100),
    then the rest of the answer (confidence, files, freshness) as JSON."""
    if op.tool in PACK_TOOLS and isinstance(answer, dict) and isinstance(answer.get("text"), str):
        rest = {k: v for k, v in answer.items() if k != "text"}
        return [
            TextContent(type="text", text=answer["text"]),
            TextContent(type="text", text=json.dumps(rest, ensure_ascii=False)),
        ]
    return [TextContent(type="text", text=json.dumps(answer, ensure_ascii=False))]


PACK_TOOLS = frozenset({"context", "context_all"})


def failure(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


class Tools:
    """The tools, made when first needed (``make``) and kept: the stdio server reads them
    from this installation's API document, and making it imports the whole query service
    (FastAPI, the search core: about 1.5 s), which ``initialize`` does not need (issue 20:
    an agent's handshake answered within a second). Made in a worker thread, so that the
    server still answers pings and cancellations meanwhile."""

    def __init__(self, make: Callable[[], Sequence[Operation]]) -> None:
        self._make = make
        self._made: tuple[Mapping[str, Operation], ListToolsResult] | None = None
        self._making = anyio.Lock()

    @classmethod
    def of(cls, ops: Sequence[Operation]) -> Tools:
        """Tools already made (the service's own, mounted at /mcp)."""
        tools = cls(lambda: ops)
        tools._made = tools._index(ops)
        return tools

    async def listed(self) -> ListToolsResult:
        return (await self._get())[1]

    async def named(self, name: str) -> Operation | None:
        return (await self._get())[0].get(name)

    async def _get(self) -> tuple[Mapping[str, Operation], ListToolsResult]:
        if self._made is None:
            async with self._making:
                if self._made is None:
                    self._made = self._index(await anyio.to_thread.run_sync(self._make))
        return self._made

    @staticmethod
    def _index(ops: Sequence[Operation]) -> tuple[Mapping[str, Operation], ListToolsResult]:
        return {op.tool: op for op in ops}, ListToolsResult(tools=[op.as_tool() for op in ops])


def create_server(answers: Answers, ops: Sequence[Operation] | Tools) -> Server[Any]:
    """The low-level server: the tool list is data here, not Python signatures."""
    tools = ops if isinstance(ops, Tools) else Tools.of(ops)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        return await tools.listed()

    async def call_tool(
        ctx: ServerRequestContext[Any], params: CallToolRequestParams
    ) -> CallToolResult:
        op = await tools.named(params.name)
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


def api_operations() -> list[Operation]:
    """The tools of this installation's HTTP API, read from its OpenAPI document."""
    # Imported here, not above: the query service's modules (FastAPI, the search core)
    # take about 1.5 s to import, and the stdio server needs them only for the tool list.
    from query.api import create_api
    from query.read_model import ReadModel

    return operations(create_api(ReadModel(), ready=lambda: False).openapi())


async def serve_stdio(url: str, token: str | None = None) -> None:
    """The tools over stdin/stdout, calling the query service at ``url`` (`OverHttp`).

    The tools come from this installation's own API document, so the server starts
    and lists them even before the service is up (a call then says it is unreachable);
    that document is made at the first ``tools/list`` or call, and the HTTP client at
    the first call, not before ``initialize`` is answered (`Tools`, `OverHttp`).
    ``token``: the bearer token every call sends (a service with authentication on).
    """
    answers = OverHttp(url, token=token)  # its HTTP client made at the first call
    try:
        server = create_server(answers, Tools(api_operations))
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await answers.aclose()
