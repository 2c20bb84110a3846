"""The git adapter against real repositories, and its parsers on bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from producers.git import (
    Git,
    GitError,
    TreeChange,
    is_work_tree,
    parse_batch,
    parse_commit_log,
    parse_raw_diff,
)
from tests.gitrepo import GitRepo

A, B = "a" * 40, "b" * 40


def test_raw_diff_parses_every_status_and_expands_nothing():
    out = (
        f":100644 100644 {A} {B} M\0src/a.py\0"
        f":000000 100755 {'0' * 40} {B} A\0bin/run\0"
        f":100644 000000 {A} {'0' * 40} D\0old.txt\0"
        f":100644 100644 {A} {B} R087\0from.py\0to dir/to.py\0"
    ).encode()
    assert parse_raw_diff(out) == [
        TreeChange("M", "src/a.py", None, "100644", B),
        TreeChange("A", "bin/run", None, "100755", B),
        TreeChange("D", "old.txt", None, None, None),
        TreeChange("R", "to dir/to.py", "from.py", "100644", B),
    ]


def test_raw_diff_of_the_work_tree_has_no_blob():
    out = f":100644 100644 {A} {'0' * 40} M\0a.py\0".encode()
    assert parse_raw_diff(out) == [TreeChange("M", "a.py", None, "100644", None)]


def test_commit_log_and_batch_parsers():
    log = f"{A}\x1f{B} {A}\x1f1700000000\x1fMerge it\0\n{B}\x1f\x1f5\x1froot\0".encode()
    infos = parse_commit_log(log)
    assert [(i.sha, i.parents, i.committed_at, i.subject) for i in infos] == [
        (A, (B, A), 1700000000.0, "Merge it"),
        (B, (), 5.0, "root"),
    ]
    batch = f"{A} blob 3\nx\ny\n{B} missing\n{B} blob 0\n\n".encode()
    assert parse_batch(batch) == {A: b"x\ny", B: b""}


def test_repository_questions(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.txt": "a\n", "sub/b.txt": "b\n"})
    git = Git(repo.root)
    assert is_work_tree(repo.root) and is_work_tree(repo.root / "sub")
    assert not is_work_tree(tmp_path)
    assert Git(repo.root / "sub").toplevel() == repo.root.resolve()
    assert git.branch() == "main"
    assert git.head() == repo.head()
    assert git.commit_exists(repo.head()) and not git.commit_exists("0" * 40)
    assert git.remote_url() is None
    repo.git("remote", "add", "origin", "git@example.com:org/app.git")
    assert git.remote_url() == "git@example.com:org/app.git"
    repo.git("checkout", "-q", "--detach")
    assert git.branch() is None


def test_unborn_branch_has_no_head(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r")
    assert Git(repo.root).head() is None
    assert Git(repo.root).branch() == "main"


def test_first_parent_log_skips_merged_branch_commits(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.txt": "1"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("f.txt", "f")
    feature = repo.commit("feature work")
    repo.git("checkout", "-q", "main")
    repo.write("a.txt", "2")
    main = repo.commit("main work")
    repo.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
    merge = repo.head()
    git = Git(repo.root)
    log = git.first_parent_log(base, merge, limit=10)
    assert [c.sha for c in log] == [main, merge]
    assert log[1].parents == (main, feature) and log[1].subject == "merge feature"
    assert [c.path for c in git.commit_changes(log[1])] == ["f.txt"]
    assert [c.sha for c in git.first_parent_log(None, merge, limit=2)] == [main, merge]
    assert git.commit_info(base).parents == ()


def test_commit_changes_detect_renames_and_root_commits(tmp_path: Path):
    body = "".join(f"line {i}\n" for i in range(50))
    repo = GitRepo.create(tmp_path / "r", {"old.py": body, "gone.txt": "x"})
    git = Git(repo.root)
    root_commit = git.commit_info(repo.head())
    assert {(c.status, c.path) for c in git.commit_changes(root_commit)} == {
        ("A", "gone.txt"),
        ("A", "old.py"),
    }
    repo.git("mv", "old.py", "new.py")
    (repo.root / "gone.txt").unlink()
    info = git.commit_info(repo.commit("rename"))
    changes = git.commit_changes(info)
    assert [(c.status, c.old_path, c.path) for c in changes] == [
        ("D", None, "gone.txt"),
        ("R", "old.py", "new.py"),
    ]
    assert [(c.status, c.path) for c in git.diff(root_commit.sha, info.sha)] == [
        ("D", "gone.txt"),
        ("A", "new.py"),
        ("D", "old.py"),
    ]


def test_blobs_reads_contents_up_to_the_cap_in_one_batch(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"small": "abc", "big": "x" * 100, "nul": b"a\0b"})
    git = Git(repo.root)
    entries = git.tree_entries(repo.head(), ["small", "big", "nul", "absent"])
    assert set(entries) == {"small", "big", "nul"}
    blobs = git.blobs([sha for _, sha in entries.values()], max_bytes=10)
    by_path = {p: blobs[sha] for p, (_, sha) in entries.items()}
    assert (by_path["small"].size, by_path["small"].data) == (3, b"abc")
    assert (by_path["big"].size, by_path["big"].data) == (100, None)
    assert by_path["nul"].data == b"a\0b"
    assert git.read_paths(repo.head(), ["small", "big", "absent"], max_bytes=10) == {
        "small": by_path["small"],
        "big": by_path["big"],
    }


def test_listing_is_gitignore_aware_and_literal(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {".gitignore": "*.log\nbuild/\n", "a.py": "a"})
    repo.write("*.py", "a file with a glob for a name")
    repo.write("untracked.txt", "u")
    repo.write("debug.log", "ignored")
    repo.write("build/out.js", "ignored")
    GitRepo.create(repo.root / "nested", {"n.txt": "nested repository"})
    git = Git(repo.root)
    assert git.ls_files() == ["*.py", ".gitignore", "a.py", "untracked.txt"]
    assert git.ls_files(["*.py"]) == ["*.py"]
    assert git.ls_files(tracked=False) == ["*.py", "untracked.txt"]
    assert git.ignored(["debug.log", "build/out.js", "a.py", "build"]) == {
        "debug.log",
        "build/out.js",
        "build",
    }


def test_dirty_ignores_ignored_files_only(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {".gitignore": "*.log\n", "a.py": "a"})
    git = Git(repo.root)
    assert not git.is_dirty()
    repo.write("x.log", "ignored")
    assert not git.is_dirty()
    repo.write("new.py", "untracked")
    assert git.is_dirty()
    os.unlink(repo.root / "new.py")
    repo.write("a.py", "modified")
    assert git.is_dirty()


def test_failures_name_the_command_and_stderr(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a": "a"})
    with pytest.raises(GitError) as failure:
        Git(repo.root).diff("nope", repo.head())
    assert "diff-tree" in str(failure.value) and "nope" in failure.value.stderr
