"""The watcher with real file writes, and a whole producer session."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from watchfiles import Change

from producers.events import EventBase, FileChanged, ScanCompleted
from producers.git import Git
from producers.scan import WorkTree
from producers.session import SourceOptions, describe_repository, run_source
from producers.source import InMemorySink, Source
from producers.watcher import KnownFiles, Watcher, expand_deletions, relative_changes
from tests.gitrepo import GitRepo

TIMEOUT_S = 3.0


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

    assert [(getattr(e, "kind", None), getattr(e, "path", None)) for e in sink.events[:7]] == [
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
