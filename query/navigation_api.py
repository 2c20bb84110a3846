"""Navigation over HTTP (issue 20): definition, references, callers, callees, the
shortest path and the neighbors of a node. The answers are the `QueryService`'s
(query/service/navigation.py); these routes declare the parameters and their bounds."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from query.navigation_schemas import DefinitionPage, EdgePage, NeighborPage, PathAnswer
from query.search.traversal import MAX_HOPS, Direction
from query.service import QueryService
from query.service.navigation import MAX_NODES

MAX_LIMIT = 200
NAME = "a symbol name, a qualified name ('Class.method') or a file's path"
IN_FILE = "only the symbols defined in this file"
DIRECTION = Query("both", description="out (what it depends on), in (its dependents) or both")


def create_navigation_routes(service: QueryService) -> APIRouter:
    router = APIRouter(tags=["navigation"])

    @router.get("/repositories/{repo}/definition", response_model=DefinitionPage)
    async def definition(
        repo: str,
        name: str = Query(..., min_length=1, max_length=200, description="'parse', 'Cls.parse'"),
        path: str | None = Query(None, description=IN_FILE),
        offset: int = Query(0, ge=0),
        limit: int = Query(20, ge=1, le=MAX_LIMIT),
    ) -> DefinitionPage:
        """Where a name is defined: the symbols of that name with file, lines and kind,
        an exact qualified match first, then suffix matches, then by path."""
        return service.definition(repo, name, path=path, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/references", response_model=EdgePage)
    async def references(
        repo: str,
        symbol: str = Query(..., min_length=1, max_length=500, description=NAME),
        path: str | None = Query(None, description=IN_FILE),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_LIMIT),
    ) -> EdgePage:
        """The edges pointing at a symbol (calls, uses, references, inheritance, tests,
        imports of a file), each with its confidence and the call site's lines."""
        return service.references(repo, symbol, path=path, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/callers", response_model=EdgePage)
    async def callers(
        repo: str,
        symbol: str = Query(..., min_length=1, max_length=500, description=NAME),
        path: str | None = Query(None, description=IN_FILE),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_LIMIT),
    ) -> EdgePage:
        """Who calls a symbol, with each edge's confidence and the call site's lines."""
        return service.callers(repo, symbol, path=path, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/callees", response_model=EdgePage)
    async def callees(
        repo: str,
        symbol: str = Query(..., min_length=1, max_length=500, description=NAME),
        path: str | None = Query(None, description=IN_FILE),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_LIMIT),
    ) -> EdgePage:
        """What a symbol calls, with each edge's confidence and the call site's lines."""
        return service.callees(repo, symbol, path=path, offset=offset, limit=limit)

    @router.get("/repositories/{repo}/path", response_model=PathAnswer)
    async def shortest_path(
        repo: str,
        source: str = Query(..., min_length=1, max_length=500, description=NAME),
        target: str = Query(..., min_length=1, max_length=500, description=NAME),
        source_path: str | None = Query(None, description="the file defining source"),
        target_path: str | None = Query(None, description="the file defining target"),
        max_hops: int = Query(MAX_HOPS, ge=1, le=MAX_HOPS),
    ) -> PathAnswer:
        """The shortest dependency path between two symbols or files, either way along
        the edges, through no hub or external module, each hop with its edge."""
        return service.shortest_path(
            repo,
            source,
            target,
            source_path=source_path,
            target_path=target_path,
            max_hops=max_hops,
        )

    @router.get("/repositories/{repo}/neighbors", response_model=NeighborPage)
    async def neighbors(
        repo: str,
        node: str = Query(..., min_length=1, max_length=500, description=NAME),
        path: str | None = Query(None, description=IN_FILE),
        order: Literal["bfs", "dfs"] = Query("bfs", description="breadth- or depth-first"),
        depth: int = Query(2, ge=1, le=6, description="hops from the node at most"),
        direction: Direction = DIRECTION,
        skip_hubs: bool = Query(True, description="pass no hub (degree above max(p99, 50))"),
        max_nodes: int = Query(200, ge=1, le=MAX_NODES, description="nodes walked at most"),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_LIMIT),
    ) -> NeighborPage:
        """The nodes around a symbol or file by dependency edges, in walk order, the
        start first, each with the node it was reached from and that edge."""
        return service.neighbors(
            repo,
            node,
            path=path,
            order=order,
            depth=depth,
            direction=direction,
            skip_hubs=skip_hubs,
            max_nodes=max_nodes,
            offset=offset,
            limit=limit,
        )

    return router
