"""The watcher with real file writes, and a whole producer session."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs
from watchfiles import Change, awatch
from watchfiles._rust_notify import WatchfilesRustInternalError

from producers.events import EventBase, FileChanged, FileDeleted, ScanCompleted
from producers.git import Git, GitError
from producers.scan import WorkTree
from producers.session import SourceOptions, describe_repository, run_source
from producers.source import InMemorySink, Source
from producers.watcher import (
    KnownFiles,
    Watcher,
    expand_deletions,
    out_of_os_watches,
    relative_changes,
)
from tests.badrepo import UNPRIVILEGED, UNPRIVILEGED_CAN_RUN, live_bad_changes, make_bad_repo
from tests.gitrepo import GitRepo

TIMEOUT_S = 3.0
ROOT = Path(__file__).resolve().parents[2]


def kinds(events: list[EventBase]) -> list[tuple[str, str]]:
    return [(getattr(e, "kind", ""), getattr(e, "path", "")) for e in events if hasattr(e, "path")]


async def until(predicate: Callable[[], bool]) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while not predicate():
            await asyncio.sleep(0.02)


async def quiet(sink: InMemorySink, for_s: float = 0.25) -> None:
    """Wait until no new event arrived for ``for_s``."""
    seen = -1
    while seen != len(sink.events):
        seen = len(sink.events)
        await asyncio.sleep(for_s)


@asynccontextmanager
async def watching(
    repo: GitRepo, known: set[str], ready: asyncio.Event | None = None
) -> AsyncIterator[tuple[InMemorySink, Source]]:
    sink = InMemorySink()
    source = Source("repo-1", str(repo.root), sink, producer="p1")
    tree = WorkTree(repo.root.resolve(), Git(repo.root))
    watcher = Watcher(source, tree, max_bytes=100, debounce_ms=50, known=KnownFiles(known))
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop, ready))
    await watcher.watching.wait()
    try:
        yield sink, source
    finally:
        stop.set()
        await asyncio.wait_for(task, 1.0)  # stops promptly


def test_changes_are_made_relative_and_git_internals_dropped():
    raw = {
        (Change.modified, "/r/src/a.py"),
        (Change.added, "/r/src/a.py"),
        (Change.modified, "/r/.git/index"),
        (Change.added, "/r/sub/.git/HEAD"),
        (Change.modified, "/elsewhere/x.py"),
        (Change.deleted, "/r"),
    }
    assert relative_changes("/r", raw) == {"src/a.py": {Change.modified, Change.added}}


def test_deleted_directories_expand_to_the_known_files_under_them():
    known = KnownFiles(["pkg/a.py", "pkg/sub/b.py", "pkg.py", "pkg-x/c.py", "top.py"])
    assert known.under("pkg") == ["pkg/a.py", "pkg/sub/b.py"]
    assert expand_deletions(["pkg"], known) == ["pkg/a.py", "pkg/sub/b.py"]
    assert expand_deletions(["top.py", "unknown"], known) == ["top.py", "unknown"]


async def test_saves_creations_and_deletions_are_emitted(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {".gitignore": "*.log\n", "a.py": "1"})
    head = repo.head()
    async with watching(repo, {".gitignore", "a.py"}) as (sink, source):
        repo.write("a.py", "2")
        repo.write("debug.log", "ignored")
        repo.git("add", "a.py")  # touches .git only
        await until(lambda: len(sink.events) >= 1)
        await quiet(sink)
        assert kinds(sink.events) == [("file_changed", "a.py")]
        first = sink.events[0]
        assert isinstance(first, FileChanged)
        assert (first.content, first.origin, first.commit, first.working_tree) == (
            b"2",
            "watch",
            head,
            True,
        )
        assert source.working_tree_dirty

        outside = tmp_path / "outside"
        outside.mkdir()
        (repo.root / "link").symlink_to(outside, target_is_directory=True)
        await until(lambda: ("file_changed", "link") in kinds(sink.events))
        (outside / "far.py").write_text("not in the repository")
        await quiet(sink)
        assert kinds(sink.events)[1:] == [("file_changed", "link")]
        (repo.root / "link").unlink()
        await until(lambda: len(sink.events) >= 3)
        del sink.events[:]

        repo.write("new.py", "n")
        await until(lambda: len(sink.events) >= 1)
        (repo.root / "new.py").unlink()
        await until(lambda: len(sink.events) >= 2)
        await quiet(sink)
        assert kinds(sink.events) == [("file_changed", "new.py"), ("file_deleted", "new.py")]
        assert [e.seq for e in sink.events] == [4, 5]


async def test_a_directory_moved_away_deletes_the_files_known_under_it(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"pkg/a.py": "a", "pkg/sub/b.py": "b", "top.py": "t"})
    async with watching(repo, {"pkg/a.py", "pkg/sub/b.py", "top.py"}) as (sink, _):
        shutil.move(repo.root / "pkg", tmp_path / "moved")
        await until(lambda: len(sink.events) >= 2)
        await quiet(sink)
        assert sorted(kinds(sink.events)) == [
            ("file_deleted", "pkg/a.py"),
            ("file_deleted", "pkg/sub/b.py"),
        ]
        shutil.move(tmp_path / "moved", repo.root / "back")
        await until(lambda: len(sink.events) >= 4)
        await quiet(sink)
        assert kinds(sink.events)[2:] == [
            ("file_changed", "back/a.py"),
            ("file_changed", "back/sub/b.py"),
        ]


async def test_a_gitignore_change_hides_and_reveals_files(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "a"})
    repo.write("x.gen", "generated")
    repo.write(".gitignore", "*.tmp\n")
    repo.write("y.tmp", "hidden so far")
    async with watching(repo, {"a.py", "x.gen", ".gitignore"}) as (sink, _):
        repo.write(".gitignore", "*.gen\n")
        await until(lambda: len(sink.events) >= 3)
        await quiet(sink)
        assert kinds(sink.events) == [
            ("file_deleted", "x.gen"),
            ("file_changed", ".gitignore"),
            ("file_changed", "y.tmp"),
        ]


async def test_changes_before_ready_wait_and_are_read_fresh(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    ready = asyncio.Event()
    async with watching(repo, {"a.py"}, ready) as (sink, _):
        repo.write("a.py", "2")
        await asyncio.sleep(0.3)
        repo.write("a.py", "3")
        await asyncio.sleep(0.2)
        assert sink.events == []
        ready.set()
        await until(lambda: len(sink.events) >= 1)
        await quiet(sink)
        assert kinds(sink.events) == [("file_changed", "a.py")]
        assert isinstance(sink.events[0], FileChanged) and sink.events[0].content == b"3"


async def test_a_session_scans_watches_follows_and_stops(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1", "b.py": "b"})
    repo_id, branch, head = describe_repository(repo.root)
    assert (branch, head) == ("main", repo.head()) and repo_id.startswith("r-")
    sink, stop = InMemorySink(), asyncio.Event()
    options = SourceOptions(debounce_ms=50, poll_s=0.05, heartbeat_s=0.1)
    task = asyncio.create_task(run_source(repo.root, sink, options, since_commit=None, stop=stop))
    await until(lambda: any(isinstance(e, ScanCompleted) for e in sink.events))
    repo.write("c.py", "c")
    await until(lambda: ("file_changed", "c.py") in kinds(sink.events))
    sha = repo.commit("add c")
    await until(lambda: any(getattr(e, "sha", None) == sha for e in sink.events[4:]))
    await quiet(sink, 0.2)
    stop.set()
    await asyncio.wait_for(task, 2.0)

    assert sink.events[0].kind == "lease_claimed"  # type: ignore[attr-defined]
    assert [(getattr(e, "kind", None), getattr(e, "path", None)) for e in sink.events[1:8]] == [
        ("file_changed", "a.py"),
        ("file_changed", "b.py"),
        ("scan_completed", None),
        ("file_changed", "c.py"),  # the watcher's
        ("commit_observed", None),
        ("file_changed", "c.py"),  # the commit's
        ("commit_completed", None),
    ]
    assert [e.seq for e in sink.events] == list(range(1, len(sink.events) + 1))
    states = [s.state for s in sink.statuses]
    assert states[0] == "scanning" and "watching" in states and states[-1] == "stopped"
    assert sink.statuses[-1].head_commit == sha and sink.statuses[-1].last_seq == len(sink.events)


def records(events: list[EventBase]) -> list[tuple[str, str | None]]:
    """(path, skip reason) of each FileChanged, in order."""
    return [(e.path, e.skipped) for e in events if isinstance(e, FileChanged)]


@asynccontextmanager
async def watcher_of(
    tree: WorkTree, known: Iterable[str], **kwargs: Any
) -> AsyncIterator[tuple[InMemorySink, Watcher, asyncio.Task[None]]]:
    sink = InMemorySink()
    source = Source("repo-1", str(tree.root), sink, producer="p1")
    watcher = Watcher(
        source, tree, max_bytes=1000, debounce_ms=50, known=KnownFiles(known), **kwargs
    )
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await watcher.watching.wait()
    try:
        yield sink, watcher, task
    finally:
        stop.set()
        await asyncio.wait_for(task, 2.0)  # stops promptly


async def edit_and_see(sink: InMemorySink, root: Path, text: str) -> None:
    (root / "src" / "app.py").write_text(text)
    await until(
        lambda: any(
            isinstance(e, FileChanged) and e.path == "src/app.py" and e.content == text.encode()
            for e in sink.events
        )
    )


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
async def test_the_watcher_survives_every_live_bad_change_of_a_bad_repo(tmp_path: Path, git: bool):
    bad = make_bad_repo(tmp_path / "bad", git=git)
    try:
        tree = WorkTree(bad.root, Git(bad.root) if git else None)
        async with watcher_of(tree, tree.list(), backoff_s=0.05, max_backoff_s=0.2) as (
            sink,
            watcher,
            task,
        ):
            for i, change in enumerate(live_bad_changes(bad.root)):
                start = len(sink.events)
                change.make()
                wanted = {**change.skipped, **{p: None for p in change.indexed}}
                await until(partial(covers, sink, start, set(wanted.items())))
                await quiet(sink)
                assert not task.done(), change.name
                await edit_and_see(sink, bad.root, f"x = {i}\n")
                seen = records(sink.events[start:])
                assert set(seen) == {*wanted.items(), ("src/app.py", None)}, change.name
                assert seen[-1] == ("src/app.py", None), change.name
                if change.name == "bad_name":  # the notifier cannot decode it: restarted
                    # (again whenever git status opens a racily clean undecodable file)
                    assert watcher.restarts >= 1
            assert not task.done()
    finally:
        bad.cleanup()
        for path in (bad.root / "live_locked",):
            if path.exists():
                path.chmod(0o755)


def covers(sink: InMemorySink, start: int, wanted: set[tuple[str, str | None]]) -> bool:
    return wanted <= set(records(sink.events[start:]))


class FlakyWatch:
    """awatch, except that the first ``failures`` notifiers fail when told to."""

    def __init__(self, failures: int = 1) -> None:
        self.failures, self.calls = failures, 0
        self.fail = asyncio.Event()

    def __call__(self, *paths: str, **kwargs: Any) -> AsyncIterator[set[tuple[Change, str]]]:
        self.calls += 1
        return self._failing() if self.calls <= self.failures else awatch(*paths, **kwargs)

    async def _failing(self) -> AsyncIterator[set[tuple[Change, str]]]:
        await self.fail.wait()  # watches nothing meanwhile: an outage
        raise WatchfilesRustInternalError("injected")
        yield set()  # an async generator, as awatch is


async def test_a_failed_notifier_is_restarted_and_the_outage_resynced(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1", "c.py": "c", "src/app.py": "0"})
    flaky = FlakyWatch()
    tree = WorkTree(repo.root, Git(repo.root))
    with capture_logs() as logs:
        async with watcher_of(tree, tree.list(), watch=flaky, backoff_s=0.01) as (sink, w, task):
            repo.write("a.py", "2")
            repo.write("b.py", "b")
            (repo.root / "c.py").unlink()
            flaky.fail.set()
            await until(lambda: len(sink.events) >= 3)
            await quiet(sink)
            assert summary(sink.events) == [  # git still lists the tracked c.py: read, gone
                ("file_changed", "a.py", b"2"),
                ("file_changed", "b.py", b"b"),
                ("file_deleted", "c.py", None),
            ]
            assert (w.restarts, flaky.calls, task.done()) == (1, 2, False)
            await edit_and_see(sink, repo.root, "after = 1\n")
            assert len(sink.events) == 4
    failed = [e for e in logs if e["event"] == "watch_failed"]
    assert [(e["error"], e["restarts"]) for e in failed] == [
        ("WatchfilesRustInternalError('injected')", 1)
    ]
    assert [e["event"] for e in logs].count("watch_restarted") == 1


async def test_a_notifier_that_always_fails_never_ends_the_watcher(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    flaky = FlakyWatch(failures=1000)
    flaky.fail.set()
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, ["a.py"], watch=flaky, backoff_s=0.001, max_backoff_s=0.01) as (
        sink,
        watcher,
        task,
    ):
        await until(lambda: watcher.restarts >= 5)
        assert not task.done() and sink.events == []  # resyncs found nothing new


def summary(events: list[EventBase]) -> list[tuple[str, str, bytes | None]]:
    return [
        (e.kind, e.path, e.content if isinstance(e, FileChanged) else None)
        for e in events
        if isinstance(e, FileChanged | FileDeleted)
    ]


@pytest.mark.skipif(
    not UNPRIVILEGED_CAN_RUN or os.environ.get("GAZETTEER_TEST_UNPRIVILEGED") == "1",
    reason="needs root and setpriv to drop privileges (and is not run from itself)",
)
def test_the_bad_repo_tests_pass_without_root_privileges():
    """As root, chmod 000 stops nothing: the bad-repo tests run again in a process that
    lost CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, where permission bits do apply."""
    env = {**os.environ, "GAZETTEER_TEST_UNPRIVILEGED": "1"}
    selection = [
        "tests/unit/test_scan.py",
        "tests/unit/test_file_reader.py",
        "tests/unit/test_watcher.py",
        "tests/unit/test_watcher_symlinks.py",
        "-k",
        "(bad_repo or unreadable or becomes_readable) and not without_root",
    ]
    args = [*UNPRIVILEGED, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*args, *selection], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert "failed" not in last and "error" not in last and " passed" in last, last


@pytest.mark.skipif(
    os.environ.get("GAZETTEER_TEST_UNPRIVILEGED") != "1" and os.geteuid() == 0,
    reason="root lists a chmod 000 directory; run by the unprivileged test above",
)
async def test_an_unreadable_directory_is_listed_once_it_becomes_readable(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"src/app.py": "0"})
    (repo.root / "locked").mkdir()
    repo.write("locked/a.py", "A = 1\n")
    (repo.root / "locked").chmod(0)
    tree = WorkTree(repo.root, Git(repo.root))
    try:
        known = tree.list()
        assert known == ["locked", "src/app.py"]
        async with watcher_of(tree, known, backoff_s=0.01) as (sink, watcher, task):
            (repo.root / "locked").chmod(0o755)
            await until(lambda: len(sink.events) >= 2)
            await quiet(sink)
            assert summary(sink.events) == [
                ("file_deleted", "locked", None),
                ("file_changed", "locked/a.py", b"A = 1\n"),
            ]
            repo.write("locked/a.py", "A = 2\n")  # watched inside after the rewatch
            await until(lambda: len(sink.events) >= 3)
            assert summary(sink.events)[2] == ("file_changed", "locked/a.py", b"A = 2\n")
            assert not task.done() and watcher.restarts == 0
    finally:
        (repo.root / "locked").chmod(0o755)


class OutOfWatches:
    """awatch on a machine out of inotify instances: notify fails to create its watcher
    unless told to poll."""

    def __init__(self) -> None:
        self.polling: list[bool] = []

    def __call__(self, *paths: str, **kwargs: Any) -> AsyncIterator[set[tuple[Change, str]]]:
        self.polling.append(bool(kwargs.get("force_polling")))
        if kwargs.get("force_polling"):
            return awatch(*paths, **{**kwargs, "poll_delay_ms": 50})
        return self._refused()

    async def _refused(self) -> AsyncIterator[set[tuple[Change, str]]]:
        raise WatchfilesRustInternalError(
            "Error creating recommended watcher: Too many open files (os error 24)"
        )
        yield set()  # an async generator, as awatch is


async def test_a_machine_out_of_inotify_instances_is_polled_and_saves_still_seen(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"src/app.py": "0"})
    refusing = OutOfWatches()
    tree = WorkTree(repo.root, Git(repo.root))
    with capture_logs() as logs:
        async with watcher_of(tree, tree.list(), watch=refusing, backoff_s=0.01) as (
            sink,
            watcher,
            task,
        ):
            await asyncio.sleep(1.0)  # the poller's first look at the tree, its baseline
            await edit_and_see(sink, repo.root, "polled = 1\n")
            assert (refusing.polling, watcher.restarts, task.done()) == ([False, True], 0, False)
    fell_back = [e for e in logs if e["event"] == "watch_fell_back_to_polling"]
    assert [e["error"] for e in fell_back] == [
        "Error creating recommended watcher: Too many open files (os error 24)"
    ]


def test_only_the_os_running_out_of_watches_is_read_as_such() -> None:
    assert out_of_os_watches(WatchfilesRustInternalError("... Too many open files (os error 24)"))
    assert out_of_os_watches(
        WatchfilesRustInternalError("OS file watch limit reached. (os error 28)")
    )
    assert not out_of_os_watches(WatchfilesRustInternalError("Unable to decode path"))
    assert not out_of_os_watches(WatchfilesRustInternalError("injected"))


async def test_more_notifiers_than_anyio_lends_threads_each_wait_at_once(tmp_path: Path):
    """AnyIO lends a process 40 worker threads by default and a notifier waits in one
    for as long as it watches: a `watch` of more repositories than that read each
    one's saves only when its notifier's turn came (minutes at 1,000 repositories)."""
    import anyio.to_thread

    count = 48  # more than AnyIO's default 40
    roots = []
    for i in range(count):
        root = tmp_path / f"r{i}"
        (root / "src").mkdir(parents=True)
        (root / "src" / "app.py").write_text("x = 0\n")
        roots.append(root)
    limiter = anyio.to_thread.current_default_thread_limiter()
    lent = limiter.total_tokens
    async with contextlib.AsyncExitStack() as stack:
        sinks = []
        for root in roots:
            tree = WorkTree(root, None)
            sink, _, _ = await stack.enter_async_context(watcher_of(tree, tree.list()))
            sinks.append(sink)
        await until(lambda: limiter.borrowed_tokens >= count)  # every notifier waiting
        # (Where this user is out of inotify instances, 128 by default, the notifiers poll,
        # and their recheck after POLL_RECHECK_S emits a save their first look missed.)
        await edit_and_see(sinks[-1], roots[-1], "x = 1\n")  # the last one started
        await edit_and_see(sinks[0], roots[0], "x = 2\n")
    assert limiter.total_tokens == lent  # given back as each notifier ended


@pytest.mark.parametrize(
    ("debounce_ms", "min_step_ms", "step"), [(100, 0, 50), (20, 0, 20), (100, 1000, 1000)]
)
async def test_the_notifiers_step_has_the_floor_a_process_of_many_repositories_sets(
    tmp_path: Path, debounce_ms: int, min_step_ms: int, step: int
):
    """`SourceOptions.paced` sets the floor: each look of a notifier's thread takes the
    interpreter's lock, so 1,000 notifiers cannot all look every 50 ms."""
    asked: list[int] = []

    def watch(*paths: str, **kwargs: Any) -> AsyncIterator[set[tuple[Change, str]]]:
        asked.append(kwargs["step"])
        return awatch(*paths, **kwargs)

    (tmp_path / "a.py").write_text("1")
    tree = WorkTree(tmp_path, None)
    source = Source("repo-1", str(tmp_path), InMemorySink(), producer="p1")
    watcher = Watcher(source, tree, debounce_ms=debounce_ms, watch=watch, min_step_ms=min_step_ms)
    stop = asyncio.Event()
    task = asyncio.create_task(watcher.run(stop))
    await watcher.watching.wait()
    stop.set()
    await asyncio.wait_for(task, 3.0)
    assert asked == [step]


class OutOfInstances:
    """awatch where the OS has no inotify instance left: the watcher polls instead."""

    def __call__(self, *paths: str, **kwargs: Any) -> AsyncIterator[set[tuple[Change, str]]]:
        if not kwargs["force_polling"]:
            raise OSError(24, "Too many open files")
        return awatch(*paths, **{**kwargs, "poll_delay_ms": 100})


async def test_a_polling_watcher_emits_a_save_made_in_the_same_second_as_the_one_before(
    tmp_path: Path,
):
    """notify's poll watcher sees a change only when the file's mtime moves to another
    whole second: the second of two saves within one second was lost until the file's
    next change. The watcher lists what a poller reported again `POLL_RECHECK_S` later."""
    import time

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 0\n")
    tree = WorkTree(tmp_path, None)
    async with watcher_of(tree, tree.list(), watch=OutOfInstances()) as (sink, watcher, _):
        assert watcher.polling
        await asyncio.sleep(1.05 - time.time() % 1)  # just past a second's start
        await edit_and_see(sink, tmp_path, "x = 1\n")
        await edit_and_see(sink, tmp_path, "x = 2\n")  # the same size, the same second


class FailingOnce(WorkTree):
    """A tree whose first listing fails as git does when a lock is held."""

    failed = False

    def list(self, under: str | None = None) -> list[str]:
        if not self.failed:
            self.failed = True
            raise GitError(["ls-files"], 128, "fatal: Unable to create index.lock")
        return super().list(under)


async def test_a_recheck_whose_git_call_fails_is_tried_again_and_the_watcher_goes_on(
    tmp_path: Path,
):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("x = 0\n")
    tree = FailingOnce(tmp_path, None)
    known = WorkTree(tmp_path, None).list()
    with capture_logs() as logs:
        async with watcher_of(tree, known, watch=OutOfInstances()) as (sink, _, task):
            await until(lambda: tree.failed)
            await edit_and_see(sink, tmp_path, "x = 1\n")
            assert not task.done()
    assert any(e["event"] == "watch_recheck_failed" for e in logs)
