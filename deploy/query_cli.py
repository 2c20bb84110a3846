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


def ask(args: argparse.Namespace, path: str, params: dict[str, object]) -> Any:
    """GET ``path`` of ``--url`` with ``--token``: the answer, or `QueryError`."""
    with httpx.Client(base_url=args.url, timeout=60, headers=bearer(args.token)) as client:
        return get_json_now(client, path, params)


def bearer(token: str | None) -> dict[str, str]:
    """The header of ``--token`` (issue 19), none without one."""
    return {"Authorization": f"Bearer {token}"} if token else {}


def refused(verb: str, error: QueryError) -> int:
    """Exit 2 when the service is unreachable or refuses the request (4xx), else 1."""
    hint = "; is `gazetteer up` running there? (see --url)" if error.status is None else ""
    print(f"gazetteer {verb}: {error.message}{hint}", file=sys.stderr)
    return 2 if error.status is None or error.status < 500 else 1


def search(args: argparse.Namespace) -> int:
    path = expand("/repositories/{repo}/search", {"repo": args.repo})
    try:
        page = ask(args, path, {"q": args.question, "limit": args.limit})
    except QueryError as exc:
        return refused("search", exc)
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
    about = {
        "q": args.q,
        "symbol": args.symbol,
        "path": args.path,
        "budget": args.budget,
        "seeds": args.seeds if args.q is not None else None,
    }
    try:
        pack = ask(args, path, about)
    except QueryError as exc:
        return refused("context", exc)
    print(pack["text"])
    print(
        f"# {pack['tokens']} of {pack['budget']} tokens; confidence {pack['confidence']};"
        f" index {pack['freshness']['status']}",
        file=sys.stderr,
    )
    return 0


# Navigation (issue 20): one line per item, `path:Lstart-end  name  ...`, and a footer.


def _where(node: dict[str, Any]) -> str:
    lines = f":L{node['line_start']}-{node['line_end']}" if node["line_start"] else ""
    return f"{node['path'] or node['id']}{lines}"


def navigate(verb: str, args: argparse.Namespace, route: str, params: dict[str, object]) -> Any:
    """A repository's ``route``: the answer, or None once the refusal is printed."""
    path = expand(f"/repositories/{{repo}}/{route}", {"repo": args.repo})
    try:
        return ask(args, path, params)
    except QueryError as exc:
        refused(verb, exc)
        return None


def _footer(page: dict[str, Any]) -> None:
    more = f"; next --offset {page['next_offset']}" if page.get("next_offset") else ""
    print(
        f"# {len(page['items'])} of {page['total']}{more}; index {page['freshness']['status']}",
        file=sys.stderr,
    )


def definition(args: argparse.Namespace) -> int:
    params = {"name": args.name, "path": args.path, "offset": args.offset, "limit": args.limit}
    page = navigate("definition", args, "definition", params)
    if page is None:
        return 2
    for d in page["items"]:
        print(f"{_where(d)}  {d['qualname'] or d['name']}  {d['kind']}  {d['match']}")
    _footer(page)
    return 0


def edges(args: argparse.Namespace) -> int:
    """``references``, ``callers`` and ``callees``: the verb is the route."""
    params = {"symbol": args.symbol, "path": args.path, "offset": args.offset, "limit": args.limit}
    page = navigate(args.command, args, args.command, params)
    if page is None:
        return 2
    print(f"# {args.command} of {_where(page['node'])} {page['node']['name']}", file=sys.stderr)
    for e in page["items"]:
        other = e["other"]
        site = f"  at {e['site_path']}:{e['site_line']}" if e["site_line"] else ""
        print(
            f"{_where(other)}  {other['name']}  {e['kind']} {e['confidence']}  "
            f"{e['weight']:g}{site}"
        )
    _footer(page)
    return 0


def path(args: argparse.Namespace) -> int:
    params = {"source": args.source, "target": args.target, "max_hops": args.max_hops}
    answer = navigate("path", args, "path", params)
    if answer is None:
        return 2
    if not answer["found"]:
        print(f"no path within {answer['max_hops']} hops", file=sys.stderr)
        return 1
    nodes = answer["nodes"]
    print(f"{_where(nodes[0])}  {nodes[0]['name']}")
    for hop, node in zip(answer["hops"], nodes[1:], strict=True):
        arrow = "->" if hop["forward"] else "<-"
        print(f"  {arrow} {hop['kind']} {hop['confidence']}  {_where(node)}  {node['name']}")
    print(f"# {len(answer['hops'])} hops; index {answer['freshness']['status']}", file=sys.stderr)
    return 0


def neighbors(args: argparse.Namespace) -> int:
    params = {
        "node": args.node,
        "path": args.path,
        "order": args.order,
        "depth": args.depth,
        "direction": args.direction,
        "skip_hubs": not args.through_hubs,
        "offset": args.offset,
        "limit": args.limit,
    }
    page = navigate("neighbors", args, "neighbors", params)
    if page is None:
        return 2
    for n in page["items"]:
        edge = f"  {n['edge_kind']} {n['confidence']}" if n["via"] else ""
        hub = "  hub" if n["hub"] else ""
        print(f"{'  ' * n['depth']}{_where(n)}  {n['name']}{edge}{hub}")
    _footer(page)
    return 0
