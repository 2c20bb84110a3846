"""The commit follower: every new commit on the followed branch becomes events.

For each new first-parent commit, in order: CommitObserved, then a FileChanged (the
blob's contents, same cap and binary rules as the work tree) or FileDeleted for every
path it changed against its first parent (a rename is a deletion of the old path and a
change of the new one), then the CommitCompleted barrier.

When HEAD moves anywhere else (a reset, a rebase, a switch to another branch, more
than ``max_commits`` at once), the follower emits the plain diff between the old and
the new head (origin ``commit``, contents of the new head) closed by a
ScanCompleted(full=False) barrier: the state then reflects the new head without
replaying history that never happened on this branch.

Polling is cheap: the stat of HEAD, its reflog, packed-refs and the branch's ref file;
git runs only when one of them changed (and every ``recheck_s`` regardless).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import structlog

from producers.events import CommitCompleted, CommitObserved, ScanCompleted
from producers.file_reader import FileRead, classify, deleted, portable, resolve_link, skip
from producers.git import GITLINK_MODE, SYMLINK_MODE, Blob, CommitInfo, Git, GitError, TreeChange
from producers.secrets import secret_name
from producers.source import Draft, Source

log = structlog.get_logger()

DETACHED = "HEAD"  # the branch name of commits followed on a detached HEAD


@dataclass(frozen=True, slots=True)
class HeadMove:
    kind: Literal["none", "commits", "reset"]
    commits: tuple[CommitInfo, ...] = ()


def plan_move(
    old: str | None, new: str | None, log_: Sequence[CommitInfo], max_commits: int
) -> HeadMove:
    """Follow commit by commit only when the first-parent chain of ``new`` reaches ``old``.

    ``log_`` is ``old..new`` first-parent, oldest first (at most ``max_commits + 1``).
    """
    if new is None or new == old:
        return HeadMove("none")
    if not log_ or len(log_) > max_commits:
        return HeadMove("reset")
    reaches = log_[0].parents[:1] == ((old,) if old else ())
    return HeadMove("commits", tuple(log_)) if reaches else HeadMove("reset")


def touched_paths(changes: Sequence[TreeChange]) -> tuple[str, ...]:
    """Every path a commit changed, renamed-from paths included, sorted."""
    return tuple(sorted({p for c in changes for p in (c.old_path, c.path) if p}))


def file_drafts(
    changes: Sequence[TreeChange], reads: Mapping[str, FileRead], sha: str
) -> list[Draft]:
    """FileDeleted / FileChanged drafts of a commit's changes, in the diff's order."""
    drafts = []
    for c in changes:
        if c.old_path is not None and c.status == "R":
            drafts.append(deleted(c.old_path, origin="commit", commit=sha, working_tree=False))
        if c.status == "D":
            drafts.append(deleted(c.path, origin="commit", commit=sha, working_tree=False))
        else:
            read = reads.get(c.path, skip("unreadable"))
            drafts.append(read.changed(c.path, origin="commit", commit=sha, working_tree=False))
    return drafts


def observed_draft(info: CommitInfo, branch: str, changes: Sequence[TreeChange]) -> Draft:
    fields = {
        "sha": info.sha,
        "parents": info.parents,
        "branch": branch,
        "changed_paths": touched_paths(changes),
        "committed_at": info.committed_at,
        "subject": info.subject,
    }
    return Draft(CommitObserved, fields)


def classify_blob(mode: str | None, blob: Blob | None, max_bytes: int) -> FileRead:
    """A tree entry's contents under the work tree's rules (mode 160000 is a submodule)."""
    if mode is None or mode == GITLINK_MODE or mode.startswith("04"):
        return skip("not_a_regular_file")
    if blob is None:
        return skip("unreadable")
    if blob.data is None:
        return skip("too_large", blob.size)
    return classify(blob.data, max_bytes=max_bytes, size=blob.size)


def read_commit_files(
    git: Git, commit: str, changes: Sequence[TreeChange], max_bytes: int
) -> dict[str, FileRead]:
    """The new contents of every changed path: one ``cat-file`` batch for them all
    (a secret by its name is not read: ``secret_file``)."""
    entries = {c.path: c for c in changes if c.status != "D"}
    reads = {p: skip("secret_file") for p in entries if secret_name(p)}
    entries = {p: c for p, c in entries.items() if p not in reads}
    blobs = git.blobs([c.blob for c in entries.values() if c.blob], max_bytes)
    for path, c in entries.items():
        blob = blobs.get(c.blob) if c.blob else None
        if c.mode == SYMLINK_MODE:
            reads[path] = _follow_link(git, commit, path, blob, max_bytes)
        else:
            reads[path] = classify_blob(c.mode, blob, max_bytes)
    return reads


def _follow_link(git: Git, commit: str, path: str, blob: Blob | None, max_bytes: int) -> FileRead:
    """A committed symlink reads as its target at the same commit, if inside the tree."""
    for _ in range(8):
        if blob is None or blob.data is None:
            return skip("unreadable")
        target = resolve_link(path, blob.data.decode("utf-8", "surrogateescape"), str(git.root))
        if target is None:
            return skip("symlink_outside_repository")
        if secret_name(target):
            return skip("secret_file")
        entry = git.tree_entries(commit, [target]).get(target)
        if entry is None:
            return skip("unreadable")  # dangling
        mode, sha = entry
        blob = git.blobs([sha], max_bytes).get(sha) if mode != GITLINK_MODE else None
        if mode != SYMLINK_MODE:
            return classify_blob(mode, blob, max_bytes)
        path = target
    return skip("unreadable")  # a loop of links


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class CommitFollower:
    """Follows HEAD from ``last_commit`` and emits what every move brings."""

    def __init__(
        self,
        source: Source,
        git: Git,
        *,
        last_commit: str | None,
        branch: str | None,
        max_bytes: int = 1_000_000,
        batch_size: int = 200,
        poll_s: float = 0.5,
        recheck_s: float = 5.0,
        max_commits: int = 1000,
    ) -> None:
        self.source, self.git = source, git
        self.last_commit, self.branch = last_commit, branch
        self.max_bytes, self.batch_size, self.max_commits = max_bytes, batch_size, max_commits
        self.poll_s, self.recheck_s = poll_s, recheck_s
        self._fingerprint: tuple[object, ...] | None = None
        self._checked_at = 0.0
        self._dirs: tuple[Path, Path] | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Poll until ``stop``; a failing git command is logged and retried next poll."""
        while not stop.is_set():
            try:
                await self.poll_once()
            except GitError as e:
                log.warning("commit_follow_failed", error=str(e), last_commit=self.last_commit)
                self._fingerprint = None  # look again next poll, whatever the refs say
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.poll_s)

    async def poll_once(self) -> bool:
        """Emit what HEAD's move brought, if it moved; True when it did."""
        fingerprint = await asyncio.to_thread(self._stat_refs)
        now = time.monotonic()
        if fingerprint == self._fingerprint and now - self._checked_at < self.recheck_s:
            return False
        self._fingerprint, self._checked_at = fingerprint, now
        head, branch = await asyncio.to_thread(lambda: (self.git.head(), self.git.branch()))
        if head == self.last_commit:
            if branch != self.branch:
                self.branch = branch
                self.source.observe(branch=branch)
            return False
        old = self.last_commit
        move = await asyncio.to_thread(self._plan, old, head)
        dirty = await asyncio.to_thread(self.git.is_dirty)
        self.source.observe(head_commit=head, branch=branch, working_tree_dirty=dirty)
        self.branch = branch
        if move.kind == "commits":
            for info in move.commits:
                await self._emit_commit(info, branch or DETACHED)
        elif move.kind == "reset" and head is not None:
            await self._emit_reset(old, head, branch, dirty)
        self.last_commit = head
        return move.kind != "none"

    def _plan(self, old: str | None, new: str | None) -> HeadMove:
        commits = self.git.first_parent_log(old, new, self.max_commits + 1) if new else []
        return plan_move(old, new, commits, self.max_commits)

    def _stat_refs(self) -> tuple[object, ...]:
        if self._dirs is None:
            self._dirs = self.git.git_dirs()
        git_dir, common = self._dirs
        files = [git_dir / "HEAD", git_dir / "logs" / "HEAD", common / "packed-refs"]
        if self.branch:
            files.append(common / "refs" / "heads" / self.branch)
        return tuple(_stat(f) for f in files)

    async def _emit_commit(self, info: CommitInfo, branch: str) -> None:
        changes = await asyncio.to_thread(self.git.commit_changes, info)
        changes = [c for c in changes if portable(c.path) and portable(c.old_path or "")]
        first = [observed_draft(info, branch, changes)]
        last = [Draft(CommitCompleted, {"sha": info.sha, "branch": branch})]
        await self._emit_changes(info.sha, changes, first, last)
        self.last_commit = info.sha
        log.info("commit_followed", sha=info.sha, branch=branch, changed=len(changes))

    async def _emit_reset(self, old: str | None, new: str, branch: str | None, dirty: bool) -> None:
        def diff() -> list[TreeChange]:
            return self.git.diff(old or self.git.empty_tree(), new)

        changes = [c for c in await asyncio.to_thread(diff) if portable(c.path)]
        removed = sum(1 for c in changes if c.status == "D")
        fields = {
            "commit": new,
            "branch": branch,
            "files": len(changes) - removed,
            "deleted": removed,
            "full": False,
            "working_tree_dirty": dirty,
        }
        await self._emit_changes(new, changes, [], [Draft(ScanCompleted, fields)])
        log.info("head_reset_followed", old=old, new=new, branch=branch, changed=len(changes))

    async def _emit_changes(
        self, sha: str, changes: list[TreeChange], first: list[Draft], last: list[Draft]
    ) -> None:
        """``first``, the file drafts in batches, ``last``: one emit for a small commit."""
        size = self.batch_size
        chunks = [changes[i : i + size] for i in range(0, len(changes), size)] or [[]]
        for i, chunk in enumerate(chunks):
            reads = await asyncio.to_thread(read_commit_files, self.git, sha, chunk, self.max_bytes)
            drafts = file_drafts(chunk, reads, sha)
            head = first if i == 0 else []
            tail = last if i == len(chunks) - 1 else []
            await self.source.emit([*head, *drafts, *tail])
