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

Nothing in the tree's contents ends the watcher (issue 15). No watch is placed outside
the root nor through a symlink: notify's recursive watch follows directory symlinks,
so each real directory is watched on its own, non-recursively (producers/watch_plan.py
says why and what it costs); a symlink is one record (``symlink_outside_repository``
when it leads out) and nothing below it is watched or read. A directory created or
moved in has no watch yet: the batch that shows it lists its files, then the watcher
*rewatches*: a new notifier over the tree's directories as they are now, started
before the old one is stopped (no gap), after which the new directories are listed
again against the signatures, so a file made in them before their watch existed is
emitted. Rewatches are spaced (``REWATCH_SPACING``): a tree that keeps growing (an
install, a build) is watched anew every few tenths of a second, not at every batch.
A directory made while ignored costs no rewatch (nothing under it is read); a
``.gitignore`` change that reveals files in one has it watched. The OS watches are
placed with ``ignore_permission_denied``, so an unreadable directory is simply not
watched (that flag also silences every other error of a single watch, notify's watch
limit included). Whatever still makes the notifier fail (a name that is not UTF-8
raises ``WatchfilesRustInternalError``: the whole batch is lost) is logged as
``watch_failed``; after a capped backoff the notifier is started again and the
watcher *resyncs*: it lists the tree and emits FileDeleted for the known paths gone,
and FileChanged for the paths new or whose ``signature`` (mtime, ctime, size, inode,
mode) differs from the one taken when the path was last read (or when ``ready`` was
set). So a change made during the outage is emitted, and an undecodable name appears
as its ``undecodable_name`` record (see producers/file_reader.py for its event path).
A failure before ``ready`` re-reads every listed file once the scan is over, since no
signature predates it. ``restarts`` counts the restarts.

A directory recorded as ``unreadable_directory`` that becomes readable (its chmod is
an event on the directory) is listed again at once: its files are emitted and the
directory's record deleted; the watcher then rewatches (the notifier placed no watch on
it while it was unreadable) and lists it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

import anyio.to_thread
import structlog
from watchfiles import Change, awatch
from watchfiles._rust_notify import WatchfilesRustInternalError

from producers.events import FileChanged
from producers.file_reader import (
    deleted,
    listable,
    read_work_file,
    signature,
    wire_path,
)
from producers.git import GitError
from producers.scan import WorkTree
from producers.source import Draft, Source
from producers.watch_plan import (
    KnownFiles,
    below_symlink,
    expand_deletions,
    is_real_directory,
    relative_changes,
    watch_directories,
)

__all__ = ["KnownFiles", "Watcher", "expand_deletions", "relative_changes"]

log = structlog.get_logger()

WatchFn = Callable[..., AsyncIterator[set[tuple[Change, str]]]]
"""``watchfiles.awatch`` or a stand-in with its keyword arguments (tests inject one)."""
Signature = tuple[int, ...] | None
DECODE_FAILURE_MAX_BACKOFF_S = 2.0
REWATCH_SPACING = 4.0
REWATCH_MAX_SPACING_S = 2.0
"""After a rewatch that took t seconds, the next waits ``REWATCH_SPACING * t`` (at most
``REWATCH_MAX_SPACING_S``): a growing tree costs at most a fifth of a core in rewatches
(up to its cap), and a new directory's later edits wait at most that long."""


POLL_RECHECK_S = 1.1
"""A notifier that polls (the OS had no inotify instance left) sees a file change only
once its modification time's whole second moves (notify's poll watcher: measured, a save
of the same file 0.3 s after the one before went unseen, of another size too, one 1.2 s
after was seen), and nothing before its first look. So what a polling notifier reports,
and at its start the whole tree, is listed again this long after, against the
signatures (mtime in ns, ctime, size, inode): a save in the same second is emitted then,
not lost until the file's next change."""


OUT_OF_WATCHES = ("Too many open files", "os error 24", "os error 28", "No space left")
"""What notify says when the OS has no inotify instance or watch left for us: Linux
allows 128 instances per user by default (fs.inotify.max_user_instances), and each
watched repository holds one, so a ``gazetteer watch`` of a few hundred repositories
runs out (os error 24, "Too many open files"); out of single watches it is error 28."""


def out_of_os_watches(error: BaseException) -> bool:
    """Whether notify's ``error`` says the OS has no file-system watch left to give (the
    watcher then polls instead), not that this tree has something wrong with it."""
    return any(sign in str(error) for sign in OUT_OF_WATCHES)


@contextlib.contextmanager
def thread_of_its_own() -> Iterator[None]:
    """One more thread for AnyIO's default limiter while a notifier runs.

    ``awatch`` waits for the notifier in one of AnyIO's worker threads (``RustNotify.watch``,
    up to 5 s a call, again and again), and AnyIO's default limiter lends 40 of them to a
    process. A process watching more repositories than that (``gazetteer watch`` of an
    organization) gave each notifier a thread in turn: at 1,000 repositories a save in one
    of them was read a turn later, minutes after it was made (issue 18), while answers said
    ``fresh``. Each notifier now brings its own token; the threads wait in the notifier's
    native code, without the interpreter's lock."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    limiter.total_tokens += 1
    try:
        yield
    finally:
        limiter.total_tokens -= 1


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
        watch: WatchFn = awatch,
        backoff_s: float = 0.25,
        max_backoff_s: float = 30.0,
        min_step_ms: int = 0,
    ) -> None:
        """``min_step_ms``: at least this long the notifier's thread sleeps between its
        looks at what the OS queued (each look takes the interpreter's lock:
        `SourceOptions.paced`); else 50 ms, or the debounce when shorter."""
        self.source, self.tree = source, tree
        self.max_bytes, self.debounce_ms, self.batch_size = max_bytes, debounce_ms, batch_size
        self.min_step_ms = min_step_ms
        self.known = known if known is not None else KnownFiles()
        self.watching = asyncio.Event()  # set once the OS watches are in place
        self.restarts = 0  # notifier failures survived
        self.rewatches = 0  # notifiers replaced because directories appeared
        self.watched_directories = 0  # the single watches the current notifier was given
        self._watch, self._backoff_s, self._max_backoff_s = watch, backoff_s, max_backoff_s
        self._pending: dict[str, set[Change]] = {}
        self._wake = asyncio.Event()
        self._failures = 0
        self._collector_failures = 0  # in a row: reset by each batch a notifier delivers
        self._signatures: dict[str, Signature] = {}
        # Directories that have no watch yet (made, moved in, readable at last): the
        # next rewatch lists them again once it has watched them.
        self._rewatch_under: set[str] = set()
        self._rewatch_at = 0.0  # time.monotonic() before which no rewatch starts
        self._collectors: set[asyncio.Task[None]] = set()  # the notifiers not ended yet
        self._watched: frozenset[str] = frozenset()  # the newest notifier's directories
        self.polling = False  # a notifier fell back to polling: see POLL_RECHECK_S
        self._recheck_at = 0.0  # when to list ``_recheck_under`` again (0: nothing due)
        self._recheck_under: set[str] | None = set()  # directories (None: the whole tree)

    async def run(self, stop: asyncio.Event, ready: asyncio.Event | None = None) -> None:
        """Watch until ``stop``; hold what is seen until ``ready`` (the scan's end).

        Never ends before ``stop`` because of the notifier: it is restarted instead.
        """
        if ready is None:  # ``known`` is final: its signatures predate every change
            await asyncio.to_thread(self._take_signatures)
        collector = await self._start(stop)
        self.watching.set()
        try:
            resync_all = False
            while ready is not None and not ready.is_set() and not stop.is_set():
                await _first_of(collector, stop, ready)
                if collector.done() and not stop.is_set():
                    collector = await self._restart(collector, stop, resync=False)
                    resync_all = True  # no signature predates the outage
            if stop.is_set():
                return
            if resync_all:
                await self._resync(everything=True)
            elif ready is not None:  # the scan's listing is in ``known`` now
                await asyncio.to_thread(self._take_signatures)
            while not stop.is_set():
                if collector.done():
                    collector = await self._restart(collector, stop)
                    continue
                wait_s = None
                if self._rewatch_under:
                    wait_s = self._rewatch_at - time.monotonic()
                    if wait_s <= 0:
                        collector = await self._rewatch(collector, stop)
                        continue
                if self._recheck_at:
                    due_s = self._recheck_at - time.monotonic()
                    if due_s <= 0:
                        await self._recheck()
                        continue
                    wait_s = due_s if wait_s is None else min(wait_s, due_s)
                await _first_of(collector, stop, self._wake, timeout_s=wait_s)
                self._wake.clear()
                batch, self._pending = self._pending, {}
                if batch:
                    await self._flush_or_retry(batch, stop)
        finally:  # every notifier, also one a cancelled rewatch had just started
            live = [collector, *self._collectors]
            for task in live:
                task.cancel()
            await asyncio.gather(*live, return_exceptions=True)

    async def _start(self, stop: asyncio.Event) -> asyncio.Task[None]:
        """A notifier over the tree's real directories as they are now, one
        non-recursive watch each (producers/watch_plan.py); in place on return."""
        root = self.tree.root
        directories = await asyncio.to_thread(watch_directories, root)
        self.watched_directories = len(directories)
        self._watched = frozenset(directories)
        paths = [str(root / d) for d in directories]
        task = asyncio.create_task(self._collect(stop, paths), name="watch-collector")
        self._collectors.add(task)
        task.add_done_callback(self._collectors.discard)
        # awatch registers its watches synchronously in its first step, which the
        # scheduler runs before this task resumes: after this, nothing is missed.
        await asyncio.sleep(0)
        return task

    async def _restart(
        self, collector: asyncio.Task[None], stop: asyncio.Event, *, resync: bool = True
    ) -> asyncio.Task[None]:
        """A new notifier after a failure (logged, capped backoff); then, with its
        watches in place, a resync emits what the outage hid."""
        error: BaseException | None = None
        if not collector.cancelled():
            error = collector.exception() or RuntimeError("the watch ended by itself")
        self.restarts += 1
        self._collector_failures += 1
        # Opening an undecodable name (an editor, grep, or git status comparing a
        # racily clean entry: ours too) fails the notifier every time; a short cap
        # keeps the resyncs that catch up timely without spinning.
        cap_s = self._max_backoff_s
        if "Unable to decode path" in repr(error):
            cap_s = min(cap_s, DECODE_FAILURE_MAX_BACKOFF_S)
        delay_s = min(cap_s, self._backoff_s * 2 ** (self._collector_failures - 1))
        log.warning("watch_failed", error=repr(error), restarts=self.restarts, retry_in_s=delay_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay_s)
        self._rewatch_under.clear()  # the resync lists the whole tree
        collector = await self._start(stop)  # the watches are in place before the listing
        log.info("watch_restarted", root=str(self.tree.root), restarts=self.restarts)
        if resync and not stop.is_set():
            await self._resync()
        return collector

    async def _rewatch(
        self, collector: asyncio.Task[None], stop: asyncio.Event
    ) -> asyncio.Task[None]:
        """Watch the tree anew because directories have no watch yet: the new notifier
        is in place before the old one stops (no gap), then those directories are
        listed against the signatures (a file made in one before its watch existed)."""
        under, self._rewatch_under = self._rewatch_under, set()
        started = time.monotonic()
        fresh = await self._start(stop)
        cost_s = time.monotonic() - started
        self._rewatch_at = time.monotonic() + min(REWATCH_MAX_SPACING_S, REWATCH_SPACING * cost_s)
        collector.cancel()
        (ended,) = await asyncio.gather(collector, return_exceptions=True)
        self.rewatches += 1
        log.info(
            "watch_rewatched",
            root=str(self.tree.root),
            new_directories=len(under),
            watched=self.watched_directories,
            cost_ms=round(cost_s * 1000, 1),
        )
        failed = isinstance(ended, BaseException) and not isinstance(ended, asyncio.CancelledError)
        if failed:  # the old notifier died meanwhile: what it lost is anywhere
            log.warning("watch_failed", error=repr(ended), restarts=self.restarts, retry_in_s=0)
        if not stop.is_set():
            await (self._resync() if failed else self._resync_under(under))
        return fresh

    async def _collect(self, stop: asyncio.Event, paths: list[str]) -> None:
        try:
            await self._consume(stop, paths, force_polling=False)
        except (OSError, WatchfilesRustInternalError) as e:
            # inotify_init failing (too many instances): an OSError from watchfiles, a
            # WatchfilesRustInternalError from notify ("Too many open files")
            if not isinstance(e, OSError) and not out_of_os_watches(e):
                raise
            log.warning("watch_fell_back_to_polling", root=str(self.tree.root), error=str(e))
            self.polling = True
            self._recheck_later(None)  # what changed before the poller's first look
            await self._consume(stop, paths, force_polling=True)

    def _recheck_later(self, directories: set[str] | None) -> None:
        """List ``directories`` (None: the whole tree) again `POLL_RECHECK_S` from the
        first one asked since the last recheck."""
        if not self._recheck_at:
            self._recheck_at = time.monotonic() + POLL_RECHECK_S
        if directories is None or self._recheck_under is None:
            self._recheck_under = None
        else:
            self._recheck_under |= directories
        self._wake.set()  # the loop's wait learns of the deadline

    async def _recheck(self) -> None:
        """A polling notifier's recheck (`POLL_RECHECK_S`); a failing git call (a lock,
        a repository mid-rewrite) has it tried again a recheck later, not end the watcher."""
        under, self._recheck_under, self._recheck_at = self._recheck_under, set(), 0.0
        try:
            await (self._resync() if under is None else self._resync_under(under))
        except GitError as e:
            log.warning("watch_recheck_failed", error=str(e), retry_in_s=POLL_RECHECK_S)
            self._recheck_later(under)

    async def _consume(self, stop: asyncio.Event, paths: list[str], *, force_polling: bool) -> None:
        root = str(self.tree.root)
        step = max(10, min(50, self.debounce_ms), self.min_step_ms)
        with thread_of_its_own():
            changes_iter: Any = self._watch(
                *paths,
                watch_filter=None,
                debounce=self.debounce_ms,
                step=step,
                stop_event=_OwnStop(stop),
                force_polling=force_polling,
                recursive=False,  # notify's recursive walk follows symlinks (issue 15)
                ignore_permission_denied=True,
            )
            async for raw in changes_iter:
                self._collector_failures = 0
                changed = relative_changes(root, raw)
                for path, kinds in changed.items():
                    self._pending.setdefault(path, set()).update(kinds)
                if force_polling:  # a save in the same second may follow unseen
                    self._recheck_later({posixpath.dirname(p) for p in changed})
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
        """Read, emit and record one coalesced batch; returns the drafts emitted."""
        files, gone, commit, unwatched = await asyncio.to_thread(self._plan, changes)
        self._rewatch_under |= unwatched
        return await self._emit(files, gone, commit)

    async def _resync(self, *, everything: bool = False) -> list[Draft]:
        """List the tree; emit what differs from ``known`` and the signatures kept."""
        files, gone, commit = await asyncio.to_thread(self._resync_plan, everything)
        emitted = await self._emit(files, gone, commit)
        log.info("watch_resynced", files_read=len(files), deleted=len(gone), full=everything)
        return emitted

    def _resync_plan(self, everything: bool) -> tuple[list[str], list[str], str | None]:
        listed = self.tree.list()
        root, known = self.tree.root, self.known.snapshot()
        files = [
            p
            for p in listed
            if everything or p not in known or signature(root, p) != self._signatures.get(p)
        ]
        gone = sorted(known - set(listed))
        commit = self.tree.git.head() if self.tree.git else None
        return files, gone, commit

    async def _resync_under(self, directories: set[str]) -> list[Draft]:
        """List ``directories``; emit what differs from ``known`` and the signatures."""
        files, gone, commit = await asyncio.to_thread(self._resync_under_plan, directories)
        emitted = await self._emit(files, gone, commit)
        log.info(
            "watch_resynced",
            files_read=len(files),
            deleted=len(gone),
            full=False,
            directories=len(directories),
        )
        return emitted

    def _resync_under_plan(self, directories: set[str]) -> tuple[list[str], list[str], str | None]:
        root, listed, gone = self.tree.root, set[str](), set[str]()
        for directory in sorted(directories):
            if not is_real_directory(root / directory):  # gone again: its events said so
                continue
            under = set(self.tree.list(under=directory))
            listed |= under
            gone.update(p for p in self.known.under(directory) if p not in under)
        files = sorted(
            p
            for p in listed
            if p not in self.known or signature(root, p) != self._signatures.get(p)
        )
        commit = self.tree.git.head() if self.tree.git else None
        return files, sorted(gone - listed), commit

    def _take_signatures(self) -> None:
        root = self.tree.root
        for path in self.known.snapshot() - self._signatures.keys():
            self._signatures[path] = signature(root, path)

    async def _emit(self, files: list[str], gone: list[str], commit: str | None) -> list[Draft]:
        """Deletions go first, then the files are read ``batch_size`` at a time, so that a
        checkout touching thousands of files never holds all their contents at once.
        """
        emitted = [
            deleted(wire_path(p), origin="watch", commit=commit, working_tree=True) for p in gone
        ]
        self.known.discard(gone)
        for path in gone:
            self._signatures.pop(path, None)
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

    def _plan(
        self, changes: Mapping[str, set[Change]]
    ) -> tuple[list[str], list[str], str | None, set[str]]:
        """(files to read, paths deleted, HEAD, directories without a watch) of one
        batch, decided on disk."""
        root, tree = self.tree.root, self.tree
        # No watch is placed through a link, but a poll or a race (a directory replaced
        # by a link between the walk and its watch) could report below one; git lists
        # a symlink, never what is below it.
        changes = {p: k for p, k in changes.items() if not below_symlink(root, p)}
        resync = any(p.rsplit("/", 1)[-1] == ".gitignore" for p in changes)
        if resync:
            tree.rules_changed()
        present = sorted(p for p in changes if os.path.lexists(root / p))
        missing = sorted(set(changes) - set(present))
        ignored = tree.ignored([*present, *(m for m in missing if m not in self.known)])
        files: set[str] = set()
        gone: set[str] = set()
        unwatched: set[str] = set()
        for path in present:
            full = root / path
            if path in ignored:
                continue
            if not full.is_dir() or full.is_symlink():
                files.add(path)
                if path in self._watched:  # replaced by a link: inotify may have followed
                    unwatched.add(path)  # it if the walk ran just before; watch anew
            elif Change.added in changes[path] or path in self.known or not listable(full):
                # created or moved in, or unreadable (now or before): list what it holds
                listed = tree.list(under=path)
                files.update(listed)
                if Change.added in changes[path]:  # notify's watches do not grow
                    unwatched.add(path)
                if path in self.known and path not in listed:  # readable at last
                    gone.add(path)
                    unwatched.add(path)  # the notifier placed no watch on it
        gone |= set(expand_deletions((m for m in missing if m not in ignored), self.known))
        if resync:
            listed_all = set(tree.list())
            known = self.known.snapshot()
            revealed = listed_all - known
            files |= revealed
            gone |= known - listed_all
            # a directory made while ignored was not watched (nothing under it mattered)
            unwatched |= {posixpath.dirname(p) for p in revealed} - {""}
        commit = tree.git.head() if tree.git else None
        return sorted(files), sorted(gone - files), commit, unwatched

    def _read(self, files: list[str], commit: str | None) -> list[Draft]:
        """FileChanged per file; FileDeleted for one that vanished since it was listed."""
        drafts, changed, vanished = [], [], []
        for path in files:
            before = signature(self.tree.root, path)  # before the read: a later write differs
            read = read_work_file(self.tree.root, path, max_bytes=self.max_bytes)
            wire = wire_path(path)
            if read is None:
                vanished.append(path)
                self._signatures.pop(path, None)
                drafts.append(deleted(wire, origin="watch", commit=commit, working_tree=True))
            else:
                changed.append(path)
                self._signatures[path] = before
                drafts.append(read.changed(wire, origin="watch", commit=commit, working_tree=True))
        self.known.discard(vanished)
        self.known.update(changed)
        return drafts


class _OwnStop:
    """The stop event one notifier sees: ``stop``, or its own flag, which awatch sets
    when it is cancelled (a restart) and which must not stop the whole watcher."""

    def __init__(self, stop: asyncio.Event) -> None:
        self._stop, self._own = stop, False

    def is_set(self) -> bool:  # called from the notifier's thread: two plain reads
        return self._own or self._stop.is_set()

    def set(self) -> None:
        self._own = True


async def _first_of(
    task: asyncio.Task[None], *events: asyncio.Event, timeout_s: float | None = None
) -> None:
    """Wait until ``task`` ends, any of ``events`` is set, or ``timeout_s`` passed."""
    waiters = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait([task, *waiters], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
