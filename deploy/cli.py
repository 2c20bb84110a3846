"""The ``gazetteer`` command: ``up`` runs everything; the other verbs run one part each."""

from __future__ import annotations

# First, before anything slow: a Ctrl-C while the rest imports (2-4 s) is remembered.
from deploy import ctrl_c  # isort: split

import argparse
import asyncio
import atexit
import contextlib
import functools
import gc
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import structlog
from aiokafka.errors import KafkaConnectionError
from prometheus_client import REGISTRY

from deploy import eval_cli, query_cli, ranking_cli
from deploy.child_process import watch_parent
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
    state_files,
)
from deploy.settings import Settings
from deploy.supervisor import GaveUpError
from deploy.topics_admin import TopicMismatch
from deploy.up import announcement, inherited_socket, run_up
from query.mcp_tools import serve_stdio
from query.metrics import Peer, PeerCollector
from query.read_model import ReadModel
from stores.state_snapshot import SnapshotHeader

log = structlog.get_logger("gazetteer")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gazetteer", description=__doc__)
    parser.add_argument("--broker", help="embedded (default) or kafka://host:port")
    parser.add_argument("--log-format", choices=("console", "json"))
    parser.add_argument("--log-level")
    # Hidden: how `up` starts its parts (deploy/up.py). The pid of the supervisor, which
    # the part outlives by no more than a stop (deploy/child_process.py); and a port on
    # loopback for a part's metrics, which the query part's /metrics shows.
    parser.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--metrics-loopback-port", type=int, help=argparse.SUPPRESS)
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
    # Hidden, for `up`: serve on the socket it bound, log its progress lines, and show
    # the metrics of the other parts (PART=URL).
    serve.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)
    serve.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)
    serve.add_argument("--metrics-peer", action="append", default=[], help=argparse.SUPPRESS)
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
    if getattr(args, "metrics_loopback_port", None) is not None:
        # A part under `up`: its metrics on loopback only; /metrics faces the network.
        overrides.update(metrics_port=args.metrics_loopback_port, host="127.0.0.1")
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


_PARENT_WATCH: set[asyncio.Task[None]] = set()


STOP_DEADLINE_S = 10.0
"""How long a requested stop may take before the process exits without the parts."""


def _stop_on_signals(stop: asyncio.Event, parent_pid: int | None = None) -> None:
    """The first SIGINT/SIGTERM sets ``stop``, a second exits at once. With a
    ``parent_pid`` (a part under `up`), the parent's death sets ``stop`` too."""
    loop = asyncio.get_running_loop()
    if parent_pid is not None:
        watching = loop.create_task(watch_parent(parent_pid, stop), name="parent-watch")
        _PARENT_WATCH.add(watching)
        watching.add_done_callback(_PARENT_WATCH.discard)

    def request_stop() -> None:
        if stop.is_set():  # a second Ctrl-C: the user means it
            _exit_now(130)
        log.info("stop_requested")
        stop.set()
        loop.call_later(STOP_DEADLINE_S, _overdue)

    def _overdue() -> None:
        """A part still stopping after the deadline: say which, and stop anyway (issue
        15: Ctrl-C always stops within seconds; a part that hangs on its way out leaves
        its evidence in this line)."""
        running = sorted(t.get_name() for t in asyncio.all_tasks(loop) if not t.done())
        log.warning("stop_overdue", after_s=STOP_DEADLINE_S, still_running=running[:20])
        _exit_now(0)

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


async def _up(settings: Settings, roots: list[Path]) -> int:
    """The supervisor of `deploy.up`: 0 after a requested stop, 1 if a part kept crashing."""
    stop = asyncio.Event()
    _stop_on_signals(stop)
    if ctrl_c.requested():
        stop.set()
    try:
        await run_up(settings, roots, stop)
    except GaveUpError as error:
        print(f"gazetteer up: {error}", file=sys.stderr)
        return 1
    return 0


Remembered = Callable[[str], SnapshotHeader | None]
"""A repository's state snapshot header as a session found it at start (read once: the
worker writes newer ones only of what the session sends)."""


def _indexed_commit(model: ReadModel, remembered: Remembered) -> Callable[[str], str | None]:
    """The commit each repository was last indexed at: the state folded from the topics,
    else the worker's state snapshot (issue 16: after `up` restarts on an empty embedded
    broker, so that the session reconciles by git diff instead of scanning in full).
    The snapshot is verified whole (checksums) but not decoded, which is the worker's
    part; one that does not verify is rejected here and there alike: both start over."""

    def since(repo: str) -> str | None:
        view = model.repos.get(repo)
        if view is not None and view.state.seq > 0:
            return view.state.indexed_commit
        snapshot = remembered(repo)
        return snapshot.indexed_commit if snapshot is not None else None

    return since


def _known_epoch(model: ReadModel, remembered: Remembered) -> Callable[[str], int]:
    """The largest lease epoch known: the read model's, or the snapshot's lease."""

    def known(repo: str) -> int:
        snapshot = remembered(repo)
        return max(model.known_epoch(repo), snapshot.epoch if snapshot is not None else 0)

    return known


async def _watch(settings: Settings, roots: list[Path], parent_pid: int | None) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop, parent_pid)
    async with _cluster(settings) as cluster:
        # Learn the last indexed commit of each repository from the materialized state,
        # so that a restart reconciles with a git diff instead of a full scan.
        model = ReadModel()
        remembered: Remembered = functools.cache(state_files(settings).peek)
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
            stop,
            [
                run_sources(
                    settings,
                    cluster,
                    roots,
                    stop,
                    since=_indexed_commit(model, remembered),
                    # each session claims one more (issue 15)
                    known_epoch=_known_epoch(model, remembered),
                )
            ],
        )


async def _worker(settings: Settings, parent_pid: int | None) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop, parent_pid)
    async with _cluster(settings) as cluster:
        await _supervise(stop, [run_worker(settings, cluster, stop)])


async def _serve(settings: Settings, args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    _stop_on_signals(stop, args.parent_pid)
    if args.metrics_peer:
        peers = [Peer(*spec.split("=", 1)) for spec in args.metrics_peer]
        REGISTRY.register(PeerCollector(peers))
    async with _cluster(settings) as cluster:
        model = ReadModel()
        sock = inherited_socket(args.listen_fd) if args.listen_fd is not None else None
        query = run_query(
            settings, cluster, stop, model=model, on_listening=_announce, listening=sock
        )
        await _supervise(stop, [query, *([report_progress(model, stop)] if args.progress else [])])


def _announce(url: str) -> None:
    print(announcement(url), flush=True)


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


SERVICES = frozenset({"up", "worker", "watch", "serve", "broker"})
"""The commands that run until stopped: their Ctrl-C is a requested stop (exit 0)."""


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
    if args.command in SERVICES and ctrl_c.requested():
        return 0  # Ctrl-C while importing: nothing was started, nothing to stop
    if args.command not in SERVICES:
        ctrl_c.restore()
    try:
        if args.command == "up":
            return asyncio.run(_up(settings, _check_paths(args.paths)))
        elif args.command == "watch":
            asyncio.run(_watch(settings, _check_paths(args.paths), args.parent_pid))
        elif args.command == "worker":
            asyncio.run(_worker(settings, args.parent_pid))
        elif args.command == "serve":
            asyncio.run(_serve(settings, args))
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
    except TopicMismatch as exc:  # a cluster laid out for another partition count
        print(f"gazetteer {args.command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
