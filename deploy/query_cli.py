"""The verbs that ask a running query service over HTTP and print its answer: ``search``
and ``context`` (their arguments: deploy/cli.py; ``mcp``: deploy/mcp_cli.py). They need
httpx and nothing else of ours: no settings, no logging set-up (issue 20: a CLI query
in under 0.5 s)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import httpx

from query.service_client import QueryError, expand, get_json_now


def _ask(url: str, path: str, params: dict[str, object]) -> Any:
    with httpx.Client(base_url=url, timeout=60) as client:
        return get_json_now(client, path, params)


def _refused(verb: str, error: QueryError) -> int:
    """Exit 2 when the service is unreachable or refuses the request (4xx), else 1."""
    hint = "; is `gazetteer up` running there? (see --url)" if error.status is None else ""
    print(f"gazetteer {verb}: {error.message}{hint}", file=sys.stderr)
    return 2 if error.status is None or error.status < 500 else 1


def search(args: argparse.Namespace) -> int:
    path = expand("/repositories/{repo}/search", {"repo": args.repo})
    try:
        page = _ask(args.url, path, {"q": args.question, "limit": args.limit})
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
        pack = _ask(args.url, path, about)
    except QueryError as exc:
        return _refused("context", exc)
    print(pack["text"])
    print(
        f"# {pack['tokens']} of {pack['budget']} tokens; confidence {pack['confidence']};"
        f" index {pack['freshness']['status']}",
        file=sys.stderr,
    )
    return 0
