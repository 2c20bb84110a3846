"""Neighborhoods, importance, hubs, folders and the overview.

The neighborhoods, standings, hubs and ranking come from the repository's last
snapshot (computed by the worker that owns it); folder summaries and the overview are
computed here from the materialized state, once per state version. Every answer is
paged or capped, carries the true total, the snapshot it comes from (and whether the
graph moved since) and the repository's freshness.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    Standing,
    StandingPage,
)
from query.overview import folder_summary as fs
from query.overview.overview import repository_overview
from query.read_model import RepoView
from query.service.base import ServiceBase
from query.service.errors import NotFound, NotReady
from query.snapshot_stamp import stamp
from stores.neighborhoods import NeighborhoodRecord, NeighborhoodSnapshot
from stores.projections.importance import FileImportance

Summaries = tuple[dict[str, fs.FileCounts], dict[str, fs.FolderSummary]]


def summary(record: NeighborhoodRecord) -> NeighborhoodSummary:
    return NeighborhoodSummary.model_validate(record, from_attributes=True)


def by_importance(snapshot: NeighborhoodSnapshot) -> list[Any]:
    return sorted(snapshot.files, key=lambda f: (-f.importance, f.path))


def snapshot_of(view: RepoView) -> NeighborhoodSnapshot:
    if view.neighborhoods is None:
        raise NotReady(f"no neighborhoods for {view.state.repo!r} yet: the first recluster is due")
    return view.neighborhoods


class NeighborhoodAnswers(ServiceBase):
    def neighborhoods(
        self,
        repo: str,
        kind: str | None = None,
        min_size: int = 1,
        offset: int = 0,
        limit: int = 50,
    ) -> NeighborhoodPage:
        """The repository's neighborhoods, largest first (none before the first recluster)."""
        view = self.view(repo)
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
            freshness=self.model.freshness(repo),
        )

    def neighborhood(
        self, repo: str, nid: str, offset: int = 0, limit: int = 50, links: int = 20
    ) -> NeighborhoodDetail:
        """One neighborhood: members by importance, cohesion, its heaviest links."""
        view = self.view(repo)
        snapshot = snapshot_of(view)
        records = {n.id: n for n in snapshot.neighborhoods}
        record = records.get(nid)
        if record is None:
            raise NotFound(f"no neighborhood {nid!r} in {repo!r} (ids survive reclustering)")
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
            freshness=self.model.freshness(repo),
        )

    def neighborhood_of(self, repo: str, path: str) -> FileNeighborhood:
        """The neighborhood a file belongs to, and its standing in it."""
        view = self.view(repo)
        snapshot = snapshot_of(view)
        wanted = path.strip("/")
        standing = next((f for f in snapshot.files if f.path == wanted), None)
        if standing is None:
            known = wanted in view.state.files
            raise NotFound(
                f"{wanted!r} is not in a neighborhood: "
                + ("only parsed source files are clustered" if known else "no such file")
            )
        record = next(n for n in snapshot.neighborhoods if n.id == standing.neighborhood)
        return FileNeighborhood(
            repo=repo,
            path=wanted,
            standing=Standing.model_validate(standing, from_attributes=True),
            neighborhood=summary(record),
            snapshot=stamp(view),
            freshness=self.model.freshness(repo),
        )

    def neighborhood_changes(self, repo: str, limit: int = 50) -> ChangePage:
        """What the last reclusters changed, newest first."""
        view = self.view(repo)
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
            freshness=self.model.freshness(repo),
        )

    def hubs(self, repo: str, only_flagged: bool = False, limit: int = 20) -> StandingPage:
        """The most connected files by degree (``hub``: above the snapshot's threshold)."""
        view = self.view(repo)
        snapshot = snapshot_of(view)
        ranked = sorted(
            (f for f in snapshot.files if f.degree > 0 and (f.hub or not only_flagged)),
            key=lambda f: (-f.degree, f.path),
        )
        return self._standings(view, ranked[:limit], len(ranked), 0, limit, snapshot.hub_threshold)

    def importance(self, repo: str, offset: int = 0, limit: int = 50) -> StandingPage:
        """Files by composite importance, most important first."""
        view = self.view(repo)
        ranked = by_importance(snapshot_of(view))
        return self._standings(view, ranked[offset : offset + limit], len(ranked), offset, limit)

    def _standings(
        self,
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
            freshness=self.model.freshness(view.state.repo),
        )

    def _summaries(self, view: RepoView) -> Summaries:
        def compute() -> Summaries:
            counts = fs.file_counts(view.state.files, view.state.edges)
            return counts, fs.folder_summaries(counts)

        return self._cache.get(view, "folders", compute)

    def folders(self, repo: str, level: int = 1, offset: int = 0, limit: int = 50) -> FolderPage:
        """Folders of one level (bottom-up height; 1 holds only files) with their counts."""
        view = self.view(repo)
        page = fs.folders_at_level(self._summaries(view)[1], level, offset=offset, limit=limit)
        return FolderPage(
            repo=repo,
            level=level,
            total=page.total,
            offset=offset,
            limit=limit,
            items=[FolderOut.model_validate(f, from_attributes=True) for f in page.items],
            freshness=self.model.freshness(repo),
        )

    def files_by_level(
        self, repo: str, level: int = 1, offset: int = 0, limit: int = 100
    ) -> FileLevelPage:
        """Files directly in the folders of one level, with their counts."""
        view = self.view(repo)
        counts, folder_map = self._summaries(view)
        page = fs.files_at_level(folder_map, counts, level, offset=offset, limit=limit)
        return FileLevelPage(
            repo=repo,
            level=level,
            total=page.total,
            offset=offset,
            limit=limit,
            items=[FileCountsOut.model_validate(f, from_attributes=True) for f in page.items],
            freshness=self.model.freshness(repo),
        )

    def overview(self, repo: str, limit: int = 10) -> Overview:
        """Languages, sizes, major neighborhoods, hubs, external libraries, top files."""
        view = self.view(repo)
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

        full = self._cache.get(view, "overview", compute)
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
                "freshness": self.model.freshness(repo),
            },
            from_attributes=True,
        )
