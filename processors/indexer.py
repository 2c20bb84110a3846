"""The pure indexing handler: one producer event in, one graph delta out.

A ``RepoIndex`` is the processors' state of one repository: the materialized
``RepoState`` (exactly what readers rebuild from the deltas) plus indexes derived from
it. ``handle`` computes the delta of an event against the current state, applies it,
and returns it for publication; ``restore`` folds published deltas back into a fresh
index after a restart or a rebalance. Nothing here touches a broker.

The index is also the arbiter of who owns the repository (issue 15): it is the single
consumer of the repository's partition, so it sees one order of claims. ``judge`` places
every event against the state's lease (see ``Verdict``); only ``next`` is applied.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict

from processors.chunks import chunk_file
from processors.graph.incremental import IncrementalGraph, Warmed
from processors.parse_pool import Ahead, ParsePool
from processors.parsing import ParseResult, parse_file
from producers.events import (
    CommitCompleted,
    CommitObserved,
    EventBase,
    FileChanged,
    FileDeleted,
    LeaseClaimed,
    ScanCompleted,
)
from producers.secrets import REDACTED_MARK
from producers.signing import verify
from stores.deltas import CommitRecord, GraphDelta, LeaseRecord, SourceMark
from stores.records import EdgeRecord, FileRecord, NodeRecord
from stores.repo_state import RepoState
from stores.state_snapshot import StateSnapshot, base_delta, restore_state

Parser = Callable[[str, bytes], ParseResult]
EdgeKey = tuple[str, str, str]

Position = Literal["next", "replay", "gap", "fenced", "forged", "unclaimed"]
"""Where an event stands against the state (``Verdict`` says what each means)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Where an event stands, and why, for a person (the dead letter's reason).

    - ``next``: apply it. A LeaseClaimed greater than the current lease (or the first
      one) is next: it fences the current lease. An event of the current lease whose
      seq follows the last applied one is next.
    - ``replay``: already reflected (an old seq of the current lease, or of a lease
      fenced since, up to the last seq applied from it): skip it silently.
    - ``gap``: an event of the current lease out of order (an earlier one is missing; the
      producer's resend brings it again in order).
    - ``fenced``: an event (or a claim) of a lease older than the current one.
    - ``forged``: its signature does not verify against the lease's key (or a claim's
      own key, or a claim of the current lease with another key).
    - ``unclaimed``: an event of a lease no LeaseClaimed established.
    """

    position: Position
    reason: str = ""


def _lease(key: tuple[int, str]) -> str:
    return f"({key[0]}, {key[1]})"


class Changes(TypedDict, total=False):
    """The fields of a GraphDelta that an event changes."""

    files_upserted: tuple[FileRecord, ...]
    files_removed: tuple[str, ...]
    nodes_upserted: tuple[NodeRecord, ...]
    nodes_removed: tuple[str, ...]
    edges_upserted: tuple[EdgeRecord, ...]
    edges_removed: tuple[EdgeKey, ...]
    commit: CommitRecord
    indexed_commit: str | None
    branch: str | None
    barrier: Literal["scan_completed", "commit_completed"]
    lease: LeaseRecord


class RepoIndex:
    def __init__(self, repo: str, parse: Parser | None = None) -> None:
        self.state = RepoState(repo)
        self.graph = IncrementalGraph(repo)
        # By default the process's kept trees and facts, under this repository's name.
        self._parse = parse or functools.partial(parse_file, scope=repo)
        self._ahead = Ahead()  # the files of a scan being parsed in a pool (`prepare`)

    @classmethod
    def restore(
        cls, repo: str, deltas: Iterable[GraphDelta], parse: Parser | None = None
    ) -> RepoIndex:
        index = cls(repo, parse)
        for delta in deltas:
            index.apply(delta)
        return index

    @classmethod
    def from_snapshot(cls, snapshot: StateSnapshot, parse: Parser | None = None) -> RepoIndex:
        """An index standing at the snapshot's delta (issue 16): its state, and the graph's
        indexes absorbing that state whole, as they absorb a restore's deltas one by one
        (files and folders; answers are resolved again at the next change)."""
        index = cls(snapshot.repo, parse)
        whole = base_delta(snapshot)
        index.graph.count_externals(index.state, whole)
        index.graph.absorb(whole, resolved=snapshot.resolved)
        index.state = restore_state(snapshot)
        return index

    def warm(self, limit: int, until: Callable[[], bool] = lambda: False) -> Warmed:
        """Resolve up to ``limit`` more files of a restored state while idle, fewer once
        ``until()`` (`IncrementalGraph.warm`), so that its first change costs what any
        change costs."""
        return self.graph.warm(self.state, limit, until)

    def prepare(self, events: Sequence[EventBase], pool: ParsePool) -> int:
        """Have ``pool`` parse ahead the files of a scan among ``events`` (the batch about
        to be handled, in order) whose contents the state does not hold already; their
        events then take the results (`handle`), and the deltas are what they would be
        without. Returns how many files went to the pool: none while the scan so far
        (its files waiting for the barrier, and these) is below the pool's threshold, so
        a small repository's scan, an edit and a commit stay in process.
        What the events left untaken is dropped at the next ``prepare`` or `unprepare`."""
        self.unprepare()
        files: list[tuple[str, bytes]] = []
        held = self.state.files
        for event in events:
            if (
                isinstance(event, FileChanged)
                and event.origin == "scan"
                and event.content is not None
                and event.repo == self.state.repo
            ):
                old = held.get(event.path)
                if old is None or old.content_hash != event.content_hash:
                    files.append((event.path, event.content))
        self._ahead = pool.ahead(self.state.repo, files, self.graph.scan_files_waiting)
        return len(self._ahead)

    def unprepare(self) -> None:
        """Drop the results of `prepare` no event took."""
        self._ahead.cancel()

    def position(self, event: EventBase) -> Position:
        """Where an event stands against this state (``judge`` says why)."""
        return self.judge(event).position

    def judge(self, event: EventBase) -> Verdict:
        """Place ``event`` against the state's lease and its producer's sequence."""
        current = self.state.lease
        key = (event.epoch, event.producer)
        if isinstance(event, LeaseClaimed):
            if not verify(event, event.public_key):
                return Verdict("forged", "the claim's signature does not verify against its key")
            if current is None or key > current.key:
                return Verdict("next")
            if key == current.key:
                if event.public_key != current.public_key:
                    return Verdict("forged", f"lease {_lease(key)} was claimed with another key")
                return Verdict("replay")
            return self._older(event, key, current)
        if current is None:
            return Verdict("unclaimed", f"lease {_lease(key)} was never claimed (no lease yet)")
        if key == current.key:
            if not verify(event, current.public_key):
                return Verdict("forged", "signature does not verify against the lease's key")
            mark = self.state.source
            applied = mark.seq if mark is not None and mark.lease == key else 0
            if event.seq <= applied:
                return Verdict("replay")
            if event.seq == applied + 1:
                return Verdict("next")
            return Verdict(
                "gap",
                f"expected seq {applied + 1}, got {event.seq} (a resend will bring it again)",
            )
        if key > current.key:
            return Verdict(
                "unclaimed",
                f"lease {_lease(key)} was never claimed; the current is {_lease(current.key)}",
            )
        return self._older(event, key, current)

    def _older(self, event: EventBase, key: tuple[int, str], current: LeaseRecord) -> Verdict:
        """An event of a lease older than ``current``: a replay of what was applied from
        it before it was fenced, else fenced."""
        for fenced in self.state.fenced:
            if fenced.lease.key == key and event.seq <= fenced.last_seq:
                if verify(event, fenced.lease.public_key):
                    return Verdict("replay")
        return Verdict(
            "fenced",
            f"lease {_lease(key)} is older than the current {_lease(current.key)}",
        )

    def handle(
        self, event: EventBase, now: float, *, verdict: Verdict | None = None
    ) -> GraphDelta | None:
        """The delta of ``event`` (applied to this index), or None when it is not next.
        ``verdict``: the caller's ``judge(event)`` just before, so it is not judged twice
        (a signature check encodes the event again)."""
        if (verdict or self.judge(event)).position != "next":
            return None
        delta = self._delta(event, now, self._changes(event))
        self.graph.count_externals(self.state, delta)
        self.state.apply(delta)
        self.graph.commit()
        return delta

    def skip(self, event: EventBase, now: float) -> GraphDelta | None:
        """A delta that consumes ``event`` without changing anything (it was dead-lettered),
        so that the events after it are still next in sequence."""
        if self.position(event) != "next":
            return None
        delta = self._delta(event, now, Changes())
        self.state.apply(delta)
        return delta

    def _delta(self, event: EventBase, now: float, changes: Changes) -> GraphDelta:
        return GraphDelta(
            repo=self.state.repo,
            seq=self.state.seq + 1,
            source=SourceMark(
                producer=event.producer,
                seq=event.seq,
                emitted_at=event.emitted_at,
                epoch=event.epoch,
            ),
            event_kind=getattr(event, "kind", type(event).__name__),
            applied_at=now,
            resolved=self.graph.state_resolved,  # the change is computed: as after it
            **changes,
        )

    def apply(self, delta: GraphDelta) -> bool:
        """Fold a delta published earlier (restoring after a restart or a rebalance)."""
        if delta.seq != self.state.seq + 1:
            return self.state.apply(delta)  # a no-op for an old delta; raises on a gap
        self.graph.count_externals(self.state, delta)
        self.state.apply(delta)
        # a delta that says its state was resolved leaves one a restored worker warms
        # (processors/resolution_warmup.py), as after a restore from a snapshot
        self.graph.absorb(delta, resolved=delta.resolved is True)
        return True

    # -- per event kind -------------------------------------------------------------

    def _changes(self, event: EventBase) -> Changes:
        if isinstance(event, LeaseClaimed):
            # The claim changes nothing but the owner: the files the fenced session
            # reported stay until this session's full scan says they are gone.
            lease = LeaseRecord(
                producer=event.producer,
                epoch=event.epoch,
                public_key=event.public_key,
                host=event.host,
                root=event.root,
                claimed_at=event.emitted_at,
            )
            return {"lease": lease}
        if isinstance(event, FileChanged):
            return self._file_changed(event)
        if isinstance(event, FileDeleted):
            # A deleted directory the watcher could not expand removes what is under it.
            under = event.path.rstrip("/") + "/"
            gone = {p for p in self.state.files if p == event.path or p.startswith(under)}
            return self._graph_change(removed=gone, defer=event.origin == "scan")
        if isinstance(event, CommitObserved):
            commit = CommitRecord(
                sha=event.sha,
                parents=event.parents,
                branch=event.branch,
                changed_paths=len(event.changed_paths),
                committed_at=event.committed_at,
                subject=event.subject,
            )
            return {"commit": commit, "branch": event.branch}
        if isinstance(event, CommitCompleted):
            return {
                "barrier": "commit_completed",
                "indexed_commit": event.sha,
                "branch": event.branch,
            }
        if isinstance(event, ScanCompleted):
            # A full scan reports every file; files no event of this session reported
            # are gone (deleted while no producer was watching).
            gone = (
                {p for p, r in self.state.files.items() if r.producer != event.producer}
                if event.full
                else set()
            )
            changes = self._graph_change(removed=gone)
            changes["barrier"] = "scan_completed"
            changes["indexed_commit"] = event.commit
            changes["branch"] = event.branch
            return changes
        raise TypeError(f"no handler for event {type(event).__name__}")

    def _file_changed(self, event: FileChanged) -> Changes:
        old = self.state.files.get(event.path)
        meta: dict[str, object] = {
            "origin": event.origin,
            "commit": event.commit,
            "working_tree": event.working_tree,
            "producer": event.producer,
        }
        if (
            old is not None
            and old.content_hash == event.content_hash
            and old.skipped == event.skipped
            and old.size == event.size
        ):
            if all(getattr(old, k) == v for k, v in meta.items()):
                return {}
            return {"files_upserted": (old.model_copy(update=meta),)}
        record = self._record(event, meta)
        return self._graph_change(upserted=record, defer=event.origin == "scan")

    def _record(self, event: FileChanged, meta: Mapping[str, object]) -> FileRecord:
        if event.content is None:
            parsed = ParseResult(None, 0, (), (), 0, ())
        else:
            ahead = self._ahead.take(event.path, event.content) if self._ahead else None
            parsed = ahead or self._parse(event.path, event.content)
        record = FileRecord(
            path=event.path,
            language=parsed.language,
            size=event.size,
            lines=parsed.lines,
            content_hash=event.content_hash,
            skipped=event.skipped,
            parse_errors=parsed.parse_errors,
            problems=parsed.problems + _redactions(event.content),
            symbols=parsed.symbols,
            imports=parsed.imports,
            references=parsed.references,
            package=parsed.package,
            purpose=parsed.purpose,
            sections=parsed.sections,
            keywords=parsed.keywords,
            aliases=parsed.aliases,
            **meta,  # type: ignore[arg-type]
        )
        if event.content is None or record.skipped:
            return record
        return record.model_copy(update={"chunks": chunk_file(record, event.content)})

    def _graph_change(
        self,
        *,
        upserted: FileRecord | None = None,
        removed: set[str] = frozenset(),  # type: ignore[assignment]
        defer: bool = False,
    ) -> Changes:
        """Files upserted or removed, and the graph's exact difference (at the next
        barrier, for the files of a scan: see IncrementalGraph.change)."""
        graph = self.graph.change(self.state, upserted, removed, defer=defer)
        return {
            "files_upserted": (upserted,) if upserted is not None else (),
            "files_removed": tuple(sorted(removed)),
            **graph,  # type: ignore[typeddict-item]
        }


__all__ = ["Position", "RepoIndex", "Verdict"]


def _redactions(content: bytes | None) -> tuple[str, ...]:
    """``secrets_redacted:N`` when the producer redacted N secrets (issue 19): each is
    one ``[REDACTED:<rule>]`` label in the content (producers/secrets.py)."""
    found = content.count(REDACTED_MARK) if content else 0
    return (f"secrets_redacted:{found}",) if found else ()
