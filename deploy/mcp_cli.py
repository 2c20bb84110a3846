"""``gazetteer mcp``: the query tools as an MCP server over stdio, for agents that spawn
their tools; each call is a GET to the query service at ``--url``, with the bearer
token of ``--token`` or ``GAZETTEER_TOKEN`` when one is given (issue 19)."""

from __future__ import annotations

import argparse
import asyncio

from deploy.settings import Settings
from query.mcp_tools import serve_stdio


def main(args: argparse.Namespace, settings: Settings) -> int:
    token = args.token or (settings.token.get_secret_value() if settings.token else None)
    asyncio.run(serve_stdio(args.url, token))
    return 0
