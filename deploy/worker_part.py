"""``gazetteer worker``: one indexing worker, a faust app; run N of them, they share the
partitions. It imports no web framework, no MCP and (unless it embeds into a Qdrant
server, GAZETTEER_EMBED_IN=worker) no Qdrant client (issue 20)."""

from __future__ import annotations

import argparse
import asyncio
import shutil
from collections.abc import Callable

import faust
import structlog

from deploy.broker_watch import BrokerReset
from deploy.dense_setup import worker_fill
from deploy.metrics_server import metrics_served, report_consumer_lag
from deploy.parts import run_part, stop_on_signals, supervise
from deploy.recovery import Recovery, joined_and_fetching, recover_in_place
from deploy.runtime import Cluster, cluster_of, ensurer, run_dir, state_files, state_topic
from deploy.settings import Settings
from processors.app import WorkerConfig, create_app
from processors.neighborhoods.clustering import ClusterSettings
from processors.neighborhoods.recluster import ReclusterSettings
from processors.neighborhoods.reclusterer import Debounce
from processors.parse_pool import ParsePool
from stores.delta_log import KafkaDeltaLog
from stores.delta_seek import DeltaOffsets
from stores.snapshot_log import KafkaSnapshotLog
from stores.text.dense_fill import DenseFill
from stores.vectors import VectorStore

log = structlog.get_logger(__name__)

JOIN_TIMEOUT_FACTOR = 10
"""A worker whose consumer has not joined its group, or not fetched a partition it was
given, within this many session timeouts (60 s by default; either takes seconds) is
started anew."""


def main(args: argparse.Namespace, settings: Settings) -> int:
    return run_part("worker", _worker(settings, args.parent_pid))


async def _worker(settings: Settings, parent_pid: int | None) -> None:
    stop = asyncio.Event()
    stop_on_signals(stop, parent_pid)
    async with cluster_of(settings) as cluster:
        await supervise(stop, [run_worker(settings, cluster, stop)])


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
    running: list[faust.App] = []
    # One pool for every generation: its workers start at the first large scan (issue 21).
    parse_pool = ParsePool(settings.scan_workers)

    async def generation(its_stop: asyncio.Event, recovery: Recovery) -> None:
        await _worker_generation(
            settings, cluster, its_stop, recovery, on_started, fill, running, parse_pool
        )

    aborting: set[asyncio.Task[None]] = set()

    def detected(reset: BrokerReset) -> None:
        # The stopping generation still holds sends (batches its producer retries while
        # the topics are missing) and writes its last snapshots; none may reach the
        # recreated topics (processors/fence.py, tests/integration/test_broker_reset.py).
        reason = f"broker reset: {reset.reason}"
        for app in running:
            keeper = app.gazetteer_state  # type: ignore[attr-defined]
            if keeper is not None:
                keeper.stop_publishing(reason)
            task = app.gazetteer_sink.fence_writes(reason)  # type: ignore[attr-defined]
            if task is not None:
                aborting.add(task)
                task.add_done_callback(aborting.discard)

    try:
        async with metrics_served(settings, cluster.bootstrap):
            await recover_in_place(
                "worker",
                cluster.watch,
                stop,
                generation,
                ensure_topics=ensurer(settings, cluster),
                on_detected=detected,
            )
    finally:
        parse_pool.close()


async def _worker_generation(
    settings: Settings,
    cluster: Cluster,
    stop: asyncio.Event,
    recovery: Recovery,
    on_started: Callable[[faust.App], None] | None,
    fill: DenseFill | None,
    running: list[faust.App],
    parse_pool: ParsePool | None = None,
) -> None:
    """One faust app, from its start until ``stop``: fresh in-memory indexes and tables;
    in ``running`` while it runs."""
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
    offsets = DeltaOffsets()  # issue 16: where each delta begins, for the snapshots
    delta_log = KafkaDeltaLog(
        cluster.bootstrap,
        settings.topics.graph_deltas,
        cluster.end_offsets,
        offsets,
    )
    snapshot_log = KafkaSnapshotLog(
        cluster.bootstrap, settings.topics.neighborhoods, cluster.end_offsets
    )
    publish = settings.snapshots_on_broker
    app = create_app(
        config,
        delta_log=delta_log,
        delta_offsets=offsets,
        snapshot_log=snapshot_log,
        dense_fill=fill,
        state_files=state_files(settings),
        state_topic=state_topic(settings, cluster),
        publish_state=not cluster.tansu if publish is None else publish,
        parse_pool=parse_pool,
    )
    await app.start()
    running.append(app)
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
        running.remove(app)
        shutil.rmtree(datadir, ignore_errors=True)
        log.info("worker_stopped")
