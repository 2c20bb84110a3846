"""The commit follower on real repositories: commits, merges, resets, branch switches."""

from __future__ import annotations

import asyncio
from pathlib import Path

from producers.events import (
    CommitObserved,
    EventBase,
    FileChanged,
    FileDeleted,
    ScanCompleted,
)
from producers.file_reader import FileRead
from producers.follower import CommitFollower, file_drafts, plan_move
from producers.git import CommitInfo, Git, TreeChange
from producers.source import InMemorySink, Source
from tests.gitrepo import GitRepo


def make_follower(repo: GitRepo, **kwargs: object) -> tuple[CommitFollower, Source, InMemorySink]:
    sink = InMemorySink()
    source = Source("repo-1", str(repo.root), sink, producer="p1", clock=lambda: 1.0)
    options = {"last_commit": repo.head(), "branch": "main", "max_bytes": 100, "poll_s": 0.01}
    follower = CommitFollower(source, Git(repo.root), **{**options, **kwargs})  # type: ignore[arg-type]
    return follower, source, sink


def summary(events: list[EventBase]) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for e in events:
        if isinstance(e, FileChanged):
            out.append((e.kind, e.path, e.skipped, e.commit))
        elif isinstance(e, FileDeleted):
            out.append((e.kind, e.path, e.commit))
        else:
            sha = getattr(e, "sha", None) or getattr(e, "commit", None)
            out.append((getattr(e, "kind", None), sha))
    return out


def info(sha: str, *parents: str) -> CommitInfo:
    return CommitInfo(sha, parents, 0.0, "")


def test_plan_follows_only_a_first_parent_chain_from_the_old_head():
    a, b, c = "a" * 40, "b" * 40, "c" * 40
    assert plan_move(a, a, [], 10).kind == "none"
    assert plan_move(a, None, [], 10).kind == "none"
    assert plan_move(a, c, [info(b, a), info(c, b)], 10).commits == (info(b, a), info(c, b))
    assert plan_move(a, c, [info(c, b)], 10).kind == "reset"  # history rewritten
    assert plan_move(c, a, [], 10).kind == "reset"  # moved back
    assert plan_move(a, c, [info(b, a), info(c, b)], 1).kind == "reset"  # too many
    assert plan_move(None, b, [info(a), info(b, a)], 10).kind == "commits"


def test_a_rename_is_a_deletion_and_a_change():
    changes = [TreeChange("R", "new.py", "old.py", "100644", "b" * 40), TreeChange("D", "x.py")]
    reads = {"new.py": FileRead(b"x", "h", 1)}
    drafts = file_drafts(changes, reads, "c" * 40)
    assert [(d.cls.__name__, d.fields["path"]) for d in drafts] == [
        ("FileDeleted", "old.py"),
        ("FileChanged", "new.py"),
        ("FileDeleted", "x.py"),
    ]
    assert {(d.fields["origin"], d.fields["working_tree"]) for d in drafts} == {("commit", False)}


async def test_new_commits_are_followed_in_order(tmp_path: Path):
    body = "".join(f"line {i}\n" for i in range(8))
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1", "old.py": body, "gone.txt": "g"})
    follower, source, sink = make_follower(repo)
    repo.write("a.py", "2")
    repo.write("b.bin", b"\0\1\2")
    repo.write("big.txt", "x" * 101)
    second = repo.commit("second")
    repo.git("mv", "old.py", "new.py")
    (repo.root / "gone.txt").unlink()
    (repo.root / "link.py").symlink_to("a.py")
    (repo.root / "out.txt").symlink_to("../../etc/passwd")
    third = repo.commit("third")

    assert await follower.poll_once()

    assert summary(sink.events) == [
        ("commit_observed", second),
        ("file_changed", "a.py", None, second),
        ("file_changed", "b.bin", "binary", second),
        ("file_changed", "big.txt", "too_large", second),
        ("commit_completed", second),
        ("commit_observed", third),
        ("file_deleted", "gone.txt", third),
        ("file_changed", "link.py", None, third),
        ("file_deleted", "old.py", third),
        ("file_changed", "new.py", None, third),
        ("file_changed", "out.txt", "symlink_outside_repository", third),
        ("commit_completed", third),
    ]
    assert [e.seq for e in sink.events] == list(range(1, 13))
    observed = sink.events[5]
    assert isinstance(observed, CommitObserved)
    assert observed.parents == (second,) and observed.subject == "third"
    assert observed.changed_paths == ("gone.txt", "link.py", "new.py", "old.py", "out.txt")
    link = sink.events[7]
    assert isinstance(link, FileChanged) and link.content == b"2"  # the target's contents
    assert (source.head_commit, source.branch, follower.last_commit) == (third, "main", third)
    assert not await follower.poll_once()  # nothing new
    assert len(sink.events) == 12


async def test_a_merge_is_one_commit_against_its_first_parent(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    follower, _, sink = make_follower(repo)
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("f.py", "feature")
    repo.commit("feature")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merge", "feature")
    merge = repo.head()
    await follower.poll_once()
    assert summary(sink.events) == [
        ("commit_observed", merge),
        ("file_changed", "f.py", None, merge),
        ("commit_completed", merge),
    ]


async def test_a_reset_emits_the_diff_and_a_reconciliation_barrier(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1", "b.py": "b"})
    first = repo.head()
    repo.write("a.py", "2")
    (repo.root / "b.py").unlink()
    repo.write("c.py", "c")
    follower, _, sink = make_follower(repo, last_commit=repo.commit("second"))
    repo.git("reset", "-q", "--hard", first)

    assert await follower.poll_once()

    assert summary(sink.events) == [
        ("file_changed", "a.py", None, first),
        ("file_changed", "b.py", None, first),
        ("file_deleted", "c.py", first),
        ("scan_completed", first),
    ]
    barrier = sink.events[-1]
    assert isinstance(barrier, ScanCompleted)
    assert (barrier.full, barrier.files, barrier.deleted, barrier.branch) == (False, 2, 1, "main")
    content = sink.events[0]
    assert isinstance(content, FileChanged) and content.content == b"1"


async def test_a_branch_switch_follows_the_new_branch(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    base = repo.head()
    repo.git("checkout", "-q", "-b", "other")
    repo.write("o.py", "other")
    other = repo.commit("other")
    repo.git("checkout", "-q", "main")
    repo.write("m.py", "main")
    follower, source, sink = make_follower(repo, last_commit=repo.commit("main"))
    repo.git("checkout", "-q", "other")

    await follower.poll_once()

    assert summary(sink.events) == [
        ("file_deleted", "m.py", other),
        ("file_changed", "o.py", None, other),
        ("scan_completed", other),
    ]
    assert (source.branch, follower.branch, source.head_commit) == ("other", "other", other)
    repo.write("o2.py", "more")
    newer = repo.commit("more on other")
    await follower.poll_once()
    assert summary(sink.events)[3:] == [
        ("commit_observed", newer),
        ("file_changed", "o2.py", None, newer),
        ("commit_completed", newer),
    ]
    assert base != other


async def test_the_follower_stops_when_asked(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    follower, _, sink = make_follower(repo)
    stop = asyncio.Event()
    task = asyncio.create_task(follower.run(stop))
    repo.write("a.py", "2")
    sha = repo.commit("while running")
    for _ in range(200):
        if sink.events:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 1.0)
    assert summary(sink.events)[-1] == ("commit_completed", sha)


async def test_a_committed_secret_is_skipped_by_name_or_redacted(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    follower, _, sink = make_follower(repo, max_bytes=1000)
    aws = "AKIA" + "Z7Q3R5T2W4Y6U3P7"
    repo.write(".env", f"AWS={aws}\n")
    repo.write("conf.py", f"AWS = '{aws}'\n")
    (repo.root / "env.txt").symlink_to(".env")
    sha = repo.commit("secrets")

    assert await follower.poll_once()

    changed = {e.path: e for e in sink.events if isinstance(e, FileChanged)}
    assert {p: (e.skipped, e.content) for p, e in changed.items()} == {
        ".env": ("secret_file", None),
        "conf.py": (None, b"AWS = '[REDACTED:aws-access-token]'\n"),
        "env.txt": ("secret_file", None),
    }
    assert all(e.commit == sha for e in changed.values())


def test_one_process_following_many_repositories_spaces_its_polls_and_rechecks():
    """A watcher of 1,000 repositories rechecked each every 5 s: ~400 git processes a
    second with nothing changing. Its total now stays within the per-process rates."""
    from producers.session import (
        FOLLOW_POLLS_PER_S,
        FOLLOW_RECHECKS_PER_S,
        NOTIFIER_STEPS_PER_S,
        SourceOptions,
    )

    base = SourceOptions(poll_s=0.25)
    assert base.paced(1) == base
    assert base.paced(50) == base  # 50 / 500 polls and 50 / 10 rechecks: within both
    many = base.paced(1000)
    assert (many.poll_s, many.recheck_s, many.min_step_ms) == (2.0, 100.0, 1000)
    assert (
        1000 / many.poll_s <= FOLLOW_POLLS_PER_S and 1000 / many.recheck_s <= FOLLOW_RECHECKS_PER_S
    )
    # The notifiers' threads: 1,000 of them looking every 50 ms took the interpreter's
    # lock 20,000 times a second; at the floor, 1,000 times.
    assert 1000 * 1000 / many.min_step_ms <= NOTIFIER_STEPS_PER_S
    assert base.paced(200).min_step_ms == 200
    assert (many.max_bytes, many.heartbeat_s) == (base.max_bytes, base.heartbeat_s)


async def test_refs_that_did_not_move_are_not_asked_of_git_before_the_recheck(tmp_path: Path):
    repo = GitRepo.create(tmp_path / "r", {"a.py": "1"})
    follower, _, _ = make_follower(repo, recheck_s=3600.0)
    asked: list[str] = []
    head = follower.git.head

    def counted() -> str | None:
        asked.append("head")
        return head()

    follower.git.head = counted  # type: ignore[method-assign]
    assert await follower.poll_once() is False  # the first look asks git
    assert await follower.poll_once() is False
    assert asked == ["head"]
    follower._checked_at -= 3601.0  # the recheck is due
    assert await follower.poll_once() is False
    assert asked == ["head", "head"]
    repo.write("a.py", "2")
    sha = repo.commit("moved")
    assert await follower.poll_once() is True  # the refs moved: asked at once
    assert follower.last_commit == sha
