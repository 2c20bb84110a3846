"""The dashboard's routes: the page, its assets, its data, its live updates.

None of them is in the OpenAPI document: they are for a browser, not operations for
agents (every operation in the document is an MCP tool). The assets ship inside the
installed packages (plotly.js in the ``plotly`` wheel, the page beside this module),
so the page needs no network beyond the service.
"""

from __future__ import annotations

import asyncio
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import FileResponse, Response, StreamingResponse

from query.dashboard.live import model_events
from query.dashboard.payload import DashboardData
from query.service import QueryService

STREAM_LIFETIME_S = 10.0
POLL_S = 0.5

ASSETS: dict[str, tuple[str, str, str, str]] = {
    # name: (package, path in it, media type, cache-control)
    "plotly.min.js": (
        "plotly",
        "package_data/plotly.min.js",
        "text/javascript",
        "public, max-age=86400",
    ),
    "dashboard.js": ("query.dashboard", "static/dashboard.js", "text/javascript", "no-cache"),
    "dashboard.css": ("query.dashboard", "static/dashboard.css", "text/css", "no-cache"),
}


def packaged(package: str, path: str) -> Traversable:
    return files(package).joinpath(path)


def file_response(resource: Traversable, media_type: str, cache: str) -> Response:
    headers = {"Cache-Control": cache}
    if isinstance(resource, Path):
        return FileResponse(resource, media_type=media_type, headers=headers)
    return Response(resource.read_bytes(), media_type=media_type, headers=headers)


def stopping_of(request: Request) -> asyncio.Event | None:
    """The service's stop event, when the composition root put it on ``app.state``."""
    event = getattr(request.app.state, "stopping", None)
    return event if isinstance(event, asyncio.Event) else None


def create_dashboard_routes(
    service: QueryService,
    *,
    poll_s: float = POLL_S,
    stream_lifetime_s: float = STREAM_LIFETIME_S,
) -> APIRouter:
    router = APIRouter(include_in_schema=False)

    @router.get("/dashboard")
    async def page() -> Response:
        """Charts of churn, neighborhoods, hubs and freshness, updated live."""
        return file_response(
            packaged("query.dashboard", "static/index.html"), "text/html", "no-cache"
        )

    @router.get("/dashboard/assets/{name}")
    async def asset(name: str) -> Response:
        known = ASSETS.get(name)
        if known is None:
            raise HTTPException(404, f"no dashboard asset {name!r}")
        package, path, media_type, cache = known
        return file_response(packaged(package, path), media_type, cache)

    @router.get("/dashboard/data/{repo}", response_model=DashboardData)
    async def data(repo: str) -> DashboardData:
        """One repository's map, hubs, sizes and freshness, for the page."""
        return service.dashboard(repo)

    @router.get("/dashboard/events")
    async def events(request: Request) -> StreamingResponse:
        """Server-Sent Events: ``model`` whenever the read model changes."""
        stream = model_events(
            service.model,
            poll_s=poll_s,
            lifetime_s=stream_lifetime_s,
            stopping=stopping_of(request),
            readable=service.readable,
        )
        return StreamingResponse(
            stream,
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return router
