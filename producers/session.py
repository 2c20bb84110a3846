"""One repository's producer session: watch, scan (or reconcile), follow, heartbeat.

The order matters. The watcher starts first, so that a file saved during the scan is
not missed; what it sees is held until the scan's barrier is emitted and then read
afresh, so that the scan cannot overwrite a newer save. The commit follower starts
from the commit the scan saw, so that a commit made during the scan is followed.

Before any of it, the session claims the repository (issue 15): its epoch is one more
than the largest the caller knows (``known_epoch``), and a LeaseWatch tells it when a
greater lease has claimed the repository since; the session then stops on its own
(``producer_fenced``, a last status in state ``fenced``), the other repositories of
the process going on. Two roots of one process that are the same repository (two
clones of one origin) would fence each other: ``unique_repositories`` keeps the first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import structlog

from producers.follower import CommitFollower
from producers.git import Git, is_work_tree
from producers.lease import KnownEpoch, LeaseWatch, NoLeaseWatch, lease_of, next_epoch
from producers.repo_id import repository_id
from producers.scan import ScanOptions, ScanResult, WorkTree, full_scan, reconcile
from producers.source import EventSink, Source
from producers.watcher import Watcher

log = structlog.get_logger()


FOLLOW_POLLS_PER_S = 500.0
"""Looks at the refs (a few ``stat`` calls, `CommitFollower`) one process makes a second
at most, every repository it follows together."""

NOTIFIER_STEPS_PER_S = 1000.0
"""Wakes of the notifiers' threads one process allows a second, all its repositories
together. A notifier's thread (``RustNotify.watch``) sleeps ``step`` ms between looks, and
each look takes the interpreter's lock (it asks for signals and the stop flag): 1,000
notifiers at 50 ms took it 20,000 times a second, and the load average passed 500 with
the event loop starved (issue 18). A look finds the changes the OS queued meanwhile, so a
longer step delays a save by at most the step, it loses none."""

FOLLOW_RECHECKS_PER_S = 10.0
"""Rechecks of HEAD whose refs did not move (two git subprocesses each) one process makes
a second at most: a watcher of 1,000 repositories rechecking each every 5 s spawned ~400
git processes a second, and two cores were busy with nothing changing (the org
simulation, docs/PERFORMANCE.md)."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    max_bytes: int = 1_000_000
    batch_size: int = 200
    debounce_ms: int = 100
    poll_s: float = 0.5
    heartbeat_s: float = 5.0
    follow: bool = True
    watch: bool = True
    recheck_s: float = 5.0  # HEAD asked of git again though its refs did not move
    min_step_ms: int = 0  # the notifier's looks at its changes at least this far apart

    def paced(self, repositories: int) -> SourceOptions:
        """The options of one of ``repositories`` followed by one process: its polls and
        rechecks spaced so that the process stays within ``FOLLOW_POLLS_PER_S`` and
        ``FOLLOW_RECHECKS_PER_S``, and its notifiers' looks within ``NOTIFIER_STEPS_PER_S``
        (unchanged up to 50 repositories). A commit is still seen at the next poll (its
        refs move); only the safety net is slower. A save waits at most one step more: 1 s
        at 1,000 repositories."""
        n = max(1, repositories)
        return replace(
            self,
            poll_s=max(self.poll_s, n / FOLLOW_POLLS_PER_S),
            recheck_s=max(self.recheck_s, n / FOLLOW_RECHECKS_PER_S),
            min_step_ms=max(self.min_step_ms, _step_floor_ms(n)),
        )


def _step_floor_ms(repositories: int) -> int:
    """The notifiers' step that keeps ``repositories`` of them within
    ``NOTIFIER_STEPS_PER_S`` (0, no floor, up to 50 of them)."""
    step = round(repositories * 1000 / NOTIFIER_STEPS_PER_S)
    return step if step > 50 else 0


def open_work_tree(root: Path) -> WorkTree:
    """The work tree at ``root``: git's toplevel when inside one, else the directory."""
    root = root.resolve()
    if is_work_tree(root):
        git = Git(root)
        top = git.toplevel().resolve()
        return WorkTree(top, Git(top))
    return WorkTree(root, None)


def describe_repository(root: Path) -> tuple[str, str | None, str | None]:
    """``(repository id, branch, head commit)``: the id comes from the origin remote."""
    tree = open_work_tree(root)
    if tree.git is None:
        return repository_id(tree.root, None), None, None
    remote = tree.git.remote_url("origin")
    return repository_id(tree.root, remote), tree.git.branch(), tree.git.head()


@dataclass(frozen=True, slots=True)
class Skipped:
    """A root left out because an earlier root is the same repository."""

    root: Path
    kept: Path
    repo: str


def unique_repositories(
    roots: Sequence[tuple[Path, str]],
) -> tuple[list[tuple[Path, str]], list[Skipped]]:
    """``(root, repository id)`` pairs, split into those followed and those skipped.

    The rule: the first root named for a repository id is followed; each later root of
    the same id is skipped (two producers of one repository would fence each other,
    and the winner would depend on timing). Order is kept."""
    first: dict[str, Path] = {}
    kept: list[tuple[Path, str]] = []
    skipped: list[Skipped] = []
    for root, repo in roots:
        if repo in first:
            skipped.append(Skipped(root, first[repo], repo))
        else:
            first[repo] = root
            kept.append((root, repo))
    return kept, skipped


async def run_source(
    root: Path,
    sink: EventSink,
    options: SourceOptions,
    *,
    since_commit: str | None,
    stop: asyncio.Event,
    known_epoch: KnownEpoch = lambda repo: 0,
    leases: LeaseWatch | None = None,
) -> None:
    """Produce one repository's events until ``stop`` is set, or until a greater lease
    claims the repository (seen through ``leases``)."""
    tree = await asyncio.to_thread(open_work_tree, root)
    repo, branch, head = await asyncio.to_thread(describe_repository, tree.root)
    epoch = next_epoch(known_epoch(repo))
    source = Source(repo, str(tree.root), sink, heartbeat_s=options.heartbeat_s, epoch=epoch)
    source.observe(branch=branch, head_commit=head, state="scanning")
    log.info(
        "source_started",
        repo=repo,
        root=str(tree.root),
        branch=branch,
        head=head,
        producer=source.producer,
        epoch=epoch,
    )
    done = asyncio.Event()  # this repository's stop: the process's, or its being fenced
    try:
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(_relay(stop, done), name="stop")
            tasks.create_task(_fencing(source, leases or NoLeaseWatch(), done), name="lease-watch")
            await source.claim()
            tasks.create_task(_heartbeats(source, options.heartbeat_s, done), name="heartbeat")
            ready, watcher = asyncio.Event(), None
            if options.watch:
                watcher = Watcher(
                    source,
                    tree,
                    max_bytes=options.max_bytes,
                    debounce_ms=options.debounce_ms,
                    batch_size=options.batch_size,
                    min_step_ms=options.min_step_ms,
                )
                tasks.create_task(watcher.run(done, ready), name="watcher")
                await watcher.watching.wait()
            result = await _scan(source, tree, options, since_commit, done)
            if result is not None:
                if watcher is not None:
                    watcher.known.update(result.listed)
                source.observe(state="watching", working_tree_dirty=result.working_tree_dirty)
                await source.heartbeat()  # readers learn at once that the scan is over
                ready.set()
                if options.follow and tree.git is not None:
                    follower = _follower(source, tree.git, result, options)
                    tasks.create_task(follower.run(done), name="follower")
            await done.wait()
    finally:
        source.observe(state="stopped")  # a fenced source stays "fenced"
        # Said once if the broker answers; a broker already gone must not hold the stop.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(source.heartbeat(), options.heartbeat_s)
        log.info("source_stopped", repo=repo, last_seq=source.last_seq, state=source.state)


async def _relay(stop: asyncio.Event, done: asyncio.Event) -> None:
    """The process's stop ends this repository too."""
    waiting, ending = asyncio.ensure_future(stop.wait()), asyncio.ensure_future(done.wait())
    try:
        await asyncio.wait([waiting, ending], return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        ending.cancel()
    done.set()


async def _fencing(source: Source, leases: LeaseWatch, done: asyncio.Event) -> None:
    """Stop the session (``done``) when a greater lease claims its repository."""
    watching = asyncio.ensure_future(leases.fenced(source.repo, source.lease))
    ending = asyncio.ensure_future(done.wait())
    try:
        await asyncio.wait([watching, ending], return_when=asyncio.FIRST_COMPLETED)
    finally:
        ending.cancel()
        if not watching.done():
            watching.cancel()
    if watching.done() and not watching.cancelled():
        by = watching.result()
        source.fence(lease_of(by))
        log.warning(
            "producer_fenced",
            repo=source.repo,
            lease=list(source.lease),
            by=list(lease_of(by)),
            by_root=by.root,
        )
        done.set()


async def _heartbeats(source: Source, every_s: float, stop: asyncio.Event) -> None:
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
        if not stop.is_set():
            await source.heartbeat()


async def _scan(
    source: Source,
    tree: WorkTree,
    options: SourceOptions,
    since_commit: str | None,
    stop: asyncio.Event,
) -> ScanResult | None:
    scan_options = ScanOptions(max_bytes=options.max_bytes, batch_size=options.batch_size)
    if since_commit is None:
        return await full_scan(source, tree, scan_options, stop=stop)
    return await reconcile(source, tree, since_commit, scan_options, stop=stop)


def _follower(
    source: Source, git: Git, result: ScanResult, options: SourceOptions
) -> CommitFollower:
    return CommitFollower(
        source,
        git,
        last_commit=result.commit,
        branch=result.branch,
        max_bytes=options.max_bytes,
        batch_size=options.batch_size,
        poll_s=options.poll_s,
        recheck_s=options.recheck_s,
    )
