"""The README's MCP client configurations, started exactly as written (the address
swapped for the test service's): each serves every tool."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from query.mcp_tools import TOOLS
from tests.e2e.query_service import indexed_model, query_service

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = "http://127.0.0.1:8765"


def configurations() -> list[dict[str, Any]]:
    """The JSON blocks of the README's "Use it from your agent" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use it from your agent", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)\n```", section, re.S)
    return [json.loads(b)["mcpServers"]["gazetteer"] for b in blocks]


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with query_service(indexed_model()) as served:
        yield served


def test_the_readme_gives_a_stdio_and_an_http_configuration() -> None:
    kinds = [c.get("type", "stdio") for c in configurations()]
    assert kinds == ["stdio", "http"]


async def test_the_stdio_configuration_serves_every_tool(url: str) -> None:
    (config,) = [c for c in configurations() if "command" in c]
    command = Path(sys.executable).parent / config["command"]  # the installed console script
    assert command.is_file(), command
    args = [url if a == DEFAULT else a for a in config["args"]]
    assert args != config["args"]  # the README's address was there to swap
    server = StdioServerParameters(command=str(command), args=args)
    async with Client(server) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOLS)
        found = await client.call_tool("search", {"repo": "app-1", "q": "send a request"})
        assert not found.is_error and found.structured_content is not None


async def test_the_http_configuration_serves_every_tool(url: str) -> None:
    (config,) = [c for c in configurations() if c.get("type") == "http"]
    assert config["url"].startswith(DEFAULT)
    async with Client(url + config["url"][len(DEFAULT) :]) as client:
        assert {t.name for t in (await client.list_tools()).tools} == set(TOOLS)
