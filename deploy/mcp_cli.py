"""``gazetteer mcp``: the query tools as an MCP server over stdio, for agents that spawn
their tools; each call is a GET to the query service at ``--url``."""

from __future__ import annotations

import argparse
import asyncio

from deploy.settings import Settings
from query.mcp_tools import serve_stdio


def main(args: argparse.Namespace, settings: Settings) -> int:
    asyncio.run(serve_stdio(args.url))
    return 0
