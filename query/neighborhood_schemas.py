"""Response models of the neighborhood, importance, folder and overview endpoints."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from stores.freshness import Freshness
from stores.neighborhoods import NeighborhoodChangeRecord


class Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class SnapshotStamp(Out):
    """Which recluster an answer comes from, and whether the graph has moved since."""

    seq: int | None = Field(description="the snapshot's number; None before the first")
    graph_seq: int | None = Field(description="the graph delta it was computed from")
    indexed_commit: str | None
    computed_at: float | None
    recluster_ms: float | None
    modularity: float | None
    resolution: float | None
    stale: bool = Field(description="the file graph changed after it; a recluster is due")


class NeighborhoodSummary(Out):
    id: str
    kind: str = Field(description="'cluster' (by dependencies) or 'folder' (edgeless files)")
    label: str
    size: int
    cohesion: float = Field(description="1 - conductance")
    entry_points: list[str] = Field(description="members with the highest inbound degree")


class NeighborhoodPage(Out):
    repo: str
    total: int
    offset: int
    limit: int
    items: list[NeighborhoodSummary]
    snapshot: SnapshotStamp
    freshness: Freshness


class Standing(Out):
    path: str
    neighborhood: str
    strength: float = Field(description="(internal - external) / total weight")
    cross_cutting: bool
    degree: int
    in_degree: int
    out_degree: int
    weighted_in: float
    hub: bool
    expansion_hub: bool
    pagerank: float
    semantic: float
    importance: float


class LinkOut(Out):
    neighborhood: str
    label: str
    weight: float


class NeighborhoodDetail(Out):
    repo: str
    neighborhood: NeighborhoodSummary
    internal_weight: float
    external_weight: float
    members_total: int
    offset: int
    limit: int
    members: list[Standing] = Field(description="by importance, then path")
    links_total: int
    links: list[LinkOut] = Field(description="the most linked neighborhoods, by weight")
    snapshot: SnapshotStamp
    freshness: Freshness


class FileNeighborhood(Out):
    repo: str
    path: str
    standing: Standing
    neighborhood: NeighborhoodSummary
    snapshot: SnapshotStamp
    freshness: Freshness


class StandingPage(Out):
    repo: str
    total: int
    offset: int
    limit: int
    items: list[Standing]
    hub_threshold: float | None = None
    snapshot: SnapshotStamp
    freshness: Freshness


class ChangeOut(Out):
    snapshot: int
    computed_at: float
    graph_seq: int
    indexed_commit: str | None
    change: NeighborhoodChangeRecord


class ChangePage(Out):
    repo: str
    total: int = Field(description="changes kept (the most recent, bounded)")
    items: list[ChangeOut] = Field(description="newest first")
    freshness: Freshness


class TallyOut(Out):
    files: int
    lines: int
    bytes: int
    classes: int
    functions: int
    internal_imports: int
    external_imports: int


class FolderOut(Out):
    path: str
    level: int
    subfolders: int
    direct: TallyOut
    total: TallyOut
    languages: list[tuple[str, int]]


class FolderPage(Out):
    repo: str
    level: int
    total: int
    offset: int
    limit: int
    items: list[FolderOut]
    freshness: Freshness


class FileCountsOut(Out):
    path: str
    folder: str
    language: str
    tally: TallyOut


class FileLevelPage(Out):
    repo: str
    level: int
    total: int
    offset: int
    limit: int
    items: list[FileCountsOut]
    freshness: Freshness


class LanguageOut(Out):
    language: str
    files: int
    lines: int
    bytes: int


class LibraryOut(Out):
    name: str
    files: int


class RankedFile(Out):
    path: str
    pagerank: float
    semantic: float
    score: float


class HubOut(Out):
    path: str
    degree: int
    in_degree: int
    out_degree: int
    weighted_in: float
    hub: bool
    expansion_hub: bool


class SizesOut(Out):
    files: int
    source_files: int
    skipped_files: int
    folders: int
    lines: int
    bytes: int
    symbols: int
    symbols_by_kind: list[tuple[str, int]]
    edges: int
    edges_by_kind: list[tuple[str, int]]
    external_modules: int


class Overview(Out):
    repo: str
    sizes: SizesOut
    languages: list[LanguageOut]
    neighborhoods_total: int
    neighborhoods: list[NeighborhoodSummary] = Field(description="the largest, singletons aside")
    hubs: list[HubOut]
    hub_threshold: float
    libraries_total: int
    libraries: list[LibraryOut] = Field(description="external libraries by files using them")
    importance: list[RankedFile]
    snapshot: SnapshotStamp
    freshness: Freshness
