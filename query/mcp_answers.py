"""Where an MCP tool's answer comes from: the service in this process, or over HTTP.

`InProcess` (the tools mounted in the query service, query/mcp_http.py) calls the
`QueryService` method of the tool's name, its arguments checked by the route's own
declarations and admitted by the app's compute gate as the GET would be; `OverHttp` (the
stdio server, a process of its own) makes the GET. Both answer the endpoint's JSON or
raise a `QueryError` with the service's message and status. This module holds the light
half, httpx only, and that at the first call: the stdio server imports no web
framework nor HTTP client to answer ``initialize`` (issue 20).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from query.mcp_operations import Operation
from query.service_client import expand, get_json, post_json

if TYPE_CHECKING:
    import httpx


class Answers(Protocol):
    """Where a tool's answer comes from: its JSON, or a `QueryError` saying why not."""

    async def __call__(self, op: Operation, arguments: Mapping[str, Any]) -> Any: ...


class OverHttp:
    """The request to a query service in another process (the stdio server's way): the
    GET, or the POST of the body's arguments (those given) for ``impact``."""

    def __init__(
        self,
        client: httpx.AsyncClient | str,
        *,
        token: str | None = None,
        headers: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        """``client``, or the URL of one made at the first call: httpx and its client
        cost 0.1 s of CPU that answering ``initialize`` does not need (issue 20).
        ``token``: sent as ``Authorization: Bearer`` by the client made (issue 19).
        ``headers``: those of each call, asked at the call (the router's tools send the
        caller's own: query/router_mcp.py)."""
        self._client: httpx.AsyncClient | None = None if isinstance(client, str) else client
        self._url = client if isinstance(client, str) else ""
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._per_call = headers

    async def __call__(self, op: Operation, arguments: Mapping[str, Any]) -> Any:
        client = self._connected()
        path = expand(op.path, {p: arguments[p] for p in op.path_params})
        headers = self._per_call() if self._per_call is not None else None
        if op.method == "POST":
            body = {b: arguments[b] for b in op.body_params if arguments.get(b) is not None}
            return await post_json(client, path, body, headers)
        query = {q: arguments.get(q) for q in op.query_params}
        return await get_json(client, path, query, headers)

    async def aclose(self) -> None:
        """Close the client, if one was made."""
        if self._client is not None:
            await self._client.aclose()

    def _connected(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(base_url=self._url, timeout=60, headers=self._headers)
        return self._client
