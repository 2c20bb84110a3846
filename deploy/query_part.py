"""``gazetteer serve``: one query service replica (HTTP, /mcp, /metrics, /dashboard) over
the read side it folds from the topics; each replica reads the whole state. It imports
no faust (issue 20)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import socket
from collections.abc import Awaitable, Callable

import structlog
import uvicorn
from prometheus_client import REGISTRY

from deploy.broker_watch import BrokerReset
from deploy.dense_setup import dense_index
from deploy.listener import listen
from deploy.parts import run_part, stop_on_signals, supervise
from deploy.quiet_server import QuietServer
from deploy.recovery import Recovery, recover_in_place
from deploy.runtime import Cluster, cluster_of, ensurer, state_files, state_topic
from deploy.settings import Settings
from deploy.up import announcement, inherited_socket
from query.api import create_api
from query.host_check import host_rule
from query.materializer import Materializer
from query.mcp_http import mount_mcp
from query.metrics import Peer, PeerCollector
from query.read_model import ReadModel
from stores.vectors import VectorStore

log = structlog.get_logger(__name__)


def main(args: argparse.Namespace, settings: Settings) -> int:
    return run_part("serve", _serve(settings, args))


async def _serve(settings: Settings, args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop, args.parent_pid)
    if args.metrics_peer:
        peers = [Peer(*spec.split("=", 1)) for spec in args.metrics_peer]
        REGISTRY.register(PeerCollector(peers))
    async with cluster_of(settings) as cluster:
        model = ReadModel()
        sock = inherited_socket(args.listen_fd) if args.listen_fd is not None else None
        query = run_query(
            settings, cluster, stop, model=model, on_listening=_announce, listening=sock
        )
        await supervise(stop, [query, *([report_progress(model, stop)] if args.progress else [])])


def _announce(url: str) -> None:
    print(announcement(url), flush=True)


async def run_query(
    settings: Settings,
    cluster: Cluster,
    stop: asyncio.Event,
    *,
    model: ReadModel | None = None,
    on_listening: Callable[[str], Awaitable[None] | None] | None = None,
    ready: asyncio.Event | None = None,
    vectors: VectorStore | None = None,
    listening: socket.socket | None = None,
) -> None:
    """The query service; ``ready`` is set once the read side has caught up. Its dense
    index reads ``vectors`` when given (tests), else the store the settings name. It
    serves on ``listening`` when given (``up`` binds the socket and passes it down, so
    the port outlives a restart of the query process), else on a socket of its own."""
    model = model or ReadModel()
    if model.dense is None and not model.repos:
        model.dense = dense_index(settings, vectors)
    materializer = Materializer(
        model,
        cluster.bootstrap,
        cluster.end_offsets,
        topics=settings.topics,
        ready=ready,
        state_files=state_files(settings),
        state_topic=state_topic(settings, cluster),
        shard=settings.query_shard,
    )
    hosts = host_rule(settings.host, settings.allowed_host_names)
    api = create_api(
        model,
        ready=materializer.ready.is_set,
        hosts=hosts,
        before_answer=materializer.probe_sources,
        authenticate=settings.auth,
        limits=settings.request_limits,
    )
    api.state.stopping = stop  # open dashboard event streams end before uvicorn waits on them
    mcp = mount_mcp(api)
    sock = listening if listening is not None else listen(settings.host, settings.port)
    port = sock.getsockname()[1]
    server = QuietServer(
        uvicorn.Config(api, host=settings.host, port=port, log_config=None, access_log=False)
    )
    async with contextlib.AsyncExitStack() as mcp_running:
        # The MCP session manager's task group serves /mcp: it runs before the first
        # request and stops before uvicorn, whose shutdown waits for open requests.
        await mcp_running.enter_async_context(mcp.run())
        feeding = asyncio.create_task(_feed(settings, cluster, materializer, stop), name="feed")
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="http")
        embedding = (
            asyncio.create_task(model.dense.run(stop), name="embedding")
            if model.dense is not None
            else None
        )
        while not server.started and not serving.done():
            await asyncio.sleep(0.05)
        url = f"http://{settings.host}:{port}"
        log.info(
            "query_service_listening",
            url=url,
            docs=f"{url}/docs",
            mcp=f"{url}/mcp",
            auth="on" if settings.auth else "off",
        )
        if on_listening is not None:
            result = on_listening(url)
            if result is not None:
                await result
        stopping = asyncio.ensure_future(stop.wait())
        try:
            # The service is only as good as its read side: if feeding dies, so does the part.
            await asyncio.wait([stopping, feeding, serving], return_when=asyncio.FIRST_COMPLETED)
            for task in (feeding, serving):
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            stopping.cancel()
            await mcp_running.aclose()
            server.should_exit = True
            tasks = [serving, feeding] + ([embedding] if embedding is not None else [])
            await asyncio.gather(*tasks, return_exceptions=True)
    log.info("query_service_stopped")


async def _feed(
    settings: Settings, cluster: Cluster, materializer: Materializer, stop: asyncio.Event
) -> None:
    """The materializer, read again from offset 0 into an emptied model after a reset."""

    def detected(reset: BrokerReset) -> None:
        # At once, before the old read ends: no answer says fresh from here on. (``ready``
        # is cleared by `Materializer.reset`: cleared here, the old read, still running,
        # would set it again and end the rebuilding on the old state.)
        materializer.model.reset_reason = reset.describe()
        materializer.model.rebuilding = True

    async def generation(its_stop: asyncio.Event, recovery: Recovery) -> None:
        if recovery.after is not None:
            materializer.reset(recovery.after.describe())
        reading = asyncio.ensure_future(materializer.run(its_stop))
        ready = asyncio.ensure_future(materializer.ready.wait())
        await asyncio.wait([reading, ready], return_when=asyncio.FIRST_COMPLETED)
        if ready.done():
            recovery.done(messages=materializer.messages)
        ready.cancel()
        await reading

    await recover_in_place(
        "query",
        cluster.watch,
        stop,
        generation,
        ensure_topics=ensurer(settings, cluster),
        on_detected=detected,
    )


async def report_progress(model: ReadModel, stop: asyncio.Event, every_s: float = 2.0) -> None:
    """While ``up`` runs: one line per repository when its indexing progresses."""
    last: dict[str, tuple[int, int, str]] = {}
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
        for repo, view in sorted(model.repos.items()):
            fresh = model.freshness(repo)
            now = (len(view.state.files), fresh.pending_events, fresh.status)
            if last.get(repo) != now:
                last[repo] = now
                log.info(
                    "index_progressed",
                    repo=repo,
                    files=now[0],
                    pending=now[1],
                    status=now[2],
                    lag_ms=fresh.lag_ms,
                )
