"""The graph delta: one applied event's change to a repository's materialized state.

The processors publish one GraphDelta per applied event on the graph-deltas topic,
numbered per repository from 1 without gaps. Folding the deltas of a repository in
order rebuilds its state exactly (RepoState.apply); a delta whose number was already
applied is a no-op, so replays and duplicate deliveries are harmless.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, TypeAdapter

from stores.records import EdgeRecord, FileRecord, NodeRecord, Record


class SourceMark(Record):
    """The producer event a delta reflects: producer session, its sequence, its emit time."""

    producer: str
    seq: int = Field(ge=1)
    emitted_at: float


class CommitRecord(Record):
    sha: str
    parents: tuple[str, ...]
    branch: str
    changed_paths: int = Field(ge=0)
    committed_at: float
    subject: str = ""


class GraphDelta(Record):
    v: Literal[1] = 1
    kind: Literal["graph_delta"] = "graph_delta"
    repo: str
    seq: int = Field(ge=1, description="per repository, from 1, without gaps")
    source: SourceMark
    event_kind: str = Field(description="the kind of the event this delta applies")
    applied_at: float
    files_upserted: tuple[FileRecord, ...] = ()
    files_removed: tuple[str, ...] = ()
    nodes_upserted: tuple[NodeRecord, ...] = ()
    nodes_removed: tuple[str, ...] = ()
    edges_upserted: tuple[EdgeRecord, ...] = ()
    edges_removed: tuple[tuple[str, str, str], ...] = ()
    commit: CommitRecord | None = Field(default=None, description="a commit observed")
    indexed_commit: str | None = Field(
        default=None, description="set by a barrier: the state now reflects this commit"
    )
    branch: str | None = None
    barrier: Literal["scan_completed", "commit_completed"] | None = None

    @property
    def changes(self) -> int:
        return (
            len(self.files_upserted)
            + len(self.files_removed)
            + len(self.nodes_upserted)
            + len(self.nodes_removed)
            + len(self.edges_upserted)
            + len(self.edges_removed)
        )


_DELTA = TypeAdapter(GraphDelta)


def decode_delta(raw: bytes) -> GraphDelta:
    return _DELTA.validate_json(raw)


def encode_delta(delta: GraphDelta) -> bytes:
    return delta.model_dump_json(exclude_defaults=False).encode()
