"""The neighborhoods topic: each recluster of a repository as one snapshot message.

A snapshot carries the whole current picture (neighborhoods, every file's standing,
the links between neighborhoods) and the changes since the previous snapshot, so a
reader needs only the last message of a repository to answer, and an operator reading
the topic sees what moved: created, removed, split, merged, files moved, cohesion
changed. Snapshots are numbered per repository from 1 and stamped with the graph delta
they were computed from.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, TypeAdapter

from stores.records import Record


class NeighborhoodRecord(Record):
    """One neighborhood of a snapshot: a cluster of files the graph ties together (or a
    folder's files that have no edge at all), its label, size, cohesion and entry points."""

    id: str
    kind: Literal["cluster", "folder"]
    label: str
    size: int = Field(ge=1)
    cohesion: float = Field(description="1 - conductance of the neighborhood's cut")
    entry_points: tuple[str, ...] = Field(description="members by inbound degree, at most 3")
    internal_weight: float = Field(ge=0, description="weight of the arcs inside it")
    external_weight: float = Field(ge=0, description="weight of the arcs leaving or entering")


class FileStanding(Record):
    """One file's place: its neighborhood and how central it is."""

    path: str
    neighborhood: str
    strength: float = Field(description="(internal - external) / total weight; 0 without edges")
    cross_cutting: bool = Field(description="used from many neighborhoods, weakly in its own")
    degree: int = Field(ge=0, description="distinct files linked with it, either way")
    in_degree: int = Field(ge=0)
    out_degree: int = Field(ge=0)
    weighted_in: float = Field(ge=0)
    hub: bool = Field(description="degree above the p99 (at least 50): traversals skip it")
    expansion_hub: bool = Field(description="more than 30 connections: expansion stops there")
    pagerank: float = Field(ge=0)
    semantic: float = Field(ge=0, description="keyword centrality, 0..1")
    importance: float = Field(ge=0, description="0.6 pagerank (max-normalized) + 0.4 semantic")


class NeighborhoodLink(Record):
    """Weight of the file dependencies between two neighborhoods (a < b)."""

    a: str
    b: str
    weight: float = Field(gt=0)


class Created(Record):
    """A neighborhood that did not exist in the previous snapshot."""

    kind: Literal["created"] = "created"
    neighborhood: str
    label: str
    size: int


class Removed(Record):
    """A neighborhood of the previous snapshot that no longer exists."""

    kind: Literal["removed"] = "removed"
    neighborhood: str
    label: str
    size: int


class Split(Record):
    """A neighborhood whose files now lie in several (``parts``)."""

    kind: Literal["split"] = "split"
    neighborhood: str
    parts: tuple[str, ...]


class Merged(Record):
    """A neighborhood made of the files of several previous ones (``sources``)."""

    kind: Literal["merged"] = "merged"
    neighborhood: str
    sources: tuple[str, ...]


class FilesMoved(Record):
    """Files that left one neighborhood for another."""

    kind: Literal["files_moved"] = "files_moved"
    source: str
    target: str
    paths: tuple[str, ...]


class CohesionChanged(Record):
    """A neighborhood whose cohesion moved by at least the threshold."""

    kind: Literal["cohesion_changed"] = "cohesion_changed"
    neighborhood: str
    before: float
    after: float


NeighborhoodChangeRecord = Annotated[
    Created | Removed | Split | Merged | FilesMoved | CohesionChanged,
    Field(discriminator="kind"),
]


class NeighborhoodSnapshot(Record):
    """A repository's neighborhoods after one recluster: every neighborhood, every file's
    standing (neighborhood, importance, hub), the links between neighborhoods and the
    changes since the previous snapshot; ``graph_seq`` names the graph delta it was
    computed from. Published on the neighborhoods topic keyed by repository, read by the
    query side and by a worker taking the repository over (warm start)."""

    v: Literal[1] = 1
    kind: Literal["neighborhoods"] = "neighborhoods"
    repo: str
    seq: int = Field(ge=1, description="per repository, from 1")
    graph_seq: int = Field(ge=0, description="the graph delta the snapshot was computed from")
    indexed_commit: str | None
    computed_at: float
    recluster_ms: float = Field(ge=0, description="time to compute it, in the processor")
    resolution: float
    modularity: float
    hub_threshold: float
    neighborhoods: tuple[NeighborhoodRecord, ...]
    files: tuple[FileStanding, ...]
    links: tuple[NeighborhoodLink, ...]
    changes: tuple[NeighborhoodChangeRecord, ...] = ()

    def importance(self) -> dict[str, float]:
        """Each file's importance, by path."""
        return {f.path: f.importance for f in self.files}

    def membership(self) -> dict[str, str]:
        """Each file's neighborhood id, by path."""
        return {f.path: f.neighborhood for f in self.files}


_SNAPSHOT = TypeAdapter(NeighborhoodSnapshot)


def decode_snapshot(raw: bytes) -> NeighborhoodSnapshot:
    """A snapshot from its message value; raises ``ValidationError``."""
    return _SNAPSHOT.validate_json(raw)


def encode_snapshot(snapshot: NeighborhoodSnapshot) -> bytes:
    """The message value of a snapshot."""
    return snapshot.model_dump_json().encode()
