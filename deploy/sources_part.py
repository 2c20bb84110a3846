"""``gazetteer watch``: the producers of some repositories: scan (or reconcile from the
last indexed commit), watch the files and follow the commits. It imports no faust and
no web framework (issue 20)."""

from __future__ import annotations

import argparse
import asyncio
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import structlog

from deploy.metrics_server import metrics_served
from deploy.parts import checked_roots, run_part, stop_on_signals, supervise
from deploy.recovery import Recovery, recover_in_place
from deploy.runtime import Cluster, cluster_of, ensurer, state_files
from deploy.settings import Settings
from producers.kafka_sink import KafkaLeaseWatch, KafkaSink
from producers.session import SourceOptions, describe_repository, run_source, unique_repositories
from query.materializer import Materializer
from query.read_model import ReadModel
from stores.state_snapshot import SnapshotHeader

log = structlog.get_logger(__name__)


def main(args: argparse.Namespace, settings: Settings) -> int:
    roots = checked_roots(args.paths)
    return run_part("watch", _watch(settings, roots, args.parent_pid))


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
    stop_on_signals(stop, parent_pid)
    async with cluster_of(settings) as cluster:
        # Learn the last indexed commit of each repository from the materialized state,
        # so that a restart reconciles with a git diff instead of a full scan.
        model = ReadModel()
        remembered: Remembered = functools.cache(state_files(settings).peek)
        ready = asyncio.Event()

        async def read_state() -> None:
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
        await supervise(
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

    async with metrics_served(settings, cluster.bootstrap):
        await recover_in_place(
            "sources",
            cluster.watch,
            stop,
            generation,
            ensure_topics=ensurer(settings, cluster),
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
        options = options.paced(len(kept))  # one process follows them all
        if len(kept) > 1:
            log.info(
                "repositories_paced",
                repositories=len(kept),
                poll_s=options.poll_s,
                recheck_s=options.recheck_s,
            )
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
