"""Neighborhoods, importance, folders and the overview, served from the read model.

The neighborhoods, standings, hubs and ranking come from the repository's last
snapshot (computed by the worker that owns it); folder summaries and the overview are
computed here from the materialized state, once per state version. Every answer is
paged or capped, carries the true total, the snapshot it comes from (and whether the
graph moved since) and the repository's freshness.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fastapi import APIRouter, HTTPException, Query

from query.neighborhood_schemas import (
    ChangeOut,
    ChangePage,
    FileCountsOut,
    FileLevelPage,
    FileNeighborhood,
    FolderOut,
    FolderPage,
    LinkOut,
    NeighborhoodDetail,
    NeighborhoodPage,
    NeighborhoodSummary,
    Overview,
    SnapshotStamp,
    Standing,
    StandingPage,
)
from query.overview import folder_summary as fs
from query.overview.overview import repository_overview
from query.read_model import ReadModel, RepoView
from query.repo_lookup import repo_view as lookup_repo
from stores.neighborhoods import NeighborhoodRecord, NeighborhoodSnapshot
from stores.projections.importance import FileImportance

MAX_PAGE = 1000
T = TypeVar("T")


def stamp(view: RepoView) -> SnapshotStamp:
    s = view.neighborhoods
    return SnapshotStamp(
        seq=s.seq if s else None,
        graph_seq=s.graph_seq if s else None,
        indexed_commit=s.indexed_commit if s else None,
        computed_at=s.computed_at if s else None,
        recluster_ms=s.recluster_ms if s else None,
        modularity=s.modularity if s else None,
        resolution=s.resolution if s else None,
        stale=view.neighborhoods_stale,
    )


def summary(record: NeighborhoodRecord) -> NeighborhoodSummary:
    return NeighborhoodSummary.model_validate(record, from_attributes=True)


def by_importance(snapshot: NeighborhoodSnapshot) -> list[Any]:
    return sorted(snapshot.files, key=lambda f: (-f.importance, f.path))


class StateCache:
    """One computed value per repository and state version (a delta moves the version)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], tuple[tuple[int, int], object]] = {}

    def get(self, view: RepoView, name: str, compute: Callable[[], T]) -> T:
        version = (view.state.seq, view.neighborhoods.seq if view.neighborhoods else 0)
        key = (view.state.repo, name)
        cached = self._values.get(key)
        if cached is None or cached[0] != version:
            cached = self._values[key] = (version, compute())
        return cached[1]  # type: ignore[return-value]


def create_neighborhood_routes(model: ReadModel) -> APIRouter:
    router = APIRouter(tags=["neighborhoods"])
    cache = StateCache()

    def repo_view(repo: str) -> RepoView:
        return lookup_repo(model, repo)

    def snapshot_of(view: RepoView) -> NeighborhoodSnapshot:
        if view.neighborhoods is None:
            raise HTTPException(
                409, f"no neighborhoods for {view.state.repo!r} yet: the first recluster is due"
            )
        return view.neighborhoods

    def standings(
        view: RepoView,
        items: Sequence[Any],
        total: int,
        offset: int,
        limit: int,
        threshold: float | None = None,
    ) -> StandingPage:
        return StandingPage(
            repo=view.state.repo,
            total=total,
            offset=offset,
            limit=limit,
            items=[Standing.model_validate(f, from_attributes=True) for f in items],
            hub_threshold=threshold,
            snapshot=stamp(view),
            freshness=model.freshness(view.state.repo),
        )

    @router.get("/repositories/{repo}/neighborhoods", response_model=NeighborhoodPage)
    async def neighborhoods(
        repo: str,
        kind: str | None = Query(None, description="'cluster' or 'folder'"),
        min_size: int = Query(1, ge=1),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> NeighborhoodPage:
        """The repository's neighborhoods, largest first."""
        view = repo_view(repo)
        found = [
            n
            for n in (view.neighborhoods.neighborhoods if view.neighborhoods else ())
            if (kind is None or n.kind == kind) and n.size >= min_size
        ]
        return NeighborhoodPage(
            repo=repo,
            total=len(found),
            offset=offset,
            limit=limit,
            items=[summary(n) for n in found[offset : offset + limit]],
            snapshot=stamp(view),
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/neighborhoods/{nid}", response_model=NeighborhoodDetail)
    async def neighborhood(
        repo: str,
        nid: str,
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
        links: int = Query(20, ge=0, le=200, description="how many linked neighborhoods"),
    ) -> NeighborhoodDetail:
        """One neighborhood: members by importance, entry points, cohesion, links."""
        view = repo_view(repo)
        snapshot = snapshot_of(view)
        records = {n.id: n for n in snapshot.neighborhoods}
        record = records.get(nid)
        if record is None:
            raise HTTPException(
                404, f"no neighborhood {nid!r} in {repo!r} (ids survive reclustering)"
            )
        members = [f for f in by_importance(snapshot) if f.neighborhood == nid]
        linked = sorted(
            (
                (link.b if link.a == nid else link.a, link.weight)
                for link in snapshot.links
                if nid in (link.a, link.b)
            ),
            key=lambda pair: (-pair[1], pair[0]),
        )
        return NeighborhoodDetail(
            repo=repo,
            neighborhood=summary(record),
            internal_weight=record.internal_weight,
            external_weight=record.external_weight,
            members_total=len(members),
            offset=offset,
            limit=limit,
            members=[
                Standing.model_validate(f, from_attributes=True)
                for f in members[offset : offset + limit]
            ],
            links_total=len(linked),
            links=[
                LinkOut(neighborhood=other, label=records[other].label, weight=weight)
                for other, weight in linked[:links]
            ],
            snapshot=stamp(view),
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/neighborhood-of", response_model=FileNeighborhood)
    async def neighborhood_of(
        repo: str, path: str = Query(..., description="a file's path in the repository")
    ) -> FileNeighborhood:
        """The neighborhood a file belongs to, and its standing in it."""
        view = repo_view(repo)
        snapshot = snapshot_of(view)
        wanted = path.strip("/")
        standing = next((f for f in snapshot.files if f.path == wanted), None)
        if standing is None:
            known = wanted in view.state.files
            raise HTTPException(
                404,
                f"{wanted!r} is not in a neighborhood: "
                + ("only parsed source files are clustered" if known else "no such file"),
            )
        record = next(n for n in snapshot.neighborhoods if n.id == standing.neighborhood)
        return FileNeighborhood(
            repo=repo,
            path=wanted,
            standing=Standing.model_validate(standing, from_attributes=True),
            neighborhood=summary(record),
            snapshot=stamp(view),
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/neighborhood-changes", response_model=ChangePage)
    async def neighborhood_changes(repo: str, limit: int = Query(50, ge=1, le=500)) -> ChangePage:
        """What the last reclusters changed: created, removed, split, merged, moved, cohesion."""
        view = repo_view(repo)
        recent = list(view.changes)[::-1]
        return ChangePage(
            repo=repo,
            total=len(recent),
            items=[
                ChangeOut(
                    snapshot=c.snapshot,
                    computed_at=c.computed_at,
                    graph_seq=c.graph_seq,
                    indexed_commit=c.indexed_commit,
                    change=c.change,
                )
                for c in recent[:limit]
            ],
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/hubs", response_model=StandingPage)
    async def hubs(
        repo: str,
        only_flagged: bool = Query(False, description="only files above the hub threshold"),
        limit: int = Query(20, ge=1, le=MAX_PAGE),
    ) -> StandingPage:
        """The most connected files, by degree; ``hub`` marks those above max(p99, 50)."""
        view = repo_view(repo)
        snapshot = snapshot_of(view)
        ranked = sorted(
            (f for f in snapshot.files if f.degree > 0 and (f.hub or not only_flagged)),
            key=lambda f: (-f.degree, f.path),
        )
        return standings(view, ranked[:limit], len(ranked), 0, limit, snapshot.hub_threshold)

    @router.get("/repositories/{repo}/importance", response_model=StandingPage)
    async def importance(
        repo: str,
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> StandingPage:
        """Files by composite importance: 0.6 PageRank over imports + 0.4 keyword centrality."""
        view = repo_view(repo)
        ranked = by_importance(snapshot_of(view))
        return standings(view, ranked[offset : offset + limit], len(ranked), offset, limit)

    def summaries(view: RepoView) -> tuple[dict[str, fs.FileCounts], dict[str, fs.FolderSummary]]:
        def compute() -> tuple[dict[str, fs.FileCounts], dict[str, fs.FolderSummary]]:
            counts = fs.file_counts(view.state.files, view.state.edges)
            return counts, fs.folder_summaries(counts)

        return cache.get(view, "folders", compute)

    @router.get("/repositories/{repo}/folders", response_model=FolderPage)
    async def folders(
        repo: str,
        level: int = Query(1, ge=1, description="height bottom-up: 1 holds only files"),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=MAX_PAGE),
    ) -> FolderPage:
        """Folders of one level with their files, classes, functions and imports."""
        view = repo_view(repo)
        page = fs.folders_at_level(summaries(view)[1], level, offset=offset, limit=limit)
        return FolderPage(
            repo=repo,
            level=level,
            total=page.total,
            offset=offset,
            limit=limit,
            items=[FolderOut.model_validate(f, from_attributes=True) for f in page.items],
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/files-by-level", response_model=FileLevelPage)
    async def files_by_level(
        repo: str,
        level: int = Query(1, ge=1, description="the level of the folders holding them"),
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=MAX_PAGE),
    ) -> FileLevelPage:
        """Files directly in the folders of one level, with their counts."""
        view = repo_view(repo)
        counts, folder_map = summaries(view)
        page = fs.files_at_level(folder_map, counts, level, offset=offset, limit=limit)
        return FileLevelPage(
            repo=repo,
            level=level,
            total=page.total,
            offset=offset,
            limit=limit,
            items=[FileCountsOut.model_validate(f, from_attributes=True) for f in page.items],
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/overview", response_model=Overview)
    async def overview(repo: str, limit: int = Query(10, ge=1, le=100)) -> Overview:
        """Languages, sizes, major neighborhoods, hubs, external libraries, top files."""
        view = repo_view(repo)
        snapshot = view.neighborhoods

        def compute() -> Any:
            graph = view.file_graph.graph() if view.file_graph is not None else None
            ranking = (
                [
                    FileImportance(f.path, f.pagerank, f.semantic, f.importance)
                    for f in by_importance(snapshot)
                ]
                if snapshot is not None and not view.neighborhoods_stale
                else None
            )
            return repository_overview(
                repo,
                view.state.files,
                view.state.edges,
                graph=graph,
                ranking=ranking,
                limit=100,
            )

        full = cache.get(view, "overview", compute)
        major = [n for n in (snapshot.neighborhoods if snapshot else ()) if n.size > 1]
        return Overview.model_validate(
            {
                "repo": repo,
                "sizes": full.sizes,
                "languages": full.languages.items[:limit],
                "neighborhoods_total": len(major),
                "neighborhoods": [summary(n) for n in major[:limit]],
                "hubs": full.hubs.items[:limit],
                "hub_threshold": full.hub_threshold,
                "libraries_total": full.libraries.total,
                "libraries": full.libraries.items[:limit],
                "importance": full.importance.items[:limit],
                "snapshot": stamp(view),
                "freshness": model.freshness(repo),
            },
            from_attributes=True,
        )

    return router
