"""The API's documentation pages, ``/docs`` (Swagger UI) and ``/redoc``, with their assets
served by this service.

FastAPI's own pages load Swagger UI and ReDoc from a CDN, so ``/docs`` was blank on a
machine without Internet access (issue 20). The assets ship in the ``fastapi-offline``
wheel (Swagger UI 5, which renders the OpenAPI 3.1 documents FastAPI writes; ReDoc 2;
the spec-first ``swagger-ui-bundle`` ships Swagger UI 4, which cannot); the pages are
FastAPI's own (`get_swagger_ui_html`, its documented recipe for self-hosted assets), so
they look and behave as before. Like the dashboard's, none of these routes is in the
OpenAPI document.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse, Response

from query.dashboard.routes import file_response, packaged

ASSETS_PATH = "/docs/assets"
ASSETS: dict[str, tuple[str, str, str]] = {
    # name: (path in the fastapi_offline package, media type, cache-control)
    "swagger-ui-bundle.js": ("static/swagger-ui-bundle.js", "text/javascript", "max-age=86400"),
    "swagger-ui.css": ("static/swagger-ui.css", "text/css", "max-age=86400"),
    "redoc.standalone.js": ("static/redoc.standalone.js", "text/javascript", "max-age=86400"),
    "favicon.png": ("static/favicon.png", "image/png", "max-age=86400"),
}


def create_docs_routes(title: str, openapi_url: str = "/openapi.json") -> APIRouter:
    """``/docs``, its OAuth2 redirect page, ``/redoc`` and their assets (create the app
    with ``docs_url=None, redoc_url=None``, so that these replace FastAPI's)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    async def swagger(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - Swagger UI",
            oauth2_redirect_url=f"{root}/docs/oauth2-redirect",
            swagger_js_url=f"{root}{ASSETS_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
        )

    @router.get("/docs/oauth2-redirect")
    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @router.get("/redoc")
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{openapi_url}",
            title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_PATH}/favicon.png",
            with_google_fonts=False,
        )

    @router.get(ASSETS_PATH + "/{name}")
    async def asset(name: str) -> Response:
        known = ASSETS.get(name)
        if known is None:
            raise HTTPException(404, f"no documentation asset {name!r}")
        path, media_type, cache = known
        return file_response(packaged("fastapi_offline", path), media_type, f"public, {cache}")

    return router
