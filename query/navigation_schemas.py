"""Response models of the navigation answers (query/service/navigation.py): definitions,
references, callers and callees, the shortest path and the neighbors of a node."""

from __future__ import annotations

from pydantic import BaseModel, Field

from stores.freshness import Freshness


class NodeOut(BaseModel):
    id: str = Field(description="'sym:<path>:<qualname>', 'file:<path>' or 'ext:<module>'")
    name: str
    kind: str = Field(description="FILE, CLASS, FUNCTION, METHOD, ... or EXTERNAL_MODULE")
    path: str | None
    line_start: int | None
    line_end: int | None


class DefinitionOut(NodeOut):
    qualname: str | None
    match: str = Field(description="exact (the qualified name), suffix or name")


class DefinitionPage(BaseModel):
    repo: str
    name: str
    path: str | None
    total: int = Field(description="definitions found before paging")
    offset: int
    limit: int
    next_offset: int | None = Field(description="the offset of the next page; None: the last")
    items: list[DefinitionOut] = Field(description="exact matches first, then by path")
    freshness: Freshness


class EdgeOut(BaseModel):
    other: NodeOut = Field(description="the symbol or file at the other end")
    kind: str = Field(description="CALLS, USES, REFERENCES, IMPORTS, EXTENDS, TESTS, ...")
    confidence: str = Field(
        description="import, same_file, same_folder, structural or name_match (a guess)"
    )
    weight: float = Field(description="how many references the edge stands for")
    site_path: str | None = Field(
        description="the file of the call site: the source's (the caller's, for a call)"
    )
    site_line: int | None = Field(
        description="the call site: the first line of site_path where a reference behind "
        "the edge is written (the first call, of several); None for edges no reference "
        "makes (imports, structure)"
    )
    line_start: int | None = Field(
        description="the enclosing symbol of the call site: the source's lines (the "
        "caller's, for a call)"
    )
    line_end: int | None


class EdgePage(BaseModel):
    repo: str
    node: NodeOut = Field(description="the symbol (or file) asked about")
    matches: int = Field(description="definitions the name matched; the best is answered")
    relation: str = Field(description="references, callers or callees")
    total: int
    offset: int
    limit: int
    next_offset: int | None
    items: list[EdgeOut] = Field(description="resolved before guessed, heavier first")
    freshness: Freshness


class HopOut(BaseModel):
    src: str = Field(description="the hop's start, a node id")
    dst: str
    kind: str
    confidence: str
    weight: float
    forward: bool = Field(description="the edge points along the path (src -> dst)")


class PathAnswer(BaseModel):
    repo: str
    source: NodeOut
    target: NodeOut
    found: bool = Field(description="False: further apart than max_hops, or not connected")
    max_hops: int
    nodes: list[NodeOut] = Field(description="source to target, both included")
    hops: list[HopOut]
    freshness: Freshness


class NeighborOut(NodeOut):
    depth: int
    via: str | None = Field(description="the node it was reached from")
    edge_kind: str | None
    confidence: str | None
    hub: bool = Field(description="more connections than the repository's p99 (floor 50)")


class NeighborPage(BaseModel):
    repo: str
    node: NodeOut
    order: str = Field(description="bfs or dfs")
    depth: int
    direction: str
    skip_hubs: bool
    total: int = Field(description="nodes reached (at most max_nodes), the start included")
    capped: bool = Field(description="the walk stopped at max_nodes")
    offset: int
    limit: int
    next_offset: int | None
    items: list[NeighborOut]
    freshness: Freshness
