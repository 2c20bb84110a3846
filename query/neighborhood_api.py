"""Neighborhoods, importance, folders and the overview over HTTP.

The answers are the `QueryService`'s (query/service/neighborhoods.py says where each
comes from); these routes declare the parameters, their bounds and descriptions.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from query.neighborhood_schemas import (
    ChangePage,
    FileLevelPage,
    FileNeighborhood,
    FolderPage,
    NeighborhoodDetail,
    NeighborhoodPage,
    Overview,
    StandingPage,
)
from query.service import QueryService

MAX_PAGE = 1000


def create_neighborhood_routes(service: QueryService) -> APIRouter:
    router = APIRouter(tags=["neighborhoods"])

    @router.get("/repositories/{repo}/neighborhoods", response_model=NeighborhoodPage)
    async def neighborhoods(
        repo: str,
        kind: str | None = Query(None, description="'cluster' or 'folder'"),
        min_size: int = Query(1, ge=1),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> NeighborhoodPage:
        """The repository's neighborhoods, largest first."""
        return service.neighborhoods(repo, kind=kind, min_size=min_size, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/neighborhoods/{nid}", response_model=NeighborhoodDetail)
    async def neighborhood(
        repo: str,
        nid: str,
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
        links: int = Query(20, ge=0, le=200, description="how many linked neighborhoods"),
    ) -> NeighborhoodDetail:
        """One neighborhood: members by importance, entry points, cohesion, links."""
        return service.neighborhood(repo, nid, offset=offset, limit=limit, links=links)

    @router.get("/repositories/{repo}/neighborhood-of", response_model=FileNeighborhood)
    async def neighborhood_of(
        repo: str, path: str = Query(..., description="a file's path in the repository")
    ) -> FileNeighborhood:
        """The neighborhood a file belongs to, and its standing in it."""
        return service.neighborhood_of(repo, path)

    @router.get("/repositories/{repo}/neighborhood-changes", response_model=ChangePage)
    async def neighborhood_changes(repo: str, limit: int = Query(50, ge=1, le=500)) -> ChangePage:
        """What the last reclusters changed: created, removed, split, merged, moved, cohesion."""
        return service.neighborhood_changes(repo, limit=limit)

    @router.get("/repositories/{repo}/hubs", response_model=StandingPage)
    async def hubs(
        repo: str,
        only_flagged: bool = Query(False, description="only files above the hub threshold"),
        limit: int = Query(20, ge=1, le=MAX_PAGE),
    ) -> StandingPage:
        """The most connected files, by degree; ``hub`` marks those above max(p99, 50)."""
        return service.hubs(repo, only_flagged=only_flagged, limit=limit)

    @router.get("/repositories/{repo}/importance", response_model=StandingPage)
    async def importance(
        repo: str,
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> StandingPage:
        """Files by composite importance: 0.6 PageRank over imports + 0.4 keyword centrality."""
        return service.importance(repo, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/folders", response_model=FolderPage)
    async def folders(
        repo: str,
        level: int = Query(1, ge=1, description="height bottom-up: 1 holds only files"),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> FolderPage:
        """Folders of one level with their files, classes, functions and imports."""
        return service.folders(repo, level=level, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/files-by-level", response_model=FileLevelPage)
    async def files_by_level(
        repo: str,
        level: int = Query(1, ge=1, description="the level of the folders holding them"),
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=MAX_PAGE),
    ) -> FileLevelPage:
        """Files directly in the folders of one level, with their counts."""
        return service.files_by_level(repo, level=level, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/overview", response_model=Overview)
    async def overview(repo: str, limit: int = Query(10, ge=1, le=100)) -> Overview:
        """Languages, sizes, major neighborhoods, hubs, external libraries, top files."""
        return service.overview(repo, limit=limit)

    return router
