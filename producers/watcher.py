"""The work-tree watcher: saved, created and deleted files become events.

``watchfiles.awatch`` batches the file system's notifications (``debounce_ms``); each
batch is coalesced per path and decided against the disk at read time, so the last
write wins whatever order the notifications came in. Paths under ``.git`` and paths
git ignores are dropped; a changed ``.gitignore`` makes the watcher list the tree
again and emit what became visible (FileChanged) or hidden (FileDeleted).

A directory created or moved in is expanded to the files under it. A directory
deleted or moved away can no longer be listed, so the watcher expands it to the
files it knows under it (the scan's listing plus what it has emitted since); when it
knows none, it emits FileDeleted for the path itself, which a consumer should read as
"this path and anything under it".

Changes seen before ``ready`` is set (while the initial scan runs) are held and then
emitted as read at that moment, so a scan can never overwrite a newer save.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import structlog
from watchfiles import Change, awatch

from producers.events import FileChanged
from producers.file_reader import deleted, portable, read_work_file
from producers.git import GitError
from producers.scan import WorkTree
from producers.source import Draft, Source

log = structlog.get_logger()


class KnownFiles:
    """The files the state may hold for this root, sorted on demand for prefix lookups."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._paths = set(paths)
        self._sorted: list[str] | None = None

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def update(self, paths: Iterable[str]) -> None:
        self._paths.update(paths)
        self._sorted = None

    def discard(self, paths: Iterable[str]) -> None:
        self._paths.difference_update(paths)
        self._sorted = None

    def snapshot(self) -> set[str]:
        return set(self._paths)

    def under(self, directory: str) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._paths)
        prefix = directory + "/"
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, directory + "0")  # "0" sorts right after "/"
        return self._sorted[start:end]


def relative_changes(root: str, raw: Iterable[tuple[Change, str]]) -> dict[str, set[Change]]:
    """awatch's absolute paths to POSIX paths under ``root``; ``.git`` and strays dropped."""
    prefix = root.rstrip(os.sep) + os.sep
    out: dict[str, set[Change]] = {}
    for change, path in raw:
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :].replace(os.sep, "/")
        if rel and ".git" not in rel.split("/") and portable(rel):
            out.setdefault(rel, set()).add(change)
    return out


def expand_deletions(missing: Iterable[str], known: KnownFiles) -> list[str]:
    """Each vanished path, plus the known files under it when it was a directory."""
    out: set[str] = set()
    for path in missing:
        below = known.under(path) if path not in known else []
        out.update(below)
        if path in known or not below:
            out.add(path)
    return sorted(out)


class Watcher:
    """Watches one root and emits FileChanged/FileDeleted(origin="watch")."""

    def __init__(
        self,
        source: Source,
        tree: WorkTree,
        *,
        max_bytes: int = 1_000_000,
        debounce_ms: int = 100,
        batch_size: int = 200,
        known: KnownFiles | None = None,
    ) -> None:
        self.source, self.tree = source, tree
        self.max_bytes, self.debounce_ms, self.batch_size = max_bytes, debounce_ms, batch_size
        self.known = known if known is not None else KnownFiles()
        self.watching = asyncio.Event()  # set once the OS watches are in place
        self._pending: dict[str, set[Change]] = {}
        self._wake = asyncio.Event()
        self._failures = 0

    async def run(self, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
        """Watch until ``stop``; hold what is seen until ``ready`` (the scan's end)."""
        collector = asyncio.create_task(self._collect(stop), name="watch-collector")
        # awatch registers its watches synchronously in its first step, which the
        # scheduler runs before this task resumes: after this, nothing is missed.
        await asyncio.sleep(0)
        self.watching.set()
        try:
            if ready is not None:
                await _first_of(collector, stop, ready)
            while not stop.is_set() and not collector.done():
                await _first_of(collector, stop, self._wake)
                self._wake.clear()
                batch, self._pending = self._pending, {}
                if batch:
                    await self._flush_or_retry(batch, stop)
            if collector.done():
                collector.result()  # a failed watch ends the watcher with its error
        finally:
            collector.cancel()
            await asyncio.gather(collector, return_exceptions=True)

    async def _collect(self, stop: asyncio.Event) -> None:
        try:
            await self._consume(stop, force_polling=False)
        except OSError as e:  # e.g. "OS file watch limit reached" on a large tree
            log.warning("watch_fell_back_to_polling", root=str(self.tree.root), error=str(e))
            await self._consume(stop, force_polling=True)

    async def _consume(self, stop: asyncio.Event, *, force_polling: bool) -> None:
        root = str(self.tree.root)
        step = max(10, min(50, self.debounce_ms))
        changes_iter = awatch(
            root,
            watch_filter=None,
            debounce=self.debounce_ms,
            step=step,
            stop_event=stop,
            force_polling=force_polling,
        )
        async for raw in changes_iter:
            for path, kinds in relative_changes(root, raw).items():
                self._pending.setdefault(path, set()).update(kinds)
            self._wake.set()

    async def _flush_or_retry(self, batch: dict[str, set[Change]], stop: asyncio.Event) -> None:
        """A failing git call (transient: a lock, a repository mid-rewrite) is retried
        with capped backoff; the batch is merged back so nothing is lost."""
        try:
            await self.flush(batch)
            self._failures = 0
        except GitError as e:
            self._failures += 1
            delay_s = min(30.0, 0.25 * 2**self._failures)
            log.warning("watch_flush_failed", error=str(e), retry_in_s=delay_s)
            for path, kinds in batch.items():
                self._pending.setdefault(path, set()).update(kinds)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay_s)
            self._wake.set()

    async def flush(self, changes: Mapping[str, set[Change]]) -> list[Draft]:
        """Read, emit and record one coalesced batch; returns the drafts emitted.

        Deletions go first, then the files are read ``batch_size`` at a time, so that a
        checkout touching thousands of files never holds all their contents at once.
        """
        files, gone, commit = await asyncio.to_thread(self._plan, changes)
        emitted = [deleted(p, origin="watch", commit=commit, working_tree=True) for p in gone]
        self.known.discard(gone)
        for start in range(0, len(emitted), self.batch_size):
            await self.source.emit(emitted[start : start + self.batch_size])
        for start in range(0, len(files), self.batch_size):
            chunk = files[start : start + self.batch_size]
            drafts = await asyncio.to_thread(self._read, chunk, commit)
            await self.source.emit(drafts)
            emitted.extend(drafts)
        if emitted:
            changed = sum(1 for d in emitted if d.cls is FileChanged)
            log.info("watch_flushed", changed=changed, deleted=len(emitted) - changed)
        # `git status` costs 50-70 ms on a django-sized tree: ask it after the events
        # are out, not before, and report the answer at once.
        dirty = await asyncio.to_thread(self.tree.is_dirty)
        if dirty != self.source.working_tree_dirty:
            self.source.observe(working_tree_dirty=dirty)
            await self.source.heartbeat()
        return emitted

    def _plan(self, changes: Mapping[str, set[Change]]) -> tuple[list[str], list[str], str | None]:
        """(files to read, paths deleted, HEAD) of one batch, decided on disk."""
        root, tree = self.tree.root, self.tree
        # notify follows directory symlinks; git lists a symlink, never what is below it.
        changes = {p: k for p, k in changes.items() if not _below_symlink(root, p)}
        resync = any(p.rsplit("/", 1)[-1] == ".gitignore" for p in changes)
        if resync:
            tree.rules_changed()
        present = sorted(p for p in changes if os.path.lexists(root / p))
        missing = sorted(set(changes) - set(present))
        ignored = tree.ignored([*present, *(m for m in missing if m not in self.known)])
        files: set[str] = set()
        for path in present:
            if path in ignored:
                continue
            if not (root / path).is_dir() or (root / path).is_symlink():
                files.add(path)
            elif Change.added in changes[path]:  # created or moved in: list what it holds
                files.update(tree.list(under=path))
        gone = set(expand_deletions((m for m in missing if m not in ignored), self.known))
        if resync:
            listed = set(tree.list())
            known = self.known.snapshot()
            files |= listed - known
            gone |= known - listed
        commit = tree.git.head() if tree.git else None
        return sorted(files), sorted(gone - files), commit

    def _read(self, files: list[str], commit: str | None) -> list[Draft]:
        """FileChanged per file; FileDeleted for one that vanished since it was listed."""
        drafts, changed, vanished = [], [], []
        for path in files:
            read = read_work_file(self.tree.root, path, max_bytes=self.max_bytes)
            if read is None:
                vanished.append(path)
                drafts.append(deleted(path, origin="watch", commit=commit, working_tree=True))
            else:
                changed.append(path)
                drafts.append(read.changed(path, origin="watch", commit=commit, working_tree=True))
        self.known.discard(vanished)
        self.known.update(changed)
        return drafts


def _below_symlink(root: Path, path: str) -> bool:
    parent = (root / path).parent
    return parent != root and parent.resolve() != parent


async def _first_of(task: asyncio.Task[None], *events: asyncio.Event) -> None:
    """Wait until ``task`` ends or any of ``events`` is set."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait([task, *waiters], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
