"""The MCP tools mounted in the query service: streamable HTTP at ``/mcp``, each call
answered in process by the app's `QueryService` (`InProcess`) through the app's compute
gate, as the GET it stands for would be (query/mcp_tools.py has the server itself)."""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_type_hints

from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, ValidationError, create_model
from starlette.routing import Route

from query.api import gate_of, http_status, service_of
from query.auth.routes import required_scope
from query.compute_gate import GATED_PREFIXES, ComputeGate, repository_of
from query.mcp_operations import Operation, operations
from query.mcp_tools import create_server
from query.metrics import QUERY_SECONDS
from query.service import QueryRefused, QueryService
from query.service.access import reader
from query.service_client import QueryError, field_errors


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """What the in-process call of one tool needs from its route: the arguments model
    (the route's own parameter declarations) and its template (the metrics' label)."""

    arguments: type[BaseModel]
    template: str


class InProcess:
    """The tools answered by the app's `QueryService`, through the app's compute gate.

    Arguments are checked as the route checks them (a pydantic model of the route's
    parameters: the same defaults, bounds and messages), the method named as the tool
    runs once the gate admits the GET it stands for (its slots, and the look for unread
    news about the repository), and its time counts under the route's template, as the
    GET's would.
    """

    def __init__(self, service: QueryService, gate: ComputeGate, routes: Mapping[str, ToolRoute]):
        self._service = service
        self._gate = gate
        self._routes = routes

    @classmethod
    def of(cls, api: FastAPI, ops: Sequence[Operation]) -> InProcess:
        """The tools of ``ops`` over an app made by `create_api`."""
        found = {
            (r.path_format, method): r
            for r in iter_route_contexts(api.routes)  # included routers' routes too
            for method in r.methods or ()
        }
        routes = {}
        for op in ops:
            route = found[(op.path, op.method)]
            endpoint = route.endpoint
            if endpoint is None or not callable(getattr(service_of(api), op.tool, None)):
                raise LookupError(f"the query service has no method for the tool {op.tool!r}")
            routes[op.tool] = ToolRoute(arguments_model(op.tool, endpoint), str(route.path))
        return cls(service_of(api), gate_of(api), routes)

    async def __call__(self, op: Operation, arguments: Mapping[str, Any]) -> Any:
        route = self._routes[op.tool]
        given = {k: v for k, v in arguments.items() if v is not None}  # None: not given
        try:
            values = dict(route.arguments.model_validate(given))
        except ValidationError as exc:
            raise QueryError(f"{field_errors(exc.errors())} (HTTP 422)", 422) from exc
        method = getattr(self._service, op.tool)
        # The request's path as ASGI gives it (decoded): what the gate decides on.
        path = op.path.format_map({p: values[p] for p in op.path_params})
        need = required_scope(path)  # /mcp asked `read`; a tool may ask more (issue 19)
        if need is not None and not reader().may(need):
            raise QueryError(f"this token lacks the {need!r} scope (HTTP 403)", 403)
        started = time.perf_counter()
        try:
            if path.startswith(GATED_PREFIXES):
                async with self._gate.admit(repository_of(path)):
                    answer: BaseModel = method(**values)
            else:
                answer = method(**values)
        except QueryRefused as exc:
            status = http_status(exc)
            raise QueryError(f"{exc.message} (HTTP {status})", status) from exc
        finally:
            QUERY_SECONDS.labels(route.template).observe(time.perf_counter() - started)
        return answer.model_dump(mode="json")


def arguments_model(tool: str, endpoint: Callable[..., Any]) -> type[BaseModel]:
    """A model of a route endpoint's parameters, declared as FastAPI reads them (a
    ``Query`` or ``Path`` default is a pydantic ``FieldInfo``), refusing any other; a
    JSON body's model (``impact``'s) gives its fields, as the tool's arguments."""
    hints = get_type_hints(endpoint)
    fields: dict[str, Any] = {}
    for name, p in inspect.signature(endpoint).parameters.items():
        hint = hints[name]
        if isinstance(hint, type) and issubclass(hint, BaseModel):
            fields.update((f, (info.annotation, info)) for f, info in hint.model_fields.items())
        else:
            fields[name] = (hint, ... if p.default is inspect.Parameter.empty else p.default)
    config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)  # a query string's way
    return create_model(f"{tool}_arguments", __config__=config, **fields)


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
