"""Search and context packs over HTTP: where to look, and what to read within a budget.

``search`` ranks files for a question (BM25 over chunks re-ranked by the files and
names the question mentions, by importance when the neighborhoods are known) and
says which retrievers answered; each hit carries the lines to read first, its inbound
degree and its neighborhood. ``context`` builds a token-budgeted pack for a question,
a symbol or a file. Both are bounded by ``max_tokens`` / ``budget`` and carry
freshness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fastapi import APIRouter, HTTPException, Query

from query.neighborhood_api import StateCache
from query.read_model import ReadModel, RepoView
from query.repo_lookup import repo_view as lookup_repo
from query.retrieval import proximity_of, question_pack
from query.retrieval_schemas import (
    ChunkOut,
    ContextOut,
    RankingOut,
    SearchHit,
    SearchPage,
    SeedNeighborhood,
    SessionStart,
)
from query.search.adjacency import Adjacency
from query.search.context_pack import ContextPack, file_context, render
from query.search.context_pack import symbol_context as symbol_pack
from query.search.ranking import MAX_QUESTION_CHARS, Proximity, RankWeights, question_read
from query.search.session_memory import SessionMemory
from stores.freshness import Freshness
from stores.records import ChunkRecord

READ_LINES = 40  # the lines an agent should read first


def read_range(chunk: ChunkRecord | None) -> str:
    if chunk is None:
        return "L1-40"
    end = min(chunk.line_end, chunk.line_start + READ_LINES - 1)
    return f"L{chunk.line_start}-{end}"


def chunks_by_path(view: RepoView) -> dict[str, Sequence[ChunkRecord]]:
    return {path: record.chunks for path, record in view.state.files.items() if record.chunks}


def importance_of(view: RepoView) -> Mapping[str, float]:
    snapshot = view.neighborhoods
    return snapshot.importance() if snapshot else {}


def neighborhood_of(view: RepoView) -> Mapping[str, str]:
    snapshot = view.neighborhoods
    return snapshot.membership() if snapshot else {}


SESSION = Query(None, max_length=200, description="an id: recent answers lift its files")


def create_retrieval_routes(model: ReadModel) -> APIRouter:
    router = APIRouter(tags=["retrieval"])
    cache = StateCache()
    sessions = SessionMemory()

    def repo_view(repo: str) -> RepoView:
        return lookup_repo(model, repo)

    def adjacency(view: RepoView) -> Adjacency:
        return cache.get(view, "adjacency", lambda: Adjacency.of(view.state))

    def chunks(view: RepoView) -> dict[str, Sequence[ChunkRecord]]:
        return cache.get(view, "chunks", lambda: chunks_by_path(view))

    def weights_of(repo: str) -> RankWeights | None:
        held = model.ranking_of(repo)
        return held[1] if held is not None else None

    def proximity(view: RepoView, weights: RankWeights | None) -> Proximity | None:
        """The graph around the named files, when the weights read it (not by default)."""
        if weights is None or not weights.uses_proximity:
            return None
        return cache.get(
            view, "proximity", lambda: proximity_of(adjacency(view), neighborhood_of(view))
        )

    def ranking_out(repo: str) -> RankingOut:
        held = model.ranking_of(repo)
        if held is None:
            defaults = RankWeights().as_dict()
            return RankingOut(
                scope=None, source="defaults", weights=defaults, set_at=None, scores={}
            )
        profile, weights = held
        return RankingOut(
            scope=profile.scope,
            source=profile.source,
            weights=weights.as_dict(),
            set_at=profile.set_at,
            scores=profile.scores,
        )

    def hits_for(
        view: RepoView,
        q: str,
        limit: int,
        path_prefix: str | None,
        session: str | None,
    ) -> tuple[list[SearchHit], int]:
        repo = view.state.repo
        recent = sessions.boosts(repo, session) if session else None
        weights = weights_of(repo)
        ranked = view.retrieval.search(
            q,
            limit=limit,
            path_prefix=path_prefix,
            importance=importance_of(view),
            recent=recent,
            weights=weights,
            proximity=proximity(view, weights),
        )
        standing = {f.path: f for f in view.neighborhoods.files} if view.neighborhoods else {}
        labels = (
            {n.id: n.label for n in view.neighborhoods.neighborhoods} if view.neighborhoods else {}
        )
        hits = []
        for hit in ranked:
            chunk = view.retrieval.chunks.get(hit.best_chunk) if hit.best_chunk else None
            place = standing.get(hit.path)
            hits.append(
                SearchHit(
                    path=hit.path,
                    score=round(hit.score, 6),
                    signals={k: round(v, 6) for k, v in sorted(hit.signals.items())},
                    best_chunk=(
                        ChunkOut.model_validate(chunk, from_attributes=True) if chunk else None
                    ),
                    read=read_range(chunk),
                    inbound_degree=place.in_degree if place else None,
                    neighborhood=place.neighborhood if place else None,
                    neighborhood_label=labels.get(place.neighborhood) if place else None,
                )
            )
        return hits, len(ranked)

    @router.get("/repositories/{repo}/search", response_model=SearchPage)
    async def search(
        repo: str,
        q: str = Query(..., min_length=1, description="a question, an issue's text, a name"),
        limit: int = Query(10, ge=1, le=100),
        path_prefix: str | None = Query(None, description="only files under this prefix"),
        max_tokens: int = Query(2000, ge=100, le=50_000, description="bound on the answer"),
        session: str | None = SESSION,
    ) -> SearchPage:
        """Files ranked for a question, with the lines to read first."""
        view = repo_view(repo)
        read = question_read(q)
        ranked, total = hits_for(view, read, limit, path_prefix, session)
        items: list[SearchHit] = []
        used = 0
        for item in ranked:
            cost = len(item.model_dump_json()) // 4
            if items and used + cost > max_tokens:
                break
            items.append(item)
            used += cost
        if session:
            sessions.touch(repo, session, [item.path for item in items[:3]])
        return SearchPage(
            repo=repo,
            query=read,
            question_chars=len(q),
            question_truncated=len(read) < len(q),
            retrievers=list(view.retrieval.retrievers),
            ranking=ranking_out(repo),
            total=total,
            truncated=len(items) < total,
            items=items,
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/ranking", response_model=RankingOut)
    async def ranking(repo: str) -> RankingOut:
        """The weights search ranks this repository's files with, and where they come
        from: its own profile, the one for every repository ('*'), or the defaults."""
        repo_view(repo)
        return ranking_out(repo)

    @router.get("/repositories/{repo}/session-start", response_model=SessionStart)
    async def session_start(
        repo: str,
        q: str = Query(..., min_length=1, description="the first message of the session"),
        top: int = Query(3, ge=1, le=10, description="neighborhoods to return"),
        hits: int = Query(20, ge=1, le=100, description="search hits mapped to neighborhoods"),
        matched: int = Query(5, ge=1, le=20, description="matched files per neighborhood"),
        session: str | None = SESSION,
    ) -> SessionStart:
        """Where to start: the neighborhoods the first message falls in, with their
        entry points, cohesion and matched files (one-file neighborhoods left out)."""
        view = repo_view(repo)
        read = question_read(q)
        found, _ = hits_for(view, read, hits, None, session)
        records = {n.id: n for n in view.neighborhoods.neighborhoods} if view.neighborhoods else {}
        grouped: dict[str, list[SearchHit]] = {}
        for hit in found:
            record = records.get(hit.neighborhood or "")
            if record is not None and record.size > 1:
                grouped.setdefault(record.id, []).append(hit)
        ranked = sorted(grouped.items(), key=lambda item: (-sum(h.score for h in item[1]), item[0]))
        chosen = [
            SeedNeighborhood(
                id=nid,
                label=records[nid].label,
                size=records[nid].size,
                cohesion=records[nid].cohesion,
                entry_points=list(records[nid].entry_points),
                score=round(sum(h.score for h in members), 6),
                matched=members[:matched],
            )
            for nid, members in ranked[:top]
        ]
        if session:
            sessions.touch(repo, session, [m.path for n in chosen for m in n.matched[:1]])
        return SessionStart(
            repo=repo,
            query=read,
            question_chars=len(q),
            question_truncated=len(read) < len(q),
            retrievers=list(view.retrieval.retrievers),
            total=len(ranked),
            neighborhoods=chosen,
            snapshot_stale=view.neighborhoods_stale if view.neighborhoods else None,
            freshness=model.freshness(repo),
        )

    @router.get("/repositories/{repo}/context", response_model=ContextOut)
    async def context(
        repo: str,
        q: str | None = Query(None, description="a question or an issue's text"),
        symbol: str | None = Query(None, description="a symbol name: 'Session.send'"),
        path: str | None = Query(None, description="a file's path"),
        budget: int = Query(8000, ge=50, le=100_000, description="tokens (characters / 4)"),
        seeds: int = Query(3, ge=1, le=10, description="search hits to start from (with q)"),
        session: str | None = SESSION,
    ) -> ContextOut:
        """A context pack within the budget: targets in full, related code as signatures."""
        view = repo_view(repo)
        if sum(x is not None for x in (q, symbol, path)) != 1:
            raise HTTPException(422, "give exactly one of q, symbol, path")
        adj, by_path = adjacency(view), chunks(view)
        if path is not None:
            if path.strip("/") not in view.state.files:
                raise HTTPException(404, f"no file {path!r} in repository {repo!r}")
            pack = file_context(view.state, by_path, path.strip("/"), budget=budget, adjacency=adj)
        elif symbol is not None:
            pack = symbol_pack(view.state, by_path, symbol, budget=budget, adjacency=adj)
        else:
            assert q is not None
            weights = weights_of(repo)
            pack = question_pack(
                view.state,
                view.retrieval,
                question_read(q),
                by_path,
                budget=budget,
                seeds=seeds,
                importance=importance_of(view),
                recent=sessions.boosts(repo, session) if session else None,
                adjacency=adj,
                weights=weights,
                proximity=proximity(view, weights),
            )
        if session:
            sessions.touch(repo, session, [t.path for t in pack.targets if t.path])
        truncated = None if q is None else len(q) > MAX_QUESTION_CHARS
        return context_out(repo, pack, model.freshness(repo), question_truncated=truncated)

    return router


def context_out(
    repo: str, pack: ContextPack, freshness: Freshness, *, question_truncated: bool | None = None
) -> ContextOut:
    return ContextOut(
        repo=repo,
        question_truncated=question_truncated,
        title=pack.title,
        text=render(pack),
        tokens=pack.tokens,
        budget=pack.budget,
        confidence=round(pack.confidence, 4),
        targets=[t.key for t in pack.targets],
        targets_total=pack.targets_total,
        read_first=[
            f"{r.path}:L{r.line_start}-{r.line_end} (inbound {r.inbound})" for r in pack.files
        ],
        reasoning=list(pack.reasoning),
        freshness=freshness,
    )
