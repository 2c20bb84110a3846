"""Factories of real objects for tests: events stamped like a Source stamps them."""

from __future__ import annotations

import itertools
import re

from processors.parsing import ParseResult
from producers.events import (
    CommitCompleted,
    CommitObserved,
    FileChanged,
    FileDeleted,
    ScanCompleted,
    content_hash,
)
from stores.deltas import CommitRecord, GraphDelta, SourceMark
from stores.neighborhoods import (
    FileStanding,
    NeighborhoodChangeRecord,
    NeighborhoodRecord,
    NeighborhoodSnapshot,
)
from stores.records import EdgeRecord, FileRecord, ImportRecord, SymbolRecord


class Stamp:
    """Sequence numbers of one producer session."""

    def __init__(self, repo: str = "app-1", producer: str = "p1") -> None:
        self.repo = repo
        self.producer = producer
        self._seq = itertools.count(1)

    def base(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "producer": self.producer,
            "seq": next(self._seq),
            "emitted_at": 1000.0,
        }

    def changed(self, path: str, text: str, origin: str = "watch", commit: str | None = None):
        data = text.encode()
        return FileChanged(
            **self.base(),
            path=path,
            content=data,
            content_hash=content_hash(data),
            size=len(data),
            origin=origin,
            commit=commit,
            working_tree=origin != "commit",
        )

    def skipped(self, path: str, reason: str = "binary", size: int = 10):
        return FileChanged(
            **self.base(),
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
        return FileDeleted(**self.base(), path=path, origin=origin, commit=None, working_tree=True)

    def scan_completed(self, commit: str | None = "c0", full: bool = True, files: int = 0):
        return ScanCompleted(
            **self.base(),
            commit=commit,
            branch="main",
            files=files,
            full=full,
            working_tree_dirty=False,
        )

    def commit_observed(self, sha: str, paths: tuple[str, ...] = ()):
        return CommitObserved(
            **self.base(),
            sha=sha,
            parents=("0" * 40,),
            branch="main",
            changed_paths=paths,
            committed_at=999.0,
            subject="change",
        )

    def commit_completed(self, sha: str):
        return CommitCompleted(**self.base(), sha=sha, branch="main")


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
