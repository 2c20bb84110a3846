"""The seven-channel search over HTTP: purpose, classes, functions, imports, keywords,
paths and glob, each paged on its own with its true total, bounded and fresh-stamped."""

from __future__ import annotations

from typing import get_args

from fastapi import APIRouter, HTTPException, Query
from pydantic import BaseModel, Field

from query.read_model import ReadModel
from query.repo_lookup import repo_view
from query.retrieval_api import importance_of
from query.search.graph_search import CHANNELS, Channel, ChannelPage, graph_search
from stores.freshness import Freshness

MAX_LIMIT = 100


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


def parse_channels(text: str | None) -> list[Channel]:
    if not text:
        return list(CHANNELS)
    asked = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    unknown = [c for c in asked if c not in get_args(Channel)]
    if unknown or not asked:
        raise HTTPException(422, f"unknown channels {unknown}; known: {', '.join(CHANNELS)}")
    return [c for c in CHANNELS if c in asked]


def channel_out(page: ChannelPage) -> ChannelOut:
    return ChannelOut(
        channel=page.channel,
        total=page.total,
        offset=page.offset,
        limit=page.limit,
        items=[GraphHitOut.model_validate(h, from_attributes=True) for h in page.hits],
    )


def create_graph_search_routes(model: ReadModel) -> APIRouter:
    router = APIRouter(tags=["retrieval"])

    @router.get("/repositories/{repo}/graph-search", response_model=GraphSearchPage)
    async def graph_search_route(
        repo: str,
        q: str = Query(..., min_length=1, max_length=200, description="names, words or a glob"),
        channels: str | None = Query(
            None, description=f"comma-separated, default all: {','.join(CHANNELS)}"
        ),
        prefix: str | None = Query(None, description="only files under this path prefix"),
        glob: str | None = Query(None, description="only files matching: '**/models.py'"),
        offset: int = Query(0, ge=0, description="per channel"),
        limit: int = Query(10, ge=1, le=MAX_LIMIT, description="per channel"),
    ) -> GraphSearchPage:
        """Files and symbols matching q in seven channels (purpose, classes, functions,
        imports, keywords, paths, glob), exact > prefix > substring, rare terms first,
        then by importance; each channel paged with its true total."""
        view = repo_view(model, repo)
        pages = graph_search(
            view.state.files.values(),
            q,
            parse_channels(channels),
            importance=importance_of(view),
            prefix=prefix.lstrip("/") if prefix else None,
            glob=glob or None,
            offset=offset,
            limit=limit,
        )
        return GraphSearchPage(
            repo=repo,
            query=q,
            channels=[channel_out(p) for p in pages],
            freshness=model.freshness(repo),
        )

    return router
