"""The ``gazetteer`` command: ``up`` runs everything; the other verbs run one part each."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import gc
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import structlog
from aiokafka.errors import KafkaConnectionError

from deploy import eval_cli, query_cli, ranking_cli
from deploy.dense_setup import DenseSetupError, check_dense_settings
from deploy.embedded_broker import EmbeddedBroker
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
    eval_cli.add_parser(sub)
    ranking_cli.add_parser(sub)
    query_cli.add_parser(sub)
    return parser


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
            _exit_now(130)
        log.info("stop_requested")
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, request_stop)


def _exit_now(code: int) -> None:
    """Exit without waiting for the parts. SystemExit would not do: asyncio.run then waits
    for every cancelled task, and a part stuck on a broker that is gone (a producer sending
    its last status) never finishes. The exit hooks still run: they stop an embedded broker."""
    log.warning("stop_forced")
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    gc.set_threshold(*GC_THRESHOLDS)
    needs_broker = args.command in ("worker", "watch", "serve")
    if needs_broker and settings.bootstrap is None:
        print(f"gazetteer {args.command}: needs --broker kafka://host:port", file=sys.stderr)
        return 2
    if args.command in ("up", "worker", "serve"):
        try:
            check_dense_settings(settings)
        except DenseSetupError as exc:
            print(f"gazetteer {args.command}: {exc}", file=sys.stderr)
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
            return eval_cli.run(args)
        elif args.command == "mcp":
            asyncio.run(serve_stdio(args.url))
        elif args.command == "search":
            return query_cli.search(args)
        elif args.command == "context":
            return query_cli.context(args)
        elif args.command == "ranking":
            return ranking_cli.run(args, settings)
    except KeyboardInterrupt:
        return 130
    except KafkaConnectionError as exc:
        print(f"gazetteer {args.command}: cannot reach the broker ({exc})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
