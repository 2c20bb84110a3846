"""The watcher places no OS watch outside the repository, nor through a symlink (issue 15).

Where the watches are is read from the kernel (/proc/self/fdinfo, tests/inotify_watches.py),
not from the watcher: a directory is matched by its inode, whatever path reached it.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from producers.events import FileChanged
from producers.git import Git
from producers.scan import WorkTree
from producers.watch_plan import watch_directories
from tests.badrepo import make_bad_repo
from tests.gitrepo import GitRepo
from tests.inotify_watches import watched_under
from tests.unit.test_watcher import quiet, records, until, watcher_of

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads inotify from /proc")


def make_outside(top: Path) -> Path:
    """A tree out of the repository, with subdirectories a symlink would lead into."""
    for directory in ("a/b", "c"):
        (top / directory).mkdir(parents=True)
    (top / "a" / "far.py").write_text("never watched\n")
    return top


def linked_repo(tmp_path: Path) -> tuple[GitRepo, Path]:
    """A repository with a directory symlink out (``ext``) and two back in."""
    outside = make_outside(tmp_path / "outside")
    repo = GitRepo.create(tmp_path / "r", {"src/app.py": "0\n", "src/sub/x.py": "x = 0\n"})
    (repo.root / "ext").symlink_to(outside, target_is_directory=True)
    (repo.root / "inlink").symlink_to(repo.root / "src", target_is_directory=True)
    (repo.root / "src" / "up").symlink_to("..", target_is_directory=True)  # a loop, inside
    return repo, outside


def contents(events: list, path: str) -> list[bytes | None]:
    return [e.content for e in events if isinstance(e, FileChanged) and e.path == path]


def test_the_directories_watched_are_the_real_ones_without_git(tmp_path: Path):
    repo, _ = linked_repo(tmp_path)
    (repo.root / "src" / ".git").mkdir()  # a nested repository's internals: never watched
    assert watch_directories(repo.root) == ["", "src", "src/sub"]


async def test_no_watch_is_placed_outside_the_repository_nor_through_a_link(tmp_path: Path):
    repo, outside = linked_repo(tmp_path)
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, tree.list()) as (sink, _, task):
        assert watched_under(outside) == set()
        assert watched_under(repo.root) == {"", "src", "src/sub"}  # once each, no .git

        (outside / "a" / "far.py").write_text("changed outside\n")
        (outside / "c" / "new.py").write_text("made outside\n")
        (repo.root / "src" / "sub" / "x.py").write_text("x = 1\n")
        await until(lambda: contents(sink.events, "src/sub/x.py") == [b"x = 1\n"])
        await quiet(sink)
        assert records(sink.events) == [("src/sub/x.py", None)]  # nothing via a link
        assert not task.done()


async def test_a_directory_made_live_is_watched_and_its_first_files_are_seen(tmp_path: Path):
    repo, outside = linked_repo(tmp_path)
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, tree.list()) as (sink, _, _task):
        (repo.root / "src" / "new").mkdir()
        (repo.root / "src" / "new" / "m.py").write_text("m = 1\n")  # before any rewatch
        (repo.root / "deep" / "a" / "b").mkdir(parents=True)
        (repo.root / "deep" / "a" / "b" / "f.py").write_text("f = 1\n")
        await until(
            lambda: {"src/new/m.py", "deep/a/b/f.py"} <= {p for p, _ in records(sink.events)}
        )
        await until(lambda: {"src/new", "deep/a/b"} <= watched_under(repo.root))
        await quiet(sink)

        (repo.root / "src" / "new" / "m.py").write_text("m = 2\n")
        (repo.root / "deep" / "a" / "b" / "g.py").write_text("g = 1\n")
        await until(lambda: contents(sink.events, "src/new/m.py")[-1:] == [b"m = 2\n"])
        await until(lambda: contents(sink.events, "deep/a/b/g.py") == [b"g = 1\n"])
        assert watched_under(outside) == set()


async def test_a_directory_moved_in_with_a_link_out_is_watched_but_not_the_link(tmp_path: Path):
    repo, outside = linked_repo(tmp_path)
    stage = tmp_path / "stage" / "pkg"
    (stage / "inner").mkdir(parents=True)
    (stage / "inner" / "p.py").write_text("p = 1\n")
    (stage / "out").symlink_to(outside, target_is_directory=True)
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, tree.list()) as (sink, _, _task):
        shutil.move(stage, repo.root / "pkg")
        (repo.root / "live_ext").symlink_to(outside / "a", target_is_directory=True)
        wanted = {
            ("pkg/inner/p.py", None),
            ("pkg/out", "symlink_outside_repository"),
            ("live_ext", "symlink_outside_repository"),
        }
        await until(lambda: wanted <= set(records(sink.events)))
        await until(lambda: {"pkg", "pkg/inner"} <= watched_under(repo.root))
        assert watched_under(outside) == set()

        (repo.root / "pkg" / "inner" / "p.py").write_text("p = 2\n")
        await until(lambda: contents(sink.events, "pkg/inner/p.py")[-1:] == [b"p = 2\n"])


async def test_a_renamed_or_recreated_directory_keeps_producing_events(tmp_path: Path):
    repo, outside = linked_repo(tmp_path)
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, tree.list()) as (sink, _, _task):
        os.rename(repo.root / "src" / "sub", repo.root / "src" / "moved")
        await until(lambda: ("src/moved/x.py", None) in records(sink.events))
        await until(lambda: "src/moved" in watched_under(repo.root))
        (repo.root / "src" / "moved" / "x.py").write_text("x = 2\n")
        await until(lambda: contents(sink.events, "src/moved/x.py")[-1:] == [b"x = 2\n"])

        shutil.rmtree(repo.root / "src" / "moved")
        await until(lambda: "src/moved" not in watched_under(repo.root))
        (repo.root / "src" / "moved").mkdir()
        (repo.root / "src" / "moved" / "y.py").write_text("y = 1\n")
        await until(lambda: contents(sink.events, "src/moved/y.py") == [b"y = 1\n"])
        assert watched_under(outside) == set()


async def test_an_ignored_directory_made_live_is_watched_once_revealed(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {".gitignore": "build/\n", "src/app.py": "0\n"})
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, tree.list()) as (sink, watcher, _task):
        (repo.root / "build" / "x").mkdir(parents=True)
        (repo.root / "build" / "x" / "a.py").write_text("a = 1\n")
        (repo.root / "src" / "app.py").write_text("1\n")
        await until(lambda: contents(sink.events, "src/app.py") == [b"1\n"])
        await quiet(sink)
        assert records(sink.events) == [("src/app.py", None)]
        assert watcher.rewatches == 0  # an ignored directory costs no rewatch
        assert "build/x" not in watched_under(repo.root)

        (repo.root / ".gitignore").write_text("")
        await until(lambda: contents(sink.events, "build/x/a.py") == [b"a = 1\n"])
        await until(lambda: "build/x" in watched_under(repo.root))
        (repo.root / "build" / "x" / "a.py").write_text("a = 2\n")
        await until(lambda: contents(sink.events, "build/x/a.py")[-1:] == [b"a = 2\n"])


async def test_the_bad_repo_places_no_watch_in_etc_nor_in_its_outside_tree(tmp_path: Path):
    bad = make_bad_repo(tmp_path / "bad", git=True)
    try:
        tree = WorkTree(bad.root, Git(bad.root))
        async with watcher_of(tree, tree.list(), backoff_s=0.05) as (sink, _, task):
            stage = tmp_path / "stage" / "moved"
            stage.mkdir(parents=True)
            (stage / "etc").symlink_to("/etc", target_is_directory=True)
            shutil.move(stage, bad.root / "moved")
            (bad.root / "live_etc").symlink_to("/etc", target_is_directory=True)
            wanted = {
                ("moved/etc", "symlink_outside_repository"),
                ("live_etc", "symlink_outside_repository"),
            }
            await until(lambda: wanted <= set(records(sink.events)))
            await until(lambda: "moved" in watched_under(bad.root))
            (bad.root / "src" / "app.py").write_text("x = 1\n")
            await until(lambda: contents(sink.events, "src/app.py") == [b"x = 1\n"])
            assert watched_under(Path("/etc")) == set()
            assert watched_under(bad.outside) == set()
            assert not task.done()
    finally:
        bad.cleanup()


async def test_a_watched_directory_replaced_by_a_link_out_is_watched_anew(tmp_path: Path):
    """Had inotify followed the new link (the walk listed the directory just before),
    the rewatch that the replacement causes removes that watch."""
    repo, outside = linked_repo(tmp_path)
    tree = WorkTree(repo.root, Git(repo.root))
    async with watcher_of(tree, tree.list()) as (sink, watcher, _task):
        shutil.rmtree(repo.root / "src" / "sub")
        (repo.root / "src" / "sub").symlink_to(outside, target_is_directory=True)
        await until(lambda: ("src/sub", "symlink_outside_repository") in records(sink.events))
        await until(lambda: watcher.rewatches == 1)
        assert watched_under(repo.root) == {"", "src"}
        assert watched_under(outside) == set()
