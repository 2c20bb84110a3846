"""Response models of the seven-channel search (query/search/graph_search.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from stores.freshness import Freshness


class GraphHitOut(BaseModel):
    path: str
    text: str = Field(description="what matched: a symbol, an import, a keyword, a purpose line")
    match: str = Field(description="exact, prefix or substring (a glob hit is exact)")
    score: float = Field(description="IDF-weighted: rare terms count more")
    importance: float = Field(description="the file's importance (0: no neighborhoods yet)")
    line_start: int | None
    line_end: int | None


class ChannelOut(BaseModel):
    channel: str
    total: int = Field(description="hits in the channel before paging")
    offset: int
    limit: int
    items: list[GraphHitOut]


class GraphSearchPage(BaseModel):
    repo: str
    query: str
    channels: list[ChannelOut]
    freshness: Freshness
