"""Response models of the churn ledger and the structural diff (the churn API contract)."""

from __future__ import annotations

from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from stores.freshness import Freshness
from stores.neighborhoods import NeighborhoodChangeRecord

T = TypeVar("T")


class Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class Bounded(Out, Generic[T]):
    """A list that ``max_tokens`` may cut; ``total`` is always the true count."""

    total: int
    items: list[T]


class NeighborhoodChangeCounts(Out):
    created: int
    removed: int
    split: int
    merged: int
    files_moved: int = Field(description="files whose neighborhood differs, net")
    cohesion_changed: int


class GraphSize(Out):
    files: int
    symbols: int
    nodes: int
    edges: int
    neighborhoods: int | None = Field(description="in the entry's last snapshot, if any")


class ChurnSummary(Out):
    id: str = Field(description="the sha, 'scan:<sha or seq>' or 'working-tree'")
    kind: Literal["scan", "commit", "working_tree"]
    commit: str | None
    parents: list[str]
    subject: str
    branch: str | None
    committed_at: float | None
    indexed_at: float = Field(description="when the entry's last delta was applied")
    first_seq: int
    last_seq: int
    files_added: int
    files_removed: int
    files_changed: int
    symbols_added: int
    symbols_removed: int
    symbols_changed: int
    edges_added: dict[str, int]
    edges_removed: dict[str, int]
    dependencies_added: int
    dependencies_removed: int
    neighborhood_changes: NeighborhoodChangeCounts
    hubs_gained: list[str]
    hubs_lost: list[str]
    new_cycles: int
    size: GraphSize
    modularity: float | None


class ChurnPage(Out):
    repo: str
    total: int
    offset: int
    limit: int
    truncated: bool = Field(description="entries of the page left out to stay within max_tokens")
    items: list[ChurnSummary] = Field(description="oldest first")
    freshness: Freshness


class DependencyOut(Out):
    source: str
    target: str
    weight: float


class ChangeLists(Out):
    added: Bounded[str]
    removed: Bounded[str]
    changed: Bounded[str]


class DependencyLists(Out):
    added: Bounded[DependencyOut]
    removed: Bounded[DependencyOut]


class ChurnDetail(ChurnSummary):
    files: ChangeLists
    symbols: ChangeLists = Field(description="'path:Qual.name'")
    dependencies: DependencyLists
    neighborhood_events: Bounded[NeighborhoodChangeRecord]
    cycles: Bounded[list[str]] = Field(description="the new import cycles, each sorted")
    truncated: bool = Field(description="items left out (max_tokens, or a scan's counts only)")
    freshness: Freshness


class RenameOut(Out):
    before: str
    after: str


class MoveOut(Out):
    path: str
    before: str
    after: str


class EntryPointsChange(Out):
    neighborhood: str
    label: str
    before: list[str]
    after: list[str]


class StructuralDiffOut(Out):
    repo: str
    base: str
    head: str
    entries: int = Field(description="entries folded: those after base up to head")
    dependencies_added: Bounded[DependencyOut]
    dependencies_removed: Bounded[DependencyOut]
    files_added: Bounded[str]
    files_removed: Bounded[str]
    files_renamed: Bounded[RenameOut]
    files_moved: Bounded[MoveOut] = Field(description="between neighborhoods")
    entry_points_changed: Bounded[EntryPointsChange]
    truncated: bool
    freshness: Freshness
