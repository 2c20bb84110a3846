"""The initial scan and the reconciliation, on real repositories and plain directories."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from producers.events import EventBase, FileChanged, ScanCompleted
from producers.git import Git
from producers.scan import IgnoreRules, ScanOptions, WorkTree, full_scan, reconcile, walk
from producers.source import InMemorySink, Source
from tests.badrepo import (
    LOCKED_DIR,
    LOCKED_DIR_FILE,
    LOCKED_FILE,
    BadRepo,
    make_bad_repo,
    write_named,
)
from tests.gitrepo import GitRepo

OPTIONS = ScanOptions(max_bytes=100, batch_size=200)


def make_source() -> tuple[Source, InMemorySink]:
    sink = InMemorySink()
    return Source("repo-1", "/r", sink, producer="p1", clock=lambda: 1.0), sink


def summary(events: list[EventBase]) -> list[tuple[object, ...]]:
    """(seq, kind, path, skipped) of file events; (seq, kind) of the rest."""
    out: list[tuple[object, ...]] = []
    for e in events:
        if isinstance(e, FileChanged):
            out.append((e.seq, e.kind, e.path, e.skipped))
        else:
            out.append((e.seq, getattr(e, "kind", None), getattr(e, "path", None)))
    return out


def git_tree(repo: GitRepo) -> WorkTree:
    return WorkTree(repo.root, Git(repo.root))


async def test_full_scan_of_a_work_tree(tmp_path: Path):
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    repo = GitRepo.create(
        tmp_path / "r",
        {
            ".gitignore": "*.log\nbuild/\n",
            "src/app.py": "import os\n",
            "logo.png": b"\x89PNG\0\0",
            "data.csv": "x" * 101,
        },
    )
    (repo.root / "escape.txt").symlink_to(outside)
    repo.write("notes.md", "untracked, not ignored")
    repo.write("debug.log", "ignored")
    repo.write("build/out.js", "ignored")
    head = repo.head()
    source, sink = make_source()

    result = await full_scan(source, git_tree(repo), OPTIONS)

    assert summary(sink.events) == [
        (1, "file_changed", ".gitignore", None),
        (2, "file_changed", "data.csv", "too_large"),
        (3, "file_changed", "escape.txt", "symlink_outside_repository"),
        (4, "file_changed", "logo.png", "binary"),
        (5, "file_changed", "notes.md", None),
        (6, "file_changed", "src/app.py", None),
        (7, "scan_completed", None),
    ]
    changed = [e for e in sink.events if isinstance(e, FileChanged)]
    assert {(e.origin, e.commit, e.working_tree) for e in changed} == {("scan", head, True)}
    assert changed[5].content == b"import os\n" and changed[1].size == 101
    assert changed[1].content is None and changed[1].content_hash is None
    last = sink.events[-1]
    assert isinstance(last, ScanCompleted)
    assert (last.commit, last.branch, last.files, last.deleted) == (head, "main", 6, 0)
    assert last.full and last.working_tree_dirty  # the untracked notes.md
    assert result is not None and "notes.md" in result.listed


async def test_scan_emits_in_batches_with_contiguous_seqs(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {f"f{i}.py": str(i) for i in range(5)})
    source, sink = make_source()
    await full_scan(source, git_tree(repo), ScanOptions(batch_size=2))
    assert [e.seq for e in sink.events] == [1, 2, 3, 4, 5, 6]
    # one status per emit: three batches of files and the barrier
    assert [s.last_seq for s in sink.statuses] == [2, 4, 5, 6]


async def test_scan_of_a_plain_directory_applies_every_gitignore(tmp_path: Path):
    root = tmp_path / "plain"
    files = {
        ".gitignore": "*.log\n/dist/\n",
        "a.py": "a",
        "x.log": "ignored",
        "dist/bundle.js": "ignored",
        "pkg/dist/keep.js": "only /dist at the root is ignored",
        "pkg/.gitignore": "*.tmp\n!keep.tmp\n",
        "pkg/b.tmp": "ignored below pkg",
        "pkg/keep.tmp": "re-included",
        "c.tmp": "not ignored at the root",
        ".git/config": "never listed",
        ".github/ci.yml": "a dot directory",
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "far.py").write_text("never read")
    (root / "outlink").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    source, sink = make_source()

    await full_scan(source, WorkTree(root, None), OPTIONS)

    assert summary(sink.events) == [
        (1, "file_changed", ".github/ci.yml", None),
        (2, "file_changed", ".gitignore", None),
        (3, "file_changed", "a.py", None),
        (4, "file_changed", "c.tmp", None),
        (5, "file_changed", "outlink", "symlink_outside_repository"),
        (6, "file_changed", "pkg/.gitignore", None),
        (7, "file_changed", "pkg/dist/keep.js", None),
        (8, "file_changed", "pkg/keep.tmp", None),
        (9, "scan_completed", None),
    ]
    last = sink.events[-1]
    assert isinstance(last, ScanCompleted)
    assert (last.commit, last.branch, last.working_tree_dirty) == (None, None, False)


def test_ignore_rules_follow_git_precedence(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    (tmp_path / ".gitignore").write_text("*.gen\nvendor/\n")
    (tmp_path / "sub" / ".gitignore").write_text("!keep.gen\n")
    rules = IgnoreRules()
    walk(tmp_path, rules)
    assert rules.ignored("a.gen") and rules.ignored("sub/a.gen")
    assert not rules.ignored("sub/keep.gen")  # a deeper file overrides
    assert rules.ignored("vendor", is_dir=True) and rules.ignored("vendor/x/keep.gen")
    assert not rules.ignored("vendor")  # a file named vendor is not the directory


async def test_reconcile_emits_only_what_differs(tmp_path: Path):
    body = "".join(f"line {i}\n" for i in range(8))
    repo = GitRepo.create(
        tmp_path / "r",
        {".gitignore": "*.log\n", "keep.py": "k", "mod.py": "1", "gone.py": "g", "old.py": body},
    )
    since = repo.head()
    repo.write("mod.py", "2")
    (repo.root / "gone.py").unlink()
    repo.git("mv", "old.py", "new.py")
    repo.commit("second")
    repo.write("keep.py", "dirty")  # uncommitted
    repo.write("fresh.py", "untracked")
    repo.write("x.log", "ignored")
    source, sink = make_source()

    result = await reconcile(source, git_tree(repo), since, OPTIONS)

    assert summary(sink.events) == [
        (1, "file_changed", "fresh.py", None),
        (2, "file_deleted", "gone.py"),
        (3, "file_changed", "keep.py", None),
        (4, "file_changed", "mod.py", None),
        (5, "file_changed", "new.py", None),
        (6, "file_deleted", "old.py"),
        (7, "scan_completed", None),
    ]
    last = sink.events[-1]
    assert isinstance(last, ScanCompleted)
    assert (last.full, last.files, last.deleted, last.commit) == (False, 4, 2, repo.head())
    assert result is not None and result.listed == (
        ".gitignore",
        "fresh.py",
        "keep.py",
        "mod.py",
        "new.py",
    )


async def test_reconcile_falls_back_to_a_full_scan_when_the_commit_is_gone(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "a"})
    source, sink = make_source()
    await reconcile(source, git_tree(repo), "f" * 40, OPTIONS)
    assert summary(sink.events) == [(1, "file_changed", "a.py", None), (2, "scan_completed", None)]
    assert isinstance(sink.events[-1], ScanCompleted) and sink.events[-1].full


async def test_progress_is_logged_on_a_900_file_repository(tmp_path: Path):
    root = tmp_path / "plain"
    root.mkdir()
    for i in range(900):
        (root / f"m{i:03}.py").write_text(f"x = {i}\n")
    source, _ = make_source()
    with capture_logs() as logs:
        await full_scan(source, WorkTree(root, None), ScanOptions(batch_size=200))
    progress = [e for e in logs if e["event"] == "scan_progressed"]
    assert [e["files_done"] for e in progress] == [200, 400, 600, 800, 900]
    assert {e["files_total"] for e in progress} == {900}
    assert [e["event"] for e in logs][-1] == "scan_completed"


async def test_a_stopped_scan_emits_no_barrier(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {f"f{i}.py": str(i) for i in range(4)})
    source, sink = make_source()
    stop = asyncio.Event()
    stop.set()
    assert await full_scan(source, git_tree(repo), ScanOptions(batch_size=2), stop=stop) is None
    assert sink.events == []


async def test_reconcile_rereads_the_previous_sessions_dirty_paths(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "a", "b.py": "b"})
    source, sink = make_source()
    await reconcile(source, git_tree(repo), repo.head(), OPTIONS, extra_paths=["a.py", "tmp.py"])
    assert summary(sink.events) == [
        (1, "file_changed", "a.py", None),
        (2, "file_deleted", "tmp.py"),
        (3, "scan_completed", None),
    ]
    source, sink = make_source()
    await reconcile(source, git_tree(repo), repo.head(), OPTIONS)
    assert summary(sink.events) == [(1, "scan_completed", None)]


@pytest.fixture
def bad_repo_of(tmp_path: Path) -> Iterator[Callable[[bool], BadRepo]]:
    made: list[BadRepo] = []

    def make(git: bool) -> BadRepo:
        made.append(make_bad_repo(tmp_path / "bad", git=git, max_bytes=OPTIONS.max_bytes))
        return made[-1]

    yield make
    for bad in made:
        bad.cleanup()


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
async def test_a_bad_repo_scan_records_every_skip_and_indexes_the_rest(
    bad_repo_of: Callable[[bool], BadRepo], git: bool
):
    bad = bad_repo_of(git)
    source, sink = make_source()
    tree = WorkTree(bad.root, Git(bad.root) if git else None)

    result = await full_scan(source, tree, OPTIONS)

    changed = [e for e in sink.events if isinstance(e, FileChanged)]
    assert {e.path: e.skipped for e in changed} == bad.expected()
    assert len(changed) == len(bad.expected())  # one record per path
    assert {e.path: e.content for e in changed if e.skipped is None} == bad.indexed
    assert all(e.content is None and e.content_hash is None for e in changed if e.skipped)
    last = sink.events[-1]
    assert isinstance(last, ScanCompleted) and last.files == len(changed)
    assert result is not None and b"src/bad\xffname.py" in map(os.fsencode, result.listed)


def test_the_bad_repo_probes_what_this_process_can_read(bad_repo_of: Callable[[bool], BadRepo]):
    bad = bad_repo_of(False)
    if os.environ.get("GAZETTEER_TEST_UNPRIVILEGED") == "1":  # see test_watcher.py
        assert bad.skipped[LOCKED_DIR] == "unreadable_directory"
        assert bad.skipped[LOCKED_FILE] == "unreadable"
    elif os.geteuid() == 0:
        assert LOCKED_DIR_FILE in bad.indexed and LOCKED_FILE in bad.indexed


async def test_an_escaped_name_that_is_a_real_file_wins(tmp_path: Path):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "bad\\xffname.py").write_text("real")  # a literal backslash, x, f, f
    write_named(root, b"bad\xffname.py", b"undecodable")
    write_named(root, b"other\xfe.py", b"undecodable")
    source, sink = make_source()

    await full_scan(source, WorkTree(root, None), OPTIONS)

    assert summary(sink.events) == [
        (1, "file_changed", "bad\\xffname.py", None),
        (2, "file_changed", "other\\xfe.py", "undecodable_name"),
        (3, "scan_completed", None),
    ]
    assert isinstance(sink.events[0], FileChanged) and sink.events[0].content == b"real"


async def test_reconcile_records_what_git_does_not_list(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "a", "sub/b.py": "b"})
    os.mkfifo(repo.root / "sub" / "pipe")
    repo.write(".gitignore", "*.ignored\n")
    os.mkfifo(repo.root / "x.ignored")
    source, sink = make_source()

    await reconcile(source, git_tree(repo), repo.head(), OPTIONS)

    assert summary(sink.events) == [
        (1, "file_changed", ".gitignore", None),
        (2, "file_changed", "sub/pipe", "not_a_regular_file"),
        (3, "scan_completed", None),
    ]
