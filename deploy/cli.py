"""The ``gazetteer`` command: ``up`` runs everything; the other verbs run one part each."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import structlog

from deploy import ranking_cli
from deploy.embedded_broker import EmbeddedBroker
from deploy.eval_localize import run as run_localize
from deploy.eval_tune import run as run_tune
from deploy.logging_setup import configure_logging
from deploy.runtime import (
    Cluster,
    connect,
    report_progress,
    run_query,
    run_sources,
    run_worker,
)
from deploy.settings import Settings
from query.mcp_tools import serve_stdio
from query.read_model import ReadModel
from query.service_client import QueryError, expand, get_json

log = structlog.get_logger("gazetteer")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gazetteer", description=__doc__)
    parser.add_argument("--broker", help="embedded (default) or kafka://host:port")
    parser.add_argument("--log-format", choices=("console", "json"))
    parser.add_argument("--log-level")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="index and follow repositories; serve queries")
    up.add_argument("paths", nargs="+", type=Path)
    up.add_argument("--port", type=int, help="query service port (0: any free port)")
    up.add_argument("--host", help="query service address (default 127.0.0.1)")
    sub.add_parser("worker", help="run one indexing worker (needs --broker)")
    watch = sub.add_parser("watch", help="scan, watch and follow repositories (needs --broker)")
    watch.add_argument("paths", nargs="+", type=Path)
    serve = sub.add_parser("serve", help="run one query service replica (needs --broker)")
    serve.add_argument("--port", type=int)
    serve.add_argument("--host")
    sub.add_parser("broker", help="run the embedded broker alone and print its address")
    evaluate = sub.add_parser("eval", help="measure retrieval on a benchmark")
    tasks = evaluate.add_subparsers(dest="task", required=True)
    localize = tasks.add_parser(
        "localize", help="rank files for real issues; write predictions score.py reads"
    )
    localize.add_argument("--dataset", type=Path, required=True, help="instances, JSON lines")
    localize.add_argument(
        "--repos", type=Path, required=True, help="holds <owner>__<name>__<sha12>/ per instance"
    )
    localize.add_argument("--out", type=Path, required=True, help="predictions, JSON lines")
    localize.add_argument("--limit", type=int, help="only the first N instances")
    localize.add_argument(
        "--embedder", help="add the dense signal: default, hash:256, onnx:..., st:..., openai:..."
    )
    tune = tasks.add_parser(
        "tune", help="fit the ranking weights on the candidates `eval localize` wrote"
    )
    tune.add_argument("--dataset", type=Path, required=True, help="instances with gold_files")
    tune.add_argument(
        "--signals", type=Path, required=True, help="the *.signals.jsonl of `eval localize`"
    )
    tune.add_argument("--out", type=Path, required=True, help="the ranking profile, JSON")
    ranking_cli.add_parser(sub)
    _query_verbs(sub)
    return parser


QUERY_URL = "http://127.0.0.1:8765"


def _query_verbs(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
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


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        key: value
        for key, value in {
            "broker": args.broker,
            "log_format": args.log_format,
            "log_level": args.log_level,
            "port": getattr(args, "port", None),
            "host": getattr(args, "host", None),
        }.items()
        if value is not None
    }
    return Settings(**overrides)  # type: ignore[arg-type]


def _check_paths(paths: Sequence[Path]) -> list[Path]:
    roots = []
    for path in paths:
        resolved = path.expanduser().resolve()
        if not resolved.is_dir():
            raise SystemExit(f"gazetteer: {path} is not a directory")
        roots.append(resolved)
    if len(set(roots)) != len(roots):
        raise SystemExit("gazetteer: a repository is named twice")
    return roots


@contextlib.asynccontextmanager
async def _cluster(settings: Settings) -> AsyncIterator[Cluster]:
    if settings.bootstrap is not None:
        yield await connect(settings, settings.bootstrap)
        return
    async with EmbeddedBroker() as broker:
        yield await connect(settings, broker.bootstrap)


def _stop_on_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()

    def request_stop() -> None:
        if stop.is_set():  # a second Ctrl-C: the user means it
            raise SystemExit(130)
        log.info("stop_requested")
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, request_stop)


async def _supervise(stop: asyncio.Event, parts: Sequence[Awaitable[None]]) -> None:
    """Run the parts until a stop is requested or one of them fails; then stop all."""
    tasks = [asyncio.ensure_future(p) for p in parts]
    stopping = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait([*tasks, stopping], return_when=asyncio.FIRST_COMPLETED)
    failed = [t for t in done if t is not stopping and t.exception() is not None]
    stop.set()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    stopping.cancel()
    for task in failed:
        raise task.exception()  # type: ignore[misc]
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
            log.error("part_failed", error=repr(result))


async def _up(settings: Settings, roots: list[Path]) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with _cluster(settings) as cluster:
        model = ReadModel()
        caught_up = asyncio.Event()

        async def sources() -> None:
            # The read side knows each repository's last indexed commit (with a durable
            # broker): a restart then reconciles with a git diff instead of a full scan.
            await caught_up.wait()
            await run_sources(settings, cluster, roots, stop, since=_indexed_commit(model))

        await _supervise(
            stop,
            [
                run_worker(settings, cluster, stop),
                run_query(
                    settings, cluster, stop, model=model, on_listening=_announce, ready=caught_up
                ),
                sources(),
                report_progress(model, stop),
            ],
        )


def _indexed_commit(model: ReadModel) -> Callable[[str], str | None]:
    def since(repo: str) -> str | None:
        view = model.repos.get(repo)
        return view.state.indexed_commit if view is not None else None

    return since


async def _watch(settings: Settings, roots: list[Path]) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with _cluster(settings) as cluster:
        # Learn the last indexed commit of each repository from the materialized state,
        # so that a restart reconciles with a git diff instead of a full scan.
        model = ReadModel()
        ready = asyncio.Event()

        async def read_state() -> None:
            from query.materializer import Materializer

            materializer = Materializer(
                model,
                cluster.bootstrap,
                cluster.end_offsets,
                topics=settings.topics,
            )
            reading = asyncio.create_task(materializer.run(ready))
            await materializer.ready.wait()
            ready.set()
            await reading

        await read_state()
        await _supervise(
            stop, [run_sources(settings, cluster, roots, stop, since=_indexed_commit(model))]
        )


async def _worker(settings: Settings) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with _cluster(settings) as cluster:
        await _supervise(stop, [run_worker(settings, cluster, stop)])


async def _serve(settings: Settings) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with _cluster(settings) as cluster:
        await _supervise(stop, [run_query(settings, cluster, stop, on_listening=_announce)])


def _announce(url: str) -> None:
    print(f"Gazetteer is serving {url}  (OpenAPI: {url}/docs; Ctrl-C stops)", flush=True)


async def _broker(settings: Settings) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop)
    async with EmbeddedBroker() as broker:
        print(f"kafka://{broker.bootstrap}", flush=True)
        await stop.wait()


GC_THRESHOLDS = (50_000, 20, 100)
"""The graph of a large repository is millions of small objects; with the default
thresholds the collector took a third of a django graph build (1.5 of 5.7 s) and
paused a single sympy edit for 2.3 s (tests/bench/graph_build.py)."""


def _eval(args: argparse.Namespace) -> int:
    if args.task == "tune":
        return _tune(args)
    if not args.dataset.is_file():
        print(f"gazetteer eval localize: no dataset at {args.dataset}", file=sys.stderr)
        return 2
    if not args.repos.is_dir():
        print(f"gazetteer eval localize: no directory {args.repos}", file=sys.stderr)
        return 2
    try:
        done = run_localize(args.dataset, args.repos, args.out, args.limit, args.embedder)
    except ValueError as exc:
        print(f"gazetteer eval localize: {exc}", file=sys.stderr)
        return 2
    print(f"{done} instances localized; predictions in {args.out}")
    return 0 if done else 1


def _tune(args: argparse.Namespace) -> int:
    for given in (args.dataset, args.signals):
        if not given.is_file():
            print(f"gazetteer eval tune: no file {given}", file=sys.stderr)
            return 2
    try:
        found = run_tune(args.dataset, args.signals, args.out)
    except ValueError as exc:
        print(f"gazetteer eval tune: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(found["scores"], indent=1))
    print(f"weights {found['weights']} in {args.out}")
    return 0


async def _ask(url: str, path: str, params: dict[str, object]) -> Any:
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        return await get_json(client, path, params)


def _refused(verb: str, error: QueryError) -> int:
    """Exit 2 when the service is unreachable or refuses the request (4xx), else 1."""
    hint = "; is `gazetteer up` running there? (see --url)" if error.status is None else ""
    print(f"gazetteer {verb}: {error.message}{hint}", file=sys.stderr)
    return 2 if error.status is None or error.status < 500 else 1


def _search(args: argparse.Namespace) -> int:
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


def _context(args: argparse.Namespace) -> int:
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    gc.set_threshold(*GC_THRESHOLDS)
    needs_broker = args.command in ("worker", "watch", "serve")
    if needs_broker and settings.bootstrap is None:
        print(f"gazetteer {args.command}: needs --broker kafka://host:port", file=sys.stderr)
        return 2
    try:
        if args.command == "up":
            asyncio.run(_up(settings, _check_paths(args.paths)))
        elif args.command == "watch":
            asyncio.run(_watch(settings, _check_paths(args.paths)))
        elif args.command == "worker":
            asyncio.run(_worker(settings))
        elif args.command == "serve":
            asyncio.run(_serve(settings))
        elif args.command == "broker":
            asyncio.run(_broker(settings))
        elif args.command == "eval":
            return _eval(args)
        elif args.command == "mcp":
            asyncio.run(serve_stdio(args.url))
        elif args.command == "search":
            return _search(args)
        elif args.command == "context":
            return _context(args)
        elif args.command == "ranking":
            return ranking_cli.run(args, settings)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
