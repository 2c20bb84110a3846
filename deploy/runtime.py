"""The composition root: builds the parts from Settings and runs them until stopped.

``up`` runs everything in one process (broker, producers, worker, query service), each
part talking to the others only through the topics, exactly as the distributed
commands ``worker``, ``watch`` and ``serve`` do on their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import faust
import structlog
import uvicorn
from aiokafka import AIOKafkaConsumer, TopicPartition

from deploy import tansu_quirks
from deploy.dense_setup import dense_index, worker_fill
from deploy.metrics_server import metrics_served, report_consumer_lag
from deploy.settings import Settings
from deploy.topics_admin import ensure_topics
from processors.app import MAX_DELTA_BYTES, WorkerConfig, create_app
from processors.neighborhoods.clustering import ClusterSettings
from processors.neighborhoods.recluster import ReclusterSettings
from processors.neighborhoods.reclusterer import Debounce
from producers.kafka_sink import KafkaSink
from producers.session import SourceOptions, describe_repository, run_source
from query.api import create_api
from query.materializer import Materializer
from query.mcp_tools import mount_mcp
from query.read_model import ReadModel
from stores.delta_log import KafkaDeltaLog
from stores.snapshot_log import KafkaSnapshotLog
from stores.vectors import VectorStore

log = structlog.get_logger(__name__)

TOPIC_CONFIG = {"retention.ms": "-1", "max.message.bytes": str(MAX_DELTA_BYTES)}


@dataclass(frozen=True, slots=True)
class Cluster:
    """Where the topics are, and which broker quirks to handle."""

    bootstrap: str
    tansu: bool

    async def end_offsets(
        self, consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        return await tansu_quirks.end_offsets(consumer, partitions, broker_is_tansu=self.tansu)


async def connect(settings: Settings, bootstrap: str) -> Cluster:
    tansu = await tansu_quirks.detect_tansu(bootstrap)
    tansu_quirks.install(tansu)
    cluster = Cluster(bootstrap, tansu)
    await ensure_topics(bootstrap, settings.topics.specs(settings.partitions), config=TOPIC_CONFIG)
    log.info("broker_connected", bootstrap=bootstrap, tansu=tansu)
    return cluster


def run_dir(settings: Settings, role: str) -> Path:
    """A private directory per process, so that two runs never share one."""
    path = settings.data_dir / "runs" / f"{role}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def listen(host: str, preferred: int) -> socket.socket:
    """A bound, listening socket: on ``preferred`` if it is free, else on any free port.

    Binding here, not in uvicorn, leaves no gap between choosing the port and taking it,
    so two services started at once never pick the same one.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for port in (preferred, 0) if preferred else (0,):
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say TCP, and
        # with Nagle on, a request that follows another within ~40 ms waits ~40 ms.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            sock.close()
            continue
        sock.listen(128)
        sock.setblocking(False)
        return sock
    raise OSError(f"no free port on {host}")


async def run_worker(
    settings: Settings,
    cluster: Cluster,
    stop: asyncio.Event,
    *,
    on_started: Callable[[faust.App], None] | None = None,
    vectors: VectorStore | None = None,
) -> None:
    """One indexing worker; ``on_started`` receives the running app (benchmarks use it).
    With GAZETTEER_EMBED_IN=worker it embeds its repositories into ``vectors`` (tests
    share one store object with the query service), else into GAZETTEER_QDRANT_URL."""
    fill = worker_fill(settings, vectors)
    datadir = run_dir(settings, "worker")
    config = WorkerConfig(
        app_id=settings.app_id,
        bootstrap=cluster.bootstrap,
        partitions=settings.partitions,
        datadir=str(datadir),
        session_timeout_s=settings.session_timeout_s,
        topics=settings.topics,
        recluster=ReclusterSettings(ClusterSettings(resolution=settings.resolution)),
        debounce=Debounce(
            settings.recluster_quiet_ms / 1000, settings.recluster_max_wait_ms / 1000
        ),
    )
    delta_log = KafkaDeltaLog(
        cluster.bootstrap,
        settings.topics.graph_deltas,
        cluster.end_offsets,
    )
    snapshot_log = KafkaSnapshotLog(
        cluster.bootstrap, settings.topics.neighborhoods, cluster.end_offsets
    )
    app = create_app(config, delta_log=delta_log, snapshot_log=snapshot_log, dense_fill=fill)
    async with metrics_served(settings):
        await app.start()
        log.info("worker_started", app_id=settings.app_id)
        if on_started is not None:
            on_started(app)
        pipeline = app.gazetteer_pipeline  # type: ignore[attr-defined]
        lag = report_consumer_lag(
            app.consumer, settings.topics.file_events, pipeline.positions, stop
        )
        embedding = app.gazetteer_embedding  # type: ignore[attr-defined]
        parts = [stop.wait(), lag] + ([embedding.run(stop)] if embedding is not None else [])
        try:
            await asyncio.gather(*parts)
        finally:
            try:  # with the broker gone, faust's stop can hang: the worker still stops
                await asyncio.wait_for(app.stop(), settings.session_timeout_s * 2)
            except TimeoutError:
                log.warning("worker_stop_timed_out", after_s=settings.session_timeout_s * 2)
            shutil.rmtree(datadir, ignore_errors=True)
            log.info("worker_stopped")


class _QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the process: the CLI owns Ctrl-C.

    uvicorn captures SIGINT/SIGTERM and raises them again when it stops, which would
    turn a clean, requested shutdown into a KeyboardInterrupt.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def run_query(
    settings: Settings,
    cluster: Cluster,
    stop: asyncio.Event,
    *,
    model: ReadModel | None = None,
    on_listening: Callable[[str], Awaitable[None] | None] | None = None,
    ready: asyncio.Event | None = None,
    vectors: VectorStore | None = None,
) -> None:
    """The query service; ``ready`` is set once the read side has caught up. Its dense
    index reads ``vectors`` when given (tests), else the store the settings name."""
    model = model or ReadModel()
    if model.dense is None and not model.repos:
        model.dense = dense_index(settings, vectors)
    materializer = Materializer(
        model,
        cluster.bootstrap,
        cluster.end_offsets,
        topics=settings.topics,
        ready=ready,
    )
    api = create_api(model, ready=materializer.ready.is_set)
    api.state.stopping = stop  # open dashboard event streams end before uvicorn waits on them
    mcp = mount_mcp(api, host=settings.host)
    sock = listen(settings.host, settings.port)
    port = sock.getsockname()[1]
    server = _QuietServer(
        uvicorn.Config(api, host=settings.host, port=port, log_config=None, access_log=False)
    )
    async with contextlib.AsyncExitStack() as mcp_running:
        # The MCP session manager's task group serves /mcp: it runs before the first
        # request and stops before uvicorn, whose shutdown waits for open requests.
        await mcp_running.enter_async_context(mcp.run())
        feeding = asyncio.create_task(materializer.run(stop), name="materializer")
        serving = asyncio.create_task(server.serve(sockets=[sock]), name="http")
        embedding = (
            asyncio.create_task(model.dense.run(stop), name="embedding")
            if model.dense is not None
            else None
        )
        while not server.started and not serving.done():
            await asyncio.sleep(0.05)
        url = f"http://{settings.host}:{port}"
        log.info("query_service_listening", url=url, docs=f"{url}/docs", mcp=f"{url}/mcp")
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


async def run_sources(
    settings: Settings,
    cluster: Cluster,
    roots: Sequence[Path],
    stop: asyncio.Event,
    *,
    since: Callable[[str], str | None] = lambda repo: None,
) -> None:
    sink = KafkaSink(cluster.bootstrap, topics=settings.topics)
    async with metrics_served(settings):
        await _follow(settings, sink, roots, stop, since)


async def _follow(
    settings: Settings,
    sink: KafkaSink,
    roots: Sequence[Path],
    stop: asyncio.Event,
    since: Callable[[str], str | None],
) -> None:
    await sink.start()
    options = SourceOptions(
        max_bytes=settings.max_file_bytes,
        batch_size=settings.batch_size,
        debounce_ms=settings.debounce_ms,
        poll_s=settings.poll_s,
        heartbeat_s=settings.heartbeat_s,
    )
    try:
        tasks = []
        for root in roots:
            repo, branch, head = describe_repository(root)
            log.info("repository_followed", repo=repo, root=str(root), branch=branch, head=head)
            tasks.append(run_source(root, sink, options, since_commit=since(repo), stop=stop))
        await asyncio.gather(*tasks)
    finally:
        await sink.stop()


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
