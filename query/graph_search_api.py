"""The seven-channel search over HTTP: purpose, classes, functions, imports, keywords,
paths and glob, each paged on its own with its true total, bounded and fresh-stamped
(the answer is the `QueryService`'s, query/service/graph_search.py)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from query.graph_search_schemas import ChannelOut, GraphHitOut, GraphSearchPage
from query.search.graph_search import CHANNELS
from query.service import QueryService

__all__ = ["ChannelOut", "GraphHitOut", "GraphSearchPage", "create_graph_search_routes"]

MAX_LIMIT = 100


def create_graph_search_routes(service: QueryService) -> APIRouter:
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
        return service.graph_search(
            repo, q, channels=channels, prefix=prefix, glob=glob, offset=offset, limit=limit
        )

    return router
