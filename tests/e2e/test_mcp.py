"""The query tools over MCP as an agent uses them: streamable HTTP at /mcp, and stdio."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult

from query.api import create_api
from query.mcp_tools import TOOLS
from query.read_model import ReadModel
from tests.e2e.query_service import indexed_model, query_service

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "resolve_redirects loops forever"


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with query_service(indexed_model()) as served:
        yield served


def http(url: str, path: str, **params: Any) -> Any:
    response = httpx.get(url + path, params=params, timeout=10)
    response.raise_for_status()
    return response.json()


def post(url: str, path: str, body: dict[str, Any]) -> Any:
    response = httpx.post(url + path, json=body, timeout=10)
    response.raise_for_status()
    return response.json()


def error_text(result: CallToolResult) -> str:
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)


def test_every_get_operation_of_the_api_is_a_tool() -> None:
    openapi = create_api(ReadModel(), ready=lambda: True).openapi()
    operations = {p for p, item in openapi["paths"].items() if "get" in item}
    posts = {p for p, item in openapi["paths"].items() if "post" in item}
    # impact is the one POST (a diff does not fit a query string), and a tool too.
    assert (operations | posts, posts) == (set(TOOLS.values()), {"/repositories/{repo}/impact"})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_over_streamable_http_answer_what_the_api_answers(url: str, mode: str) -> None:
    async with Client(f"{url}/mcp", mode=mode) as client:  # type: ignore[arg-type]
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == set(TOOLS)
        search = tools["search"]
        assert search.description == "Files ranked for a question, with the lines to read first."
        assert search.input_schema["required"] == ["repo", "q"]
        limit = search.input_schema["properties"]["limit"]
        assert (limit["default"], limit["minimum"], limit["maximum"]) == (10, 1, 100)
        assert search.annotations is not None and search.annotations.read_only_hint

        found = await client.call_tool("search", {"repo": "app-1", "q": QUESTION, "limit": 5})
        assert not found.is_error
        assert found.structured_content == http(
            url, "/repositories/app-1/search", q=QUESTION, limit=5
        )
        assert found.structured_content["items"][0]["path"] == "app/sessions.py"

        pack = await client.call_tool(
            "context", {"repo": "app-1", "symbol": "Session.send", "budget": 200}
        )
        assert pack.structured_content == http(
            url, "/repositories/app-1/context", symbol="Session.send", budget=200
        )
        detail = await client.call_tool("file_detail", {"repo": "app-1", "path": "app/models.py"})
        assert detail.structured_content == http(url, "/repositories/app-1/files/app/models.py")


async def test_refusals_become_tool_errors_with_the_service_message(url: str) -> None:
    async with Client(f"{url}/mcp") as client:
        unknown = await client.call_tool("search", {"repo": "nope", "q": "x"})
        assert "unknown repository 'nope'" in error_text(unknown)
        assert "HTTP 404" in error_text(unknown)
        unclustered = await client.call_tool("hubs", {"repo": "lib-2"})
        assert "no neighborhoods for 'lib-2' yet" in error_text(unclustered)
        too_many = await client.call_tool("search", {"repo": "app-1", "q": "x", "limit": 1000})
        assert "limit:" in error_text(too_many) and "HTTP 422" in error_text(too_many)
        nothing = await client.call_tool("context", {"repo": "app-1"})
        assert "give exactly one of q, symbol, path" in error_text(nothing)
        typo = await client.call_tool("search", {"repo": "app-1", "query": "x"})
        assert "query: unexpected argument" in error_text(typo)


def test_mcp_refuses_a_foreign_host_on_loopback(url: str) -> None:
    response = httpx.post(
        f"{url}/mcp",
        headers={"Host": "evil.example", "Content-Type": "application/json"},
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
    assert response.status_code in (403, 421)


def stdio(url: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "deploy.cli", "mcp", "--url", url], cwd=str(ROOT)
    )


async def test_gazetteer_mcp_serves_the_tools_over_stdio(url: str) -> None:
    async with Client(stdio(url)) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOLS)
        found = await client.call_tool("search", {"repo": "app-1", "q": QUESTION})
        assert found.structured_content == http(url, "/repositories/app-1/search", q=QUESTION)
        missing = await client.call_tool("neighborhood", {"repo": "app-1", "nid": "n-none"})
        assert "no neighborhood 'n-none'" in error_text(missing)
        callers = await client.call_tool(
            "callers", {"repo": "app-1", "symbol": "send", "path": "app/sessions.py"}
        )
        assert callers.structured_content is not None
        assert [  # the call site: test_send's call, line 4
            (e["other"]["id"], e["site_path"], e["site_line"], e["line_start"])
            for e in callers.structured_content["items"]
        ] == [("sym:tests/test_sessions.py:test_send", "tests/test_sessions.py", 4, 3)]
        # The POST tool: its arguments are the body the stdio server posts.
        body = {"symbols": ["Session.send"], "depth": 1}
        impact = await client.call_tool("impact", {"repo": "app-1", **body})
        assert impact.structured_content == post(url, "/repositories/app-1/impact", body)
        bad = await client.call_tool("impact", {"repo": "app-1", "diff": "@@ -1 +1 @@"})
        assert error_text(bad) == (
            "malformed diff: line 1: a hunk before any '--- a/… +++ b/…' header (HTTP 400)"
        )


async def test_gazetteer_mcp_starts_without_the_service_and_says_it_is_unreachable() -> None:
    async with Client(stdio("http://127.0.0.1:9")) as client:
        assert "repositories" in {t.name for t in (await client.list_tools()).tools}
        down = await client.call_tool("repositories", {})
        assert "the query service at http://127.0.0.1:9 did not answer" in error_text(down)
