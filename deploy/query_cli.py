"""The verbs that ask a running query service over HTTP: ``search``, ``context``, and
``mcp`` (the query tools over stdio, served from deploy/cli.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import httpx

from query.service_client import QueryError, expand, get_json

QUERY_URL = "http://127.0.0.1:8765"


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The verbs that ask a running query service (``up`` or ``serve``) over HTTP."""
    url = {"default": QUERY_URL, "help": f"the query service (default {QUERY_URL})"}
    mcp = sub.add_parser("mcp", help="serve the query tools to an agent over MCP (stdio)")
    mcp.add_argument("--url", **url)
    search = sub.add_parser("search", help="rank a repository's files for a question")
    search.add_argument("repo")
    search.add_argument("question")
    search.add_argument("--limit", type=int, default=10, help="files to list (default 10)")
    search.add_argument("--url", **url)
    context = sub.add_parser("context", help="print a context pack: the code to read, in budget")
    context.add_argument("repo")
    about = context.add_mutually_exclusive_group(required=True)
    about.add_argument("--q", help="a question or an issue's text")
    about.add_argument("--symbol", help="a symbol name: 'Session.send'")
    about.add_argument("--path", help="a file's path in the repository")
    context.add_argument("--budget", type=int, default=8000, help="tokens (default 8000)")
    context.add_argument("--url", **url)


async def _ask(url: str, path: str, params: dict[str, object]) -> Any:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        return await get_json(client, path, params)


def _refused(verb: str, error: QueryError) -> int:
    """Exit 2 when the service is unreachable or refuses the request (4xx), else 1."""
    hint = "; is `gazetteer up` running there? (see --url)" if error.status is None else ""
    print(f"gazetteer {verb}: {error.message}{hint}", file=sys.stderr)
    return 2 if error.status is None or error.status < 500 else 1


def search(args: argparse.Namespace) -> int:
    path = expand("/repositories/{repo}/search", {"repo": args.repo})
    try:
        page = asyncio.run(_ask(args.url, path, {"q": args.question, "limit": args.limit}))
    except QueryError as exc:
        return _refused("search", exc)
    for hit in page["items"]:
        signals = " ".join(f"{k}={v:.3g}" for k, v in hit["signals"].items() if v)
        print(f"{hit['path']}:{hit['read']}  {hit['score']:.4f}  {signals}")
    print(
        f"# {len(page['items'])} of {page['total']} files;"
        f" retrievers: {', '.join(page['retrievers'])}; index {page['freshness']['status']}",
        file=sys.stderr,
    )
    return 0


def context(args: argparse.Namespace) -> int:
    path = expand("/repositories/{repo}/context", {"repo": args.repo})
    about = {"q": args.q, "symbol": args.symbol, "path": args.path, "budget": args.budget}
    try:
        pack = asyncio.run(_ask(args.url, path, about))
    except QueryError as exc:
        return _refused("context", exc)
    print(pack["text"])
    print(
        f"# {pack['tokens']} of {pack['budget']} tokens; confidence {pack['confidence']};"
        f" index {pack['freshness']['status']}",
        file=sys.stderr,
    )
    return 0
