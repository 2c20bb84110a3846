"""Factories of real objects for tests: events stamped like a Source stamps them.

A ``Stamp`` is one producer session: its events carry the session's lease epoch and are
signed with a key derived from the producer id (deterministic), and ``claim()`` is its
LeaseClaimed. A worker applies a session's events only after its claim (issue 15).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from typing import Any, TypeVar

from processors.parsing import ParseResult
from producers.events import (
    CommitCompleted,
    CommitObserved,
    EventBase,
    FileChanged,
    FileDeleted,
    LeaseClaimed,
    ScanCompleted,
    SourceStatus,
    content_hash,
)
from producers.signing import SessionKey
from stores.deltas import CommitRecord, GraphDelta, SourceMark
from stores.neighborhoods import (
    FileStanding,
    NeighborhoodChangeRecord,
    NeighborhoodRecord,
    NeighborhoodSnapshot,
)
from stores.records import EdgeRecord, FileRecord, ImportRecord, SymbolRecord

E = TypeVar("E", bound=EventBase)


def session_key(producer: str) -> SessionKey:
    """The signing key of a test producer session: the same for the same producer id."""
    return SessionKey.from_seed(hashlib.sha256(producer.encode()).digest())


class Stamp:
    """Sequence numbers, lease and signing key of one producer session.

    ``claimed=True`` (the default) starts the session with its claim already taken as
    seq 1: ``claim()`` returns it, and the first event built is seq 2; ``claimed(index)``
    feeds the claim to an index. ``claimed=False``: the first event built is seq 1."""

    def __init__(
        self, repo: str = "app-1", producer: str = "p1", *, epoch: int = 1, claimed: bool = True
    ) -> None:
        self.repo = repo
        self.producer = producer
        self.epoch = epoch
        self.key = session_key(producer)
        self._seq = itertools.count(1)
        self._claim: LeaseClaimed | None = None
        if claimed:
            self.claim()

    def base(self) -> dict[str, object]:
        """The stamp of the next event, unsigned (``make`` signs): ``sig`` is empty."""
        return {
            "repo": self.repo,
            "producer": self.producer,
            "seq": next(self._seq),
            "emitted_at": 1000.0,
            "epoch": self.epoch,
            "sig": "",
        }

    def make(self, cls: type[E], **fields: Any) -> E:
        """The next event of this session, of class ``cls``, signed."""
        return self.key.sign(cls.model_validate({**self.base(), **fields}))

    def claim(self) -> LeaseClaimed:
        """The session's LeaseClaimed (seq 1): the first event its worker must see."""
        if self._claim is None:
            self._claim = self.make(
                LeaseClaimed,
                public_key=self.key.public_key,
                host="test-host",
                root="/r",
                started_at=1000.0,
            )
        return self._claim

    def claimed(self, index: Any, now: float = 1000.0) -> Any:
        """Feed this session's claim to ``index`` (a RepoIndex); returns its delta."""
        return index.handle(self.claim(), now)

    def changed(self, path: str, text: str, origin: str = "watch", commit: str | None = None):
        data = text.encode()
        return self.make(
            FileChanged,
            path=path,
            content=data,
            content_hash=content_hash(data),
            size=len(data),
            origin=origin,
            commit=commit,
            working_tree=origin != "commit",
        )

    def skipped(self, path: str, reason: str = "binary", size: int = 10):
        return self.make(
            FileChanged,
            path=path,
            content=None,
            content_hash=None,
            size=size,
            origin="scan",
            commit=None,
            working_tree=True,
            skipped=reason,
        )

    def deleted(self, path: str, origin: str = "watch"):
        return self.make(FileDeleted, path=path, origin=origin, commit=None, working_tree=True)

    def scan_completed(self, commit: str | None = "c0", full: bool = True, files: int = 0):
        return self.make(
            ScanCompleted,
            commit=commit,
            branch="main",
            files=files,
            full=full,
            working_tree_dirty=False,
        )

    def commit_observed(self, sha: str, paths: tuple[str, ...] = ()):
        return self.make(
            CommitObserved,
            sha=sha,
            parents=("0" * 40,),
            branch="main",
            changed_paths=paths,
            committed_at=999.0,
            subject="change",
        )

    def commit_completed(self, sha: str):
        return self.make(CommitCompleted, sha=sha, branch="main")


_IMPORT = re.compile(r"^import (\S+)$")
_DEF = re.compile(r"^def (\w+)")


def tiny_parse(path: str, content: bytes) -> ParseResult:
    """A stand-in parser with exact, obvious output: 'import x' and 'def f' lines."""
    lines = content.decode().splitlines()
    imports = tuple(
        ImportRecord(module=m.group(1), line=i)
        for i, text in enumerate(lines, 1)
        if (m := _IMPORT.match(text))
    )
    symbols = tuple(
        SymbolRecord(
            name=m.group(1),
            qualname=m.group(1),
            kind="FUNCTION",
            line_start=i,
            line_end=i,
            signature=text,
        )
        for i, text in enumerate(lines, 1)
        if (m := _DEF.match(text))
    )
    return ParseResult("python", len(lines), symbols, imports, 0, ())


def symbol_record(qualname: str, signature: str | None = None) -> SymbolRecord:
    """A function symbol on line 1: ``signature`` defaults to ``def <qualname>():``."""
    return SymbolRecord(
        name=qualname.rsplit(".", 1)[-1],
        qualname=qualname,
        kind="FUNCTION",
        line_start=1,
        line_end=1,
        signature=signature or f"def {qualname}():",
    )


def file_record(
    path: str,
    content_hash: str = "h0",
    *,
    symbols: tuple[SymbolRecord, ...] = (),
    origin: str = "watch",
    commit: str | None = None,
) -> FileRecord:
    """A parsed Python file as the indexer records it (no chunks: bodies are unknown)."""
    return FileRecord(
        path=path,
        language="python",
        size=10,
        lines=1,
        content_hash=content_hash,
        skipped=None,
        parse_errors=0,
        symbols=symbols,
        origin=origin,  # type: ignore[arg-type]
        commit=commit,
        working_tree=origin != "commit",
        producer="p1",
    )


def import_edge(source: str, target: str, weight: float = 1.0) -> EdgeRecord:
    """A resolved file -> file IMPORTS edge: one file dependency."""
    return EdgeRecord(
        src=f"file:{source}",
        dst=f"file:{target}",
        kind="IMPORTS",
        weight=weight,
        confidence="import",
    )


def graph_delta(repo: str, seq: int, **changes: object) -> GraphDelta:
    """A graph delta with the given GraphDelta fields; the event kind follows the barrier."""
    barrier = changes.get("barrier")
    kind = barrier if isinstance(barrier, str) else "file_changed"
    if changes.get("commit") is not None:
        kind = "commit_observed"
    source = SourceMark(producer="p1", seq=seq, emitted_at=1000.0)
    return GraphDelta(
        repo=repo,
        seq=seq,
        source=source,
        event_kind=kind,
        applied_at=1000.0 + seq,
        **changes,  # type: ignore[arg-type]
    )


def commit_record(sha: str, subject: str = "change") -> CommitRecord:
    return CommitRecord(
        sha=sha,
        parents=("0" * 40,),
        branch="main",
        changed_paths=1,
        committed_at=999.0,
        subject=subject,
    )


def neighborhood_snapshot(
    repo: str,
    seq: int,
    graph_seq: int,
    groups: dict[str, tuple[str, ...]],
    *,
    hubs: tuple[str, ...] = (),
    changes: tuple[NeighborhoodChangeRecord, ...] = (),
    modularity: float = 0.5,
) -> NeighborhoodSnapshot:
    """A snapshot of ``groups`` (id -> member paths, the first ones its entry points,
    at most 2), with ``hubs`` flagged and every other standing at zero."""
    return NeighborhoodSnapshot(
        repo=repo,
        seq=seq,
        graph_seq=graph_seq,
        indexed_commit=None,
        computed_at=2000.0 + seq,
        recluster_ms=1.0,
        resolution=1.0,
        modularity=modularity,
        hub_threshold=50.0,
        neighborhoods=tuple(
            NeighborhoodRecord(
                id=nid,
                kind="cluster",
                label=nid.upper(),
                size=len(paths),
                cohesion=1.0,
                entry_points=paths[:2],
                internal_weight=1.0,
                external_weight=0.0,
            )
            for nid, paths in groups.items()
        ),
        files=tuple(
            FileStanding(
                path=path,
                neighborhood=nid,
                strength=0.0,
                cross_cutting=False,
                degree=0,
                in_degree=0,
                out_degree=0,
                weighted_in=0.0,
                hub=path in hubs,
                expansion_hub=False,
                pagerank=0.0,
                semantic=0.0,
                importance=0.0,
            )
            for nid, paths in groups.items()
            for path in paths
        ),
        links=(),
        changes=changes,
    )


def source_status(last_seq: int, **fields: Any) -> SourceStatus:
    """A producer's status on the sources topic: ``p1`` of ``app-1`` watching at ``c1``,
    unless ``fields`` say otherwise."""
    values: dict[str, Any] = {
        "repo": "app-1",
        "producer": "p1",
        "root": "/src/app",
        "branch": "main",
        "head_commit": "c1",
        "working_tree_dirty": False,
        "last_seq": last_seq,
        "batch_first_seq": 1,
        "batch_started_at": 1000.0,
        "sent_at": 1001.0,
        "heartbeat_s": 5.0,
        "state": "watching",
    }
    values.update(fields)
    return SourceStatus(**values)
