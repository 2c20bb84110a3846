"""``/docs`` and ``/redoc`` work without Internet access: every asset they load is served
by the service itself (issue 20; FastAPI's defaults load them from a CDN)."""

from __future__ import annotations

import re

import httpx
import pytest

from query.api import create_api
from query.read_model import ReadModel

REFERENCE = re.compile(r"""(?:src|href)="([^"]+)"|url: '([^']+)'|spec-url="([^"]+)\"""")


@pytest.fixture
async def client() -> httpx.AsyncClient:
    api = create_api(ReadModel(), ready=lambda: True)
    transport = httpx.ASGITransport(app=api)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        (
            "/docs",
            [
                "/docs/assets/swagger-ui.css",
                "/docs/assets/favicon.png",
                "/docs/assets/swagger-ui-bundle.js",
                "/openapi.json",
            ],
        ),
        (
            "/redoc",
            ["/docs/assets/favicon.png", "/openapi.json", "/docs/assets/redoc.standalone.js"],
        ),
    ],
)
async def test_a_docs_page_loads_only_what_the_service_serves(
    client: httpx.AsyncClient, page: str, expected: list[str]
) -> None:
    async with client:
        html = await client.get(page)
        assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
        assert "://" not in html.text  # no CDN, no fonts from elsewhere
        found = [next(g for g in m.groups() if g) for m in REFERENCE.finditer(html.text)]
        assert found == expected
        for url in found:
            asset = await client.get(url)
            assert asset.status_code == 200, url
            assert len(asset.content) > 100, url


async def test_the_assets_have_their_media_types_and_unknown_ones_are_404(
    client: httpx.AsyncClient,
) -> None:
    async with client:
        js = await client.get("/docs/assets/swagger-ui-bundle.js")
        css = await client.get("/docs/assets/swagger-ui.css")
        missing = await client.get("/docs/assets/nope.js")
        oauth = await client.get("/docs/oauth2-redirect")
        schema = (await client.get("/openapi.json")).json()
    assert js.headers["content-type"].startswith("text/javascript")
    assert b"SwaggerUIBundle" in js.content
    assert css.headers["content-type"].startswith("text/css")
    assert missing.status_code == 404
    assert oauth.status_code == 200
    assert not any(path.startswith(("/docs", "/redoc")) for path in schema["paths"])
