"""The composition root: builds the parts from Settings and runs them until stopped.

``up`` runs everything in one process (broker, producers, worker, query service), each
part talking to the others only through the topics, exactly as the distributed
commands ``worker``, ``watch`` and ``serve`` do on their own.

Each part recovers in place from a broker that came back empty (issue 15): the
process's `BrokerWatch` (`Cluster.watch`) tells it, and `deploy.recovery.recover_in_place` ends the
part's current generation, ensures the topics and starts a new one: the worker with a
new faust app, the query service re-reading the new topics into an emptied read model
(its HTTP socket stays bound), the producers with new sessions and full scans.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import faust
import structlog
import uvicorn
from aiokafka import AIOKafkaConsumer, TopicPartition

from deploy import tansu_quirks
from deploy.broker_watch import BrokerReset, BrokerWatch
from deploy.dense_setup import dense_index, worker_fill
from deploy.listener import listen
from deploy.metrics_server import metrics_served, report_consumer_lag
from deploy.recovery import Recovery, joined_and_fetching, recover_in_place
from deploy.settings import Settings
from deploy.topics_admin import ensure_topics, install_no_topic_auto_creation
from processors.app import MAX_DELTA_BYTES, WorkerConfig, create_app
from processors.neighborhoods.clustering import ClusterSettings
from processors.neighborhoods.recluster import ReclusterSettings
from processors.neighborhoods.reclusterer import Debounce
from producers.kafka_sink import KafkaLeaseWatch, KafkaSink
from producers.session import SourceOptions, describe_repository, run_source, unique_repositories
from query.api import create_api
from query.host_check import host_rule
from query.materializer import Materializer
from query.mcp_tools import mount_mcp
from query.read_model import ReadModel
from stores.delta_log import KafkaDeltaLog
from stores.snapshot_log import KafkaSnapshotLog
from stores.state_files import StateFiles, state_directory
from stores.state_topic import KafkaStateTopic
from stores.text.dense_fill import DenseFill
from stores.vectors import VectorStore

log = structlog.get_logger(__name__)

TOPIC_CONFIG = {"max.message.bytes": str(MAX_DELTA_BYTES)}
JOIN_TIMEOUT_FACTOR = 10
"""A worker whose consumer has not joined its group, or not fetched a partition it was
given, within this many session timeouts (60 s by default; either takes seconds) is
started anew."""
"""For every topic; each topic's retention and compaction are its spec's (producers/topics.py)."""


@dataclass(frozen=True, slots=True)
class Cluster:
    """Where the topics are, and which broker quirks to handle."""

    bootstrap: str
    tansu: bool
    watch: BrokerWatch | None = field(default=None, compare=False)
    """Tells the parts when the broker lost our topics; None: no recovery (benchmarks)."""

    async def end_offsets(
        self, consumer: AIOKafkaConsumer, partitions: Sequence[TopicPartition]
    ) -> dict[TopicPartition, int]:
        return await tansu_quirks.end_offsets(consumer, partitions, broker_is_tansu=self.tansu)


async def connect(settings: Settings, bootstrap: str) -> Cluster:
    """The broker, its topics ensured (`TopicMismatch` if one has another partition
    count), and a `BrokerWatch` primed with what the broker holds now."""
    install_no_topic_auto_creation()
    tansu = await tansu_quirks.detect_tansu(bootstrap)
    tansu_quirks.install(tansu)
    specs = settings.topics.specs(settings.partitions)
    await ensure_topics(bootstrap, specs, config=TOPIC_CONFIG)
    watch = BrokerWatch(bootstrap, [spec.name for spec in specs])
    await watch.prime()
    cluster = Cluster(bootstrap, tansu, watch)
    log.info("broker_connected", bootstrap=bootstrap, tansu=tansu)
    return cluster


def _ensurer(settings: Settings, cluster: Cluster) -> Callable[[], Awaitable[object]]:
    """The topics ensured again after a reset (empty ones of another count recreated)."""
    return lambda: ensure_topics(
        cluster.bootstrap,
        settings.topics.specs(settings.partitions),
        config=TOPIC_CONFIG,
        broker_is_tansu=cluster.tansu,
        recreate_empty=True,
    )


def state_files(settings: Settings) -> StateFiles:
    """The deployment's state snapshots (issue 16): written by the worker, read by it and
    by the query service and the producers' read model of this data dir."""
    return StateFiles(state_directory(settings.data_dir, settings.namespace))


def state_topic(settings: Settings, cluster: Cluster) -> KafkaStateTopic:
    """The deployment's state snapshots on the broker (issue 16): published by the
    workers (`Settings.snapshots_on_broker`), read by them and by every query replica."""
    return KafkaStateTopic(cluster.bootstrap, settings.topics.state_snapshots, cluster.end_offsets)


def run_dir(settings: Settings, role: str) -> Path:
    """A private directory per process, so that two runs never share one."""
    path = settings.data_dir / "runs" / f"{role}-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


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

    async def generation(its_stop: asyncio.Event, recovery: Recovery) -> None:
        await _worker_generation(settings, cluster, its_stop, recovery, on_started, fill)

    async with metrics_served(settings):
        await recover_in_place(
            "worker", cluster.watch, stop, generation, ensure_topics=_ensurer(settings, cluster)
        )


async def _worker_generation(
    settings: Settings,
    cluster: Cluster,
    stop: asyncio.Event,
    recovery: Recovery,
    on_started: Callable[[faust.App], None] | None,
    fill: DenseFill | None,
) -> None:
    """One faust app, from its start until ``stop``: fresh in-memory indexes and tables."""
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
    publish = settings.snapshots_on_broker
    app = create_app(
        config,
        delta_log=delta_log,
        snapshot_log=snapshot_log,
        dense_fill=fill,
        state_files=state_files(settings),
        state_topic=state_topic(settings, cluster),
        publish_state=not cluster.tansu if publish is None else publish,
    )
    await app.start()
    log.info("worker_started", app_id=settings.app_id)
    recovery.done(app_id=settings.app_id)
    if on_started is not None:
        on_started(app)
    pipeline = app.gazetteer_pipeline  # type: ignore[attr-defined]
    lag = report_consumer_lag(app.consumer, settings.topics.file_events, pipeline.positions, stop)
    embedding = app.gazetteer_embedding  # type: ignore[attr-defined]
    # A consumer that never joins its group, or never fetches a partition it was given,
    # is replaced (deploy/recovery.joined_and_fetching).
    joined = joined_and_fetching(
        app.consumer,
        settings.topics.file_events,
        app.gazetteer_joined,  # type: ignore[attr-defined]
        stop,
        JOIN_TIMEOUT_FACTOR * settings.session_timeout_s,
    )
    parts = [joined, lag] + ([embedding.run(stop)] if embedding is not None else [])
    tasks = [asyncio.ensure_future(part) for part in parts]
    try:
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:  # one failed (a stalled join): the others end with it
            task.cancel()
        keeper = app.gazetteer_state  # type: ignore[attr-defined]
        if keeper is not None:
            # A clean stop writes what changed since the last snapshots (issue 16): first
            # at once, within the supervisor's grace whatever faust's stop takes, then
            # once more after it for a batch that was finishing meanwhile.
            await keeper.flush()
        try:  # with the broker gone, faust's stop can hang: the worker still stops
            await asyncio.wait_for(app.stop(), settings.session_timeout_s * 2)
        except TimeoutError:
            log.warning("worker_stop_timed_out", after_s=settings.session_timeout_s * 2)
        if keeper is not None:
            await keeper.flush()
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
    )
    hosts = host_rule(settings.host, settings.allowed_host_names)
    api = create_api(
        model,
        ready=materializer.ready.is_set,
        hosts=hosts,
        before_answer=materializer.probe_sources,
    )
    api.state.stopping = stop  # open dashboard event streams end before uvicorn waits on them
    mcp = mount_mcp(api)
    sock = listening if listening is not None else listen(settings.host, settings.port)
    port = sock.getsockname()[1]
    server = _QuietServer(
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
        ensure_topics=_ensurer(settings, cluster),
        on_detected=detected,
    )


async def run_sources(
    settings: Settings,
    cluster: Cluster,
    roots: Sequence[Path],
    stop: asyncio.Event,
    *,
    since: Callable[[str], str | None] = lambda repo: None,
    known_epoch: Callable[[str], int] = lambda repo: 0,
) -> None:
    """``known_epoch``: the largest lease epoch known per repository (the read side's
    ReadModel.known_epoch); each session claims one more (issue 15).

    The epochs this process claimed count too: after a broker reset the read side is
    emptied and knows none, and a new session at epoch 1 could lose to a session of an
    earlier generation (same epoch, a greater producer id) that the new broker saw
    before it stopped, which would leave the live session fenced."""
    claimed: dict[str, int] = {}

    def knowing(repo: str) -> int:
        known = max(known_epoch(repo), claimed.get(repo, 0))
        claimed[repo] = known + 1  # what the session about to start claims
        return known

    async def generation(its_stop: asyncio.Event, recovery: Recovery) -> None:
        # A new producer (no retry of a batch meant for the lost topics) per generation;
        # after a reset every source scans in full: the state it reconciled against is gone.
        sink = KafkaSink(cluster.bootstrap, topics=settings.topics, stop=its_stop)
        recovery.done(next="full scan")
        await _follow(
            settings,
            sink,
            roots,
            its_stop,
            since if recovery.after is None else _none,
            known_epoch=knowing,
            bootstrap=cluster.bootstrap,
        )

    async with metrics_served(settings):
        await recover_in_place(
            "sources",
            cluster.watch,
            stop,
            generation,
            ensure_topics=_ensurer(settings, cluster),
            grace_s=5.0,
        )


def _none(repo: str) -> str | None:
    return None


async def _follow(
    settings: Settings,
    sink: KafkaSink,
    roots: Sequence[Path],
    stop: asyncio.Event,
    since: Callable[[str], str | None],
    *,
    known_epoch: Callable[[str], int] = lambda repo: 0,
    bootstrap: str | None = None,
) -> None:
    await sink.start()
    # A producer stops when a greater lease claims its repository (issue 15).
    leases = KafkaLeaseWatch(bootstrap, topics=settings.topics) if bootstrap else None
    if leases is not None:
        await leases.start()
    options = SourceOptions(
        max_bytes=settings.max_file_bytes,
        batch_size=settings.batch_size,
        debounce_ms=settings.debounce_ms,
        poll_s=settings.poll_s,
        heartbeat_s=settings.heartbeat_s,
    )
    try:
        tasks = []
        described = [(root, describe_repository(root)) for root in roots]
        kept, skipped = unique_repositories([(root, d[0]) for root, d in described])
        for duplicate in skipped:  # two clones of one origin would fence each other
            log.warning(
                "repository_duplicate_skipped",
                repo=duplicate.repo,
                root=str(duplicate.root),
                followed=str(duplicate.kept),
            )
        info = dict(described)
        for root, repo in kept:
            _, branch, head = info[root]
            log.info("repository_followed", repo=repo, root=str(root), branch=branch, head=head)
            tasks.append(
                run_source(
                    root,
                    sink,
                    options,
                    since_commit=since(repo),
                    stop=stop,
                    known_epoch=known_epoch,
                    leases=leases,
                )
            )
        await asyncio.gather(*tasks)
    finally:
        if leases is not None:
            await leases.stop()
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
