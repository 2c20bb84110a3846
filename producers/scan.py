"""The initial scan: every file an index should hold, then a ScanCompleted barrier.

In a git work tree the files are git's own answer (``ls-files --cached --others
--exclude-standard``: tracked plus untracked-but-not-ignored); in a plain directory,
a walk that applies git's own ignore rules (producers/ignore.py: every ``.gitignore``
and ``info/exclude``, never the user's ``core.excludesFile``), entering exactly the
directories git would enter. ``.git`` is never
entered and directory symlinks are never followed (a symlink is listed as a file, as
git lists it, and the reader decides whether it stays inside the root).

Nothing in a tree's contents stops a scan: each file that cannot be indexed is listed
all the same and becomes a recorded skip (producers/file_reader.py says which reason).
A directory that cannot be opened is listed as itself (``unreadable_directory``; git
warns about it on stderr and the walk's ``onerror`` sees it); a name that is not UTF-8
is listed under its escaped event path (``wire_path``) unless a real file has that
path; a FIFO, socket or device, which ``git ls-files`` never lists, is found by one
``scandir`` of each directory that holds a listed file (a directory that holds nothing
but special files is therefore not searched). When an unreadable directory becomes
readable, the watcher lists it again (see producers/watcher.py).

``reconcile`` is the cheap restart: when the commit the state was built from still
exists, only the paths that differ between it and the work tree are read again.
"""

from __future__ import annotations

import asyncio
import os
import posixpath
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from producers.events import FileChanged, FileDeleted, ScanCompleted
from producers.file_reader import deleted, portable, read_work_file, wire_path
from producers.git import Git
from producers.ignore import IgnoreRules, parse_ignore_file
from producers.source import Draft, Source

log = structlog.get_logger()


def ignore_rules(root: Path) -> IgnoreRules:
    """Empty rules for ``root``, holding its ``$GIT_DIR/info/exclude`` if it has one
    (a ``.git`` that git will not use: unsafe ownership, no git installed).

    ``core.excludesFile`` is not read: see producers/ignore.py.
    """
    git_dir = _git_dir(root)
    text = _read_text(git_dir / "info" / "exclude", nofollow=False) if git_dir else None
    return IgnoreRules(parse_ignore_file(text) if text else ())


def _git_dir(root: Path) -> Path | None:
    """``root/.git``, or where a ``gitdir:`` file there points (and a linked work
    tree's ``commondir``, which holds ``info/``)."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    text = _read_text(dot_git, nofollow=False)
    if text is None or not text.startswith("gitdir: "):
        return None
    git_dir = root / text.removeprefix("gitdir: ").strip()
    common = _read_text(git_dir / "commondir", nofollow=False)
    return git_dir / common.strip() if common else git_dir


def _read_text(path: Path, *, nofollow: bool) -> str | None:
    """A file's text (undecodable bytes surrogate-escaped, as in file names), or None.

    ``nofollow``: a symlink is not read, as git (2.32 and later) reads no in-tree
    ``.gitignore`` through a symlink.
    """
    flags = os.O_RDONLY | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            return f.read().decode("utf-8", "surrogateescape")
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as e:  # ELOOP (a symlink), EACCES: git warns and reads nothing
        log.warning("ignore_file_unreadable", path=str(path), error=str(e))
        return None


def walk(root: Path, rules: IgnoreRules, start: str = "") -> list[str]:
    """The files under ``root/start`` that git would list; adds each .gitignore met.

    Like git, an excluded directory is never entered (so its ``.gitignore`` is never
    read); ``rules.split`` decides each directory's entries. A directory that cannot
    be opened is listed itself, in place of its files.
    """
    files: list[str] = []
    top = root / start if start else root

    def unreadable(error: OSError) -> None:
        log.warning("directory_unreadable", path=error.filename, error=str(error))
        rel = Path(os.fsdecode(error.filename or top)).relative_to(root).as_posix()
        if rel != ".":
            files.append(rel)

    for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable):
        rel = Path(dirpath).relative_to(root).as_posix()
        rel = "" if rel == "." else rel
        has_ignore = ".gitignore" in filenames
        text = _read_text(Path(dirpath, ".gitignore"), nofollow=True) if has_ignore else None
        rules.add(rel, text)
        # a directory symlink is listed like a file, never followed (git: DT_LNK)
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        real = [d for d in dirnames if d not in links] if links else dirnames
        subdirs, kept = rules.split(rel, real, [*filenames, *links] if links else filenames)
        dirnames[:] = subdirs
        prefix = f"{rel}/" if rel else ""
        files.extend(prefix + name for name in kept)
    return sorted(files)


def special_files(root: Path, files: Iterable[str]) -> list[str]:
    """FIFOs, sockets and devices beside ``files`` (git lists none of them)."""
    found = []
    for directory in sorted({posixpath.dirname(f) for f in files}):
        try:
            with os.scandir(root / directory if directory else root) as entries:
                for entry in entries:
                    # d_type, no stat: a link is never followed (a loop would raise)
                    plain = entry.is_file(follow_symlinks=False) or entry.is_symlink()
                    if not (plain or entry.is_dir(follow_symlinks=False)):
                        found.append(f"{directory}/{entry.name}" if directory else entry.name)
        except OSError:  # gone or unreadable since git listed it: the files say so
            continue
    return found


def without_collisions(root: Path, files: Iterable[str]) -> list[str]:
    """Drop an undecodable name whose escaped event path is a real file: it wins."""
    return [f for f in files if portable(f) or not os.path.lexists(root / wire_path(f))]


class WorkTree:
    """The files of a root that an index should hold, and its git state if any."""

    def __init__(self, root: Path, git: Git | None) -> None:
        self.root = root
        self.git = git
        self._rules: IgnoreRules | None = None

    def list(self, under: str | None = None) -> list[str]:
        """On-disk paths (undecodable names surrogate-escaped), each one a record."""
        if self.git is not None:
            files, unopened = self.git.list_files([under] if under else [])
            specials = [p for p in special_files(self.root, files) if p not in set(files)]
            files = sorted({*files, *unopened, *(set(specials) - self.git.ignored(specials))})
        elif self._rules is None and not under:  # one walk both lists and loads the rules
            self._rules = ignore_rules(self.root)
            files = walk(self.root, self._rules)
        else:
            files = walk(self.root, self._plain_rules(), under or "")
        kept = without_collisions(self.root, files)
        undecodable = sum(1 for f in kept if not portable(f))
        if undecodable:
            log.warning("undecodable_names_listed", count=undecodable)
        return kept

    def ignored(self, paths: Iterable[str]) -> set[str]:
        paths = [p for p in paths if p]
        if self.git is not None:
            return self.git.ignored(paths)
        rules = self._plain_rules()
        return {p for p in paths if rules.ignored(p, is_dir=_is_real_dir(self.root / p))}

    def rules_changed(self) -> None:
        """A .gitignore changed: git reads it anew by itself; the walk must reload."""
        self._rules = None

    def _plain_rules(self) -> IgnoreRules:
        if self._rules is None:
            self._rules = ignore_rules(self.root)
            walk(self.root, self._rules)
        return self._rules

    def head_and_branch(self) -> tuple[str | None, str | None]:
        return (self.git.head(), self.git.branch()) if self.git else (None, None)

    def is_dirty(self) -> bool:
        return self.git.is_dirty() if self.git else False


def _is_real_dir(path: Path) -> bool:
    """A directory, not a symlink to one (git matches a symlink as a file)."""
    return path.is_dir() and not path.is_symlink()


@dataclass(frozen=True, slots=True)
class ScanResult:
    commit: str | None
    branch: str | None
    files: int
    deleted: int
    full: bool
    working_tree_dirty: bool
    listed: tuple[str, ...]  # every file present after the scan: what the state may know


@dataclass(frozen=True, slots=True)
class ScanOptions:
    max_bytes: int = 1_000_000
    batch_size: int = 200
    progress_s: float = 2.0
    progress_files: int = 100


class _Progress:
    """``scan_progressed`` every ``progress_s`` seconds or ``progress_files`` files."""

    def __init__(self, total: int, options: ScanOptions, full: bool) -> None:
        self.options, self.done, self._logged = options, 0, 0
        self.started = self._logged_at = time.monotonic()
        self._log = log.bind(files_total=total, full=full)

    def advance(self, n: int) -> None:
        self.done += n
        now = time.monotonic()
        due = now - self._logged_at >= self.options.progress_s
        if due or self.done - self._logged >= self.options.progress_files:
            self._logged, self._logged_at = self.done, now
            elapsed_s = round(now - self.started, 3)
            self._log.info("scan_progressed", files_done=self.done, elapsed_s=elapsed_s)


def read_drafts(
    tree: WorkTree,
    paths: Sequence[str],
    present: set[str] | None,
    commit: str | None,
    max_bytes: int,
) -> list[Draft]:
    """FileChanged for each path present; FileDeleted for the rest unless ``present`` is
    None (a full scan, where a file gone since the listing simply is not in the scan)."""
    drafts = []
    for path in paths:
        read = read_work_file(tree.root, path, max_bytes=max_bytes)
        wire = wire_path(path)
        if read is not None and (present is None or path in present):
            drafts.append(read.changed(wire, origin="scan", commit=commit, working_tree=True))
        elif present is not None:
            drafts.append(deleted(wire, origin="scan", commit=commit, working_tree=True))
    return drafts


@dataclass(frozen=True, slots=True)
class _Plan:
    paths: list[str]  # what to read, in order
    present: set[str] | None  # None: a full scan; else a path not present is deleted
    listed: list[str]
    commit: str | None
    branch: str | None


async def full_scan(
    source: Source, tree: WorkTree, options: ScanOptions, *, stop: asyncio.Event | None = None
) -> ScanResult | None:
    """Emit every file, then ScanCompleted(full=True). None when stopped before the end."""

    def plan() -> _Plan:
        commit, branch = tree.head_and_branch()
        listed = tree.list()
        return _Plan(listed, None, listed, commit, branch)

    return await _emit(source, tree, await asyncio.to_thread(plan), options, stop)


async def reconcile(
    source: Source,
    tree: WorkTree,
    since_commit: str | None,
    options: ScanOptions,
    *,
    stop: asyncio.Event | None = None,
    extra_paths: Iterable[str] = (),
) -> ScanResult | None:
    """Emit only what differs from ``since_commit``, then ScanCompleted(full=False).

    The paths read again are the committed diff ``since_commit..HEAD``, the uncommitted
    changes and the untracked files; one no longer present is a FileDeleted. When
    ``since_commit`` is unknown (history rewritten, gc) this is a full scan.
    ``extra_paths`` are read again too: the previous session's dirty paths, which no
    diff against ``since_commit`` can reveal once they are reverted; so are the records
    git knows nothing of (special files, directories it could not open).
    """

    def plan() -> _Plan | None:
        git = tree.git
        commit, branch = tree.head_and_branch()
        if git is None or commit is None or not since_commit:
            return None
        if not git.commit_exists(since_commit):
            return None
        committed = {c.path for c in git.diff(since_commit, commit)}
        uncommitted = {c.path for c in git.diff_work_tree(commit)}
        untracked = git.ls_files(tracked=False)
        listed = tree.list()
        unseen_by_git = set(listed) - set(git.ls_files())  # specials, unopened directories
        paths = sorted({*committed, *uncommitted, *untracked, *extra_paths, *unseen_by_git})
        return _Plan(paths, set(listed), listed, commit, branch)

    planned = await asyncio.to_thread(plan)
    if planned is None:
        log.info("reconcile_fell_back", since_commit=since_commit, reason="commit_unknown")
        return await full_scan(source, tree, options, stop=stop)
    return await _emit(source, tree, planned, options, stop)


async def _emit(
    source: Source, tree: WorkTree, plan: _Plan, options: ScanOptions, stop: asyncio.Event | None
) -> ScanResult | None:
    paths, full = plan.paths, plan.present is None
    log.info("scan_started", root=str(tree.root), files_total=len(paths), full=full)
    progress = _Progress(len(paths), options, full)
    changed = removed = 0
    for start in range(0, len(paths), options.batch_size):
        if stop is not None and stop.is_set():
            log.info("scan_stopped", files_done=progress.done, files_total=len(paths))
            return None
        batch = paths[start : start + options.batch_size]
        drafts = await asyncio.to_thread(
            read_drafts, tree, batch, plan.present, plan.commit, options.max_bytes
        )
        await source.emit(drafts)
        changed += sum(1 for d in drafts if d.cls is FileChanged)
        removed += sum(1 for d in drafts if d.cls is FileDeleted)
        progress.advance(len(batch))
    dirty = await asyncio.to_thread(tree.is_dirty)
    listed = tuple(plan.listed)
    result = ScanResult(plan.commit, plan.branch, changed, removed, full, dirty, listed)
    await source.emit([completed_draft(result)])
    elapsed_s = round(time.monotonic() - progress.started, 3)
    log.info("scan_completed", files=changed, deleted=removed, full=full, elapsed_s=elapsed_s)
    return result


def completed_draft(result: ScanResult) -> Draft:
    names = ("commit", "branch", "files", "deleted", "full", "working_tree_dirty")
    return Draft(ScanCompleted, {name: getattr(result, name) for name in names})
