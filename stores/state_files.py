"""State snapshots on local disk: one file per repository, replaced atomically (issue 16).

``GAZETTEER_DATA_DIR/state/<namespace>/<repo>.snap``, written as a temporary file in the
same directory, fsynced, renamed over the old one and the directory fsynced: a reader
sees the old snapshot or the new one, never half of one, even across a power cut. What
cannot be trusted (damaged, truncated, another format version: `state_snapshot`'s
`SnapshotRejected`) is logged ``state_snapshot_rejected`` with its reason and treated as
missing, so the caller folds the log or scans in full; it never serves a wrong answer.

The header is read first (`read_header`), so choosing one partition's snapshots decodes
only those.

Writes end in fsync, which on a busy disk can wait for the whole journal (tens of
seconds under another process's writes): `write_off_loop` runs them in a daemon thread
of their own, so that neither the event loop nor the process's exit waits on one, and
a clean stop gives its last writes `STOP_BUDGET_S` (`flush_within`): what is cut is
still in the log, and a temporary file left behind is never read.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import structlog

from stores.state_snapshot import (
    ReaderSnapshot,
    SnapshotHeader,
    SnapshotRejected,
    StateSnapshot,
    decode,
    decode_reader,
    encode,
    peek,
    read_header,
)

log = structlog.get_logger(__name__)

T = TypeVar("T")

STOP_BUDGET_S = 5.0
"""How long a clean stop waits for its last snapshot and ledger writes (within the
supervisor's grace): the log still holds whatever is cut."""
SUFFIX = ".snap"
_TEMP_NAMES = itertools.count()
_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
_HEADER_BYTES = 4096


class StateFiles:
    """The snapshots of one deployment (topic namespace) under a directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path_of(self, repo: str) -> Path:
        if not _SAFE.match(repo):
            raise ValueError(f"repository id {repo!r} is not a safe file name")
        return self.directory / f"{repo}{SUFFIX}"

    def write(self, snapshot: StateSnapshot) -> int:
        """Replace the repository's snapshot atomically; returns the bytes written."""
        return self.write_bytes(snapshot.repo, encode(snapshot))

    def write_bytes(self, repo: str, raw: bytes) -> int:
        """`write` of bytes encoded already (the worker encodes on its loop, writes in a
        thread)."""
        return write_atomically(self.path_of(repo), raw)

    def load(self, repo: str, *, references: bool = True) -> StateSnapshot | None:
        """The repository's snapshot, or None: none written, or rejected (logged);
        ``references`` as `stores.state_snapshot.decode` takes it."""
        path = self.path_of(repo)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            log.info("state_snapshot_missing", repo=repo, path=str(path))
            return None
        read = functools.partial(_plain, references=references)
        found = self._decoded(path, raw, repo, read)
        return None if found is None else found.snapshot

    def load_reader(self, repo: str) -> ReaderSnapshot | None:
        """The repository's snapshot as a read side loads it (`decode_reader`: no
        references, the chunk postings when usable), or None as `load` gives it."""
        path = self.path_of(repo)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            log.info("state_snapshot_missing", repo=repo, path=str(path))
            return None
        return self._decoded(path, raw, repo, decode_reader)

    def peek(self, repo: str) -> SnapshotHeader | None:
        """The header of the repository's snapshot, the file verified whole (length and
        checksums) but its body not decoded; None: none written, or rejected (logged)."""
        path = self.path_of(repo)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            log.info("state_snapshot_missing", repo=repo, path=str(path))
            return None
        return self._header_of(path, repo, raw, peek)

    def header(self, repo: str) -> SnapshotHeader | None:
        """The header of the repository's snapshot, its first bytes only read (the body
        unverified: `load` verifies it); None: none written, or rejected (logged)."""
        path = self.path_of(repo)
        try:
            with open(path, "rb") as file:
                raw = file.read(_HEADER_BYTES)
        except FileNotFoundError:
            return None
        return self._header_of(path, repo, raw, read_header)

    def _header_of(
        self, path: Path, repo: str, raw: bytes, read: Callable[[bytes], SnapshotHeader]
    ) -> SnapshotHeader | None:
        """``read(raw)`` if it names ``repo``; None, logged, if rejected."""
        try:
            header = read(raw)
            if header.repo != repo:
                raise SnapshotRejected("invalid", f"the file holds {header.repo!r}")
        except SnapshotRejected as rejected:
            self._rejected(path, repo, rejected)
            return None
        return header

    def load_where(
        self, wanted: Callable[[str], bool], *, references: bool = True
    ) -> list[StateSnapshot]:
        """The snapshots of the repositories ``wanted`` accepts (by id), in id order."""
        found = []
        for path in self._files():
            repo = path.name.removesuffix(SUFFIX)
            if not wanted(repo):
                continue
            try:
                raw = path.read_bytes()
            except OSError as exc:
                log.warning(
                    "state_snapshot_rejected", repo=repo, reason="unreadable", error=str(exc)
                )
                continue
            read = functools.partial(_plain, references=references)
            decoded = self._decoded(path, raw, repo, read)
            snapshot = None if decoded is None else decoded.snapshot
            if snapshot is not None:
                found.append(snapshot)
        return found

    def repos(self) -> list[str]:
        """The repositories that have a snapshot file (verified or not), in id order."""
        return [p.name.removesuffix(SUFFIX) for p in self._files()]

    def _files(self) -> Iterator[Path]:
        if not self.directory.is_dir():
            return iter(())
        return iter(sorted(self.directory.glob(f"*{SUFFIX}")))

    def _decoded(
        self, path: Path, raw: bytes, repo: str, read: Callable[[bytes], ReaderSnapshot]
    ) -> ReaderSnapshot | None:
        started = time.perf_counter()
        try:
            header = read_header(raw[:_HEADER_BYTES])
            if header.repo != repo:
                raise SnapshotRejected("invalid", f"the file holds {header.repo!r}")
            decoded = read(raw)
        except SnapshotRejected as rejected:
            self._rejected(path, repo, rejected)
            return None
        snapshot = decoded.snapshot
        log.info(
            "state_snapshot_loaded",
            repo=repo,
            seq=snapshot.seq,
            files=len(snapshot.files),
            bytes=len(raw),
            seconds=round(time.perf_counter() - started, 3),
        )
        return decoded

    @staticmethod
    def _rejected(path: Path, repo: str, rejected: SnapshotRejected) -> None:
        log.warning(
            "state_snapshot_rejected",
            repo=repo,
            path=str(path),
            reason=rejected.reason,
            detail=rejected.detail,
        )


def write_atomically(final: Path, raw: bytes) -> int:
    """Replace ``final`` by ``raw`` as the module says (a temporary file in its directory,
    fsynced, renamed over it, the directory fsynced); returns the bytes written. Also
    what the query side writes its churn ledgers with (query/churn_files.py)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    # Unique per write: two writers of one file (a tick and a stop's flush, or a write
    # abandoned at a stop and the next) never share a temporary file.
    temp = final.with_name(f".{final.name}.{os.getpid()}.{next(_TEMP_NAMES)}.tmp")
    with open(temp, "wb") as out:
        out.write(raw)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, final)
    directory = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return len(raw)


def write_off_loop(write: Callable[[], T]) -> Awaitable[T]:
    """``write()`` in a daemon thread of its own; the future of its result on the running
    loop. Unlike ``asyncio.to_thread`` (the loop's executor, joined at exit), a write
    stuck in fsync holds neither a stop that stopped waiting for it nor the exit."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        if not done.cancelled():
            outcome()

    def run() -> None:
        try:
            value = write()
        except BaseException as exc:  # handed to the awaiting task, as to_thread does
            caught = exc
            _call_soon(loop, settle, lambda: done.set_exception(caught))
        else:
            _call_soon(loop, settle, lambda: done.set_result(value))

    threading.Thread(target=run, name="gazetteer-state-write", daemon=True).start()
    return done


def _call_soon(
    loop: asyncio.AbstractEventLoop,
    settle: Callable[[Callable[[], None]], None],
    outcome: Callable[[], None],
) -> None:
    try:
        loop.call_soon_threadsafe(settle, outcome)
    except RuntimeError:  # the loop closed meanwhile: the write outlived its stop
        pass


class WriteTurns:
    """A keeper's writes one at a time (the state snapshots, the churn ledgers): a tick
    skips while a write is under way; a stop's flush waits for it, then writes what is
    left, within its budget (`flush_within`, logged ``<what>_flush_cut``). The repositories
    to write are asked for once the turn is taken, so they are as of after the write
    waited for."""

    def __init__(self, what: str) -> None:
        self._what = what
        self._turn = asyncio.Lock()

    async def tick(
        self, repos: Callable[[], Iterable[str]], write: Callable[[str], Awaitable[None]]
    ) -> None:
        if self._turn.locked():
            return
        await self._write(repos, write)

    async def flush(
        self,
        repos: Callable[[], Iterable[str]],
        write: Callable[[str], Awaitable[None]],
        budget_s: float,
    ) -> bool:
        return await flush_within(self._write(repos, write), budget_s, self._what)

    async def _write(
        self, repos: Callable[[], Iterable[str]], write: Callable[[str], Awaitable[None]]
    ) -> None:
        async with self._turn:
            for repo in repos():
                await write(repo)


async def flush_within(flush: Awaitable[None], budget_s: float, what: str) -> bool:
    """Await a stop's last ``flush``, at most ``budget_s``; False (logged
    ``<what>_flush_cut``) when the budget ran out first."""
    try:
        async with asyncio.timeout(budget_s):
            await flush
    except TimeoutError:
        log.warning(f"{what}_flush_cut", budget_s=budget_s)
        return False
    return True


def state_directory(data_dir: Path, namespace: str) -> Path:
    """Where a deployment's snapshots live: one directory per topic namespace, so that two
    deployments on one data dir (tests, benchmarks) never read each other's."""
    return data_dir / "state" / namespace


def _plain(raw: bytes, *, references: bool) -> ReaderSnapshot:
    """`decode` as `StateFiles._decoded` reads (no postings)."""
    return ReaderSnapshot(decode(raw, references=references), None)
