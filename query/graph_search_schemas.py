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


class OrgGraphHitOut(GraphHitOut):
    repo: str


class OrgChannelOut(BaseModel):
    channel: str
    total: int = Field(description="hits in the channel, every repository's, before paging")
    offset: int
    limit: int
    items: list[OrgGraphHitOut]


class OrgGraphSearchPage(BaseModel):
    """The seven-channel search across repositories: each term's IDF the corpus's (every
    repository's files counted), each channel's hits merged and paged."""

    query: str
    repositories: int = Field(description="repositories searched")
    channels: list[OrgChannelOut]
    freshness: dict[str, Freshness] = Field(description="of each repository with a hit shown")
    partitions: str = Field(description="the partitions whose repositories were searched")
    partial: bool = Field(description="some repositories could not be searched")


class ChannelStatsOut(BaseModel):
    files: int = Field(ge=0)
    df: dict[str, int]


class GraphCorpusOut(BaseModel):
    """A shard's share of an org-wide graph search's IDF figures, per channel."""

    channels: dict[str, ChannelStatsOut]


class GraphCorpusQuestion(BaseModel):
    q: str = Field(min_length=1, max_length=200)
    repos: str | None = Field(None, max_length=2000)
    channels: str | None = Field(None, max_length=200)
    prefix: str | None = None
    glob: str | None = None
    depth: int = Field(10, ge=1, le=1100, description="each channel's best hits to return")
    corpus: GraphCorpusOut | None = None
