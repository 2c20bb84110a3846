"""The query side's churn ledgers on local disk, beside the worker's state snapshots.

Issue 16: a restarted ``up`` loads each repository's state snapshot instead of folding
the log from delta 1, and the churn history, which no snapshot holds, would start empty
there. So the query service that shares the worker's data dir keeps each ledger in
``<state dir>/<repo>.churn`` (`query.churn.durable`'s bytes, replaced atomically by
`stores.state_files.write_atomically`) and loads it with the state snapshot it covers
(`query.state_restore.load_snapshot`).

`ChurnKeeper` decides when: the materializer notes each repository whose ledger changed;
``tick`` writes those quiet for ``quiet_s`` (the worker writes its snapshot of a quiet
repository too, so both files of a quiet repository cover the same delta) and last
written ``every_s`` ago; ``flush`` writes the rest at a clean stop. A ledger is captured
on the loop (copied: the ledger goes on folding) and encoded and written in a thread,
one write at a time. A file that cannot be trusted is logged ``churn_ledger_rejected``
with its reason and treated as missing: the ledger starts empty, as without one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from query.churn.durable import LedgerRejected, SavedLedger, capture, decode, encode
from query.read_model import ReadModel
from stores.state_files import (
    STOP_BUDGET_S,
    StateFiles,
    WriteTurns,
    write_atomically,
    write_off_loop,
)

log = structlog.get_logger(__name__)

SUFFIX = ".churn"


class ChurnFiles:
    """The churn ledgers of one deployment, in its state snapshots' directory."""

    def __init__(self, state_files: StateFiles) -> None:
        self._state_files = state_files

    def path_of(self, repo: str) -> Path:
        # The snapshot's path (its check that the id is a safe file name), other suffix.
        return self._state_files.path_of(repo).with_suffix(SUFFIX)

    def write(self, saved: SavedLedger) -> int:
        """Replace the repository's ledger atomically; returns the bytes written."""
        return write_atomically(self.path_of(saved.repo), encode(saved))

    def load(self, repo: str) -> SavedLedger | None:
        """The repository's ledger, or None: none written, or rejected (logged)."""
        path = self.path_of(repo)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            log.info("churn_ledger_missing", repo=repo, path=str(path))
            return None
        except OSError as exc:
            log.warning("churn_ledger_rejected", repo=repo, reason="unreadable", detail=str(exc))
            return None
        try:
            saved = decode(raw)
            if saved.repo != repo:
                raise LedgerRejected("invalid", f"the file holds {saved.repo!r}")
        except LedgerRejected as rejected:
            log.warning(
                "churn_ledger_rejected",
                repo=repo,
                path=str(path),
                reason=rejected.reason,
                detail=rejected.detail,
            )
            return None
        return saved


@dataclass(frozen=True, slots=True)
class KeepPolicy:
    quiet_s: float = 1.0
    """A repository's ledger is written once no change of it came for this long ..."""
    every_s: float = 5.0
    """... and at most this often."""


@dataclass(slots=True)
class _Mark:
    changed_at: float
    written_at: float = float("-inf")
    dirty: bool = True


@dataclass
class ChurnKeeper:
    """Writes the ledgers of ``model`` that changed (see the module)."""

    files: ChurnFiles
    model: ReadModel
    policy: KeepPolicy = KeepPolicy()
    clock: Callable[[], float] = time.monotonic
    written: int = 0
    _marks: dict[str, _Mark] = field(default_factory=dict)
    _turns: WriteTurns = field(default_factory=lambda: WriteTurns("churn_ledger"))

    def changed(self, repo: str) -> None:
        """A delta or a neighborhood snapshot of ``repo`` was folded into its ledger."""
        now = self.clock()
        mark = self._marks.get(repo)
        if mark is None:
            self._marks[repo] = _Mark(now)
        else:
            mark.changed_at, mark.dirty = now, True

    def forget(self) -> None:
        """The model was emptied (a broker reset): nothing it holds now is to be written
        over the files, until it changes again."""
        self._marks.clear()

    def due(self, now: float) -> list[str]:
        policy = self.policy
        return sorted(
            repo
            for repo, m in self._marks.items()
            if m.dirty
            and now - m.changed_at >= policy.quiet_s
            and now - m.written_at >= policy.every_s
        )

    async def tick(self) -> None:
        """Write the ledgers that are due (skipped while a write is under way)."""
        await self._turns.tick(lambda: self.due(self.clock()), self._write)

    async def flush(self, budget_s: float = STOP_BUDGET_S) -> bool:
        """At a clean stop: every ledger changed since it was last written, after the
        write under way; False when ``budget_s`` ran out first (logged)."""
        marks = self._marks.items
        return await self._turns.flush(
            lambda: sorted(r for r, m in marks() if m.dirty), self._write, budget_s
        )

    async def _write(self, repo: str) -> None:
        mark, view = self._marks[repo], self.model.repos.get(repo)
        mark.dirty, mark.written_at = False, self.clock()
        if view is None or view.state.seq == 0 or view.churn.seq != view.state.seq:
            # Nothing folded (emptied since), or a ledger not at its state: not written.
            log.debug("churn_ledger_not_written", repo=repo)
            return
        started = time.perf_counter()
        saved = capture(view.churn, view.state)  # on the loop, where nothing changes it
        try:
            size = await write_off_loop(lambda: self.files.write(saved))
        except OSError as exc:  # a disk full: tried again at the next tick
            mark.dirty = True
            log.warning("churn_ledger_write_failed", repo=repo, error=str(exc))
            return
        except ValueError as exc:  # an id that is no file name: never written
            log.warning("churn_ledger_write_failed", repo=repo, error=str(exc))
            return
        self.written += 1
        log.info(
            "churn_ledger_written",
            repo=repo,
            seq=saved.covers.seq,
            entries=len(saved.entries),
            bytes=size,
            seconds=round(time.perf_counter() - started, 3),
        )
