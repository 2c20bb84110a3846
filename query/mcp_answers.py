"""Where an MCP tool's answer comes from: the service in this process, or over HTTP.

`InProcess` (the tools mounted in the query service, query/mcp_http.py) calls the
`QueryService` method of the tool's name, its arguments checked by the route's own
declarations and admitted by the app's compute gate as the GET would be; `OverHttp` (the
stdio server, a process of its own) makes the GET. Both answer the endpoint's JSON or
raise a `QueryError` with the service's message and status. This module holds the light
half, httpx only: the stdio server imports no web framework to answer ``initialize``
(issue 20).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import httpx

from query.mcp_operations import Operation
from query.service_client import expand, get_json, post_json


class Answers(Protocol):
    """Where a tool's answer comes from: its JSON, or a `QueryError` saying why not."""

    async def __call__(self, op: Operation, arguments: Mapping[str, Any]) -> Any: ...


class OverHttp:
    """The request to a query service in another process (the stdio server's way): the
    GET, or the POST of the body's arguments (those given) for ``impact``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def __call__(self, op: Operation, arguments: Mapping[str, Any]) -> Any:
        path = expand(op.path, {p: arguments[p] for p in op.path_params})
        if op.method == "POST":
            body = {b: arguments[b] for b in op.body_params if arguments.get(b) is not None}
            return await post_json(self._client, path, body)
        return await get_json(self._client, path, {q: arguments.get(q) for q in op.query_params})
