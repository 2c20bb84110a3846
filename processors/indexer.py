"""The pure indexing handler: one producer event in, one graph delta out.

A ``RepoIndex`` is the processors' state of one repository: the materialized
``RepoState`` (exactly what readers rebuild from the deltas) plus indexes derived from
it. ``handle`` computes the delta of an event against the current state, applies it,
and returns it for publication; ``restore`` folds published deltas back into a fresh
index after a restart or a rebalance. Nothing here touches a broker.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Literal, TypedDict

from processors.graph.incremental import IncrementalGraph
from processors.parsing import ParseResult, parse_file
from processors.retrieval.chunks import chunk_file
from producers.events import (
    CommitCompleted,
    CommitObserved,
    EventBase,
    FileChanged,
    FileDeleted,
    ScanCompleted,
)
from stores.deltas import CommitRecord, GraphDelta, SourceMark
from stores.records import EdgeRecord, FileRecord, NodeRecord
from stores.repo_state import RepoState

Parser = Callable[[str, bytes], ParseResult]
EdgeKey = tuple[str, str, str]


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


class RepoIndex:
    def __init__(self, repo: str, parse: Parser | None = None) -> None:
        self.state = RepoState(repo)
        self.graph = IncrementalGraph(repo)
        # By default the process's kept trees and facts, under this repository's name.
        self._parse = parse or functools.partial(parse_file, scope=repo)

    @classmethod
    def restore(
        cls, repo: str, deltas: Iterable[GraphDelta], parse: Parser | None = None
    ) -> RepoIndex:
        index = cls(repo, parse)
        for delta in deltas:
            index.apply(delta)
        return index

    def position(self, event: EventBase) -> Literal["next", "replay", "gap"]:
        """Where an event stands in its producer's sequence, against this state.

        ``replay``: already reflected (same producer session, an old seq): skip it.
        ``gap``: an earlier event of the session is missing (a batch the producer is
        still resending, or a late event of a session that has ended): skip it; the
        resent batch brings it again in order. ``next``: apply it. A new session
        starts at seq 1, so one producer at a time owns a repository.
        """
        mark = self.state.source
        if mark is not None and mark.producer == event.producer:
            if event.seq <= mark.seq:
                return "replay"
            return "next" if event.seq == mark.seq + 1 else "gap"
        return "next" if event.seq == 1 else "gap"

    def handle(self, event: EventBase, now: float) -> GraphDelta | None:
        """The delta of ``event`` (applied to this index), or None when it is not next."""
        if self.position(event) != "next":
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
            source=SourceMark(producer=event.producer, seq=event.seq, emitted_at=event.emitted_at),
            event_kind=getattr(event, "kind", type(event).__name__),
            applied_at=now,
            **changes,
        )

    def apply(self, delta: GraphDelta) -> bool:
        """Fold a delta published earlier (restoring after a restart or a rebalance)."""
        if delta.seq != self.state.seq + 1:
            return self.state.apply(delta)  # a no-op for an old delta; raises on a gap
        self.graph.count_externals(self.state, delta)
        self.state.apply(delta)
        self.graph.absorb(delta)
        return True

    # -- per event kind -------------------------------------------------------------

    def _changes(self, event: EventBase) -> Changes:
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
            parsed = self._parse(event.path, event.content)
        record = FileRecord(
            path=event.path,
            language=parsed.language,
            size=event.size,
            lines=parsed.lines,
            content_hash=event.content_hash,
            skipped=event.skipped,
            parse_errors=parsed.parse_errors,
            problems=parsed.problems,
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


__all__ = ["RepoIndex"]
