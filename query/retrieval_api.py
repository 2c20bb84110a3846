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
from pydantic import BaseModel, Field

from processors.retrieval.adjacency import Adjacency
from processors.retrieval.context_pack import ContextPack, build_pack, file_context, render
from processors.retrieval.context_pack import symbol_context as symbol_pack
from query.neighborhood_api import StateCache
from query.read_model import ReadModel, RepoView
from query.repo_lookup import repo_view as lookup_repo
from stores.freshness import Freshness
from stores.records import ChunkRecord

READ_LINES = 40  # the lines an agent should read first


class ChunkOut(BaseModel):
    id: str
    kind: str
    qualname: str | None
    signature: str | None
    line_start: int
    line_end: int


class SearchHit(BaseModel):
    path: str
    score: float
    signals: dict[str, float] = Field(description="bm25, path, symbol, filename, structural")
    best_chunk: ChunkOut | None
    read: str = Field(description="the lines to read first: 'L120-159'")
    inbound_degree: int | None = Field(description="files depending on it (None: unknown)")
    neighborhood: str | None
    neighborhood_label: str | None


class SearchPage(BaseModel):
    repo: str
    query: str
    retrievers: list[str]
    total: int = Field(description="files matched before the cut")
    truncated: bool = Field(description="hits left out to stay within max_tokens or limit")
    items: list[SearchHit]
    freshness: Freshness


class ContextOut(BaseModel):
    repo: str
    title: str
    text: str = Field(description="for the agent: files grouped, targets marked [TARGET]")
    tokens: int = Field(description="estimated (characters / 4); never over the budget")
    budget: int
    confidence: float
    targets: list[str]
    targets_total: int
    read_first: list[str] = Field(description="'path:L10-49 (inbound 12)' per file")
    reasoning: list[str]
    freshness: Freshness


def read_range(chunk: ChunkRecord | None) -> str:
    if chunk is None:
        return "L1-40"
    end = min(chunk.line_end, chunk.line_start + READ_LINES - 1)
    return f"L{chunk.line_start}-{end}"


def chunks_by_path(view: RepoView) -> dict[str, Sequence[ChunkRecord]]:
    return {path: record.chunks for path, record in view.state.files.items() if record.chunks}


def importance_of(view: RepoView) -> Mapping[str, float]:
    snapshot = view.neighborhoods
    return {f.path: f.importance for f in snapshot.files} if snapshot else {}


def create_retrieval_routes(model: ReadModel) -> APIRouter:
    router = APIRouter(tags=["retrieval"])
    cache = StateCache()

    def repo_view(repo: str) -> RepoView:
        return lookup_repo(model, repo)

    def adjacency(view: RepoView) -> Adjacency:
        return cache.get(view, "adjacency", lambda: Adjacency.of(view.state))

    def chunks(view: RepoView) -> dict[str, Sequence[ChunkRecord]]:
        return cache.get(view, "chunks", lambda: chunks_by_path(view))

    @router.get("/repositories/{repo}/search", response_model=SearchPage)
    async def search(
        repo: str,
        q: str = Query(..., min_length=1, description="a question, an issue's text, a name"),
        limit: int = Query(10, ge=1, le=100),
        path_prefix: str | None = Query(None, description="only files under this prefix"),
        max_tokens: int = Query(2000, ge=100, le=50_000, description="bound on the answer"),
    ) -> SearchPage:
        """Files ranked for a question, with the lines to read first."""
        view = repo_view(repo)
        ranked = view.retrieval.search(
            q, limit=limit, path_prefix=path_prefix, importance=importance_of(view)
        )
        standing = {f.path: f for f in view.neighborhoods.files} if view.neighborhoods else {}
        labels = (
            {n.id: n.label for n in view.neighborhoods.neighborhoods} if view.neighborhoods else {}
        )
        items: list[SearchHit] = []
        used = 0
        for hit in ranked:
            chunk = view.retrieval.chunks.get(hit.best_chunk) if hit.best_chunk else None
            place = standing.get(hit.path)
            item = SearchHit(
                path=hit.path,
                score=round(hit.score, 6),
                signals={k: round(v, 6) for k, v in sorted(hit.signals.items())},
                best_chunk=ChunkOut.model_validate(chunk, from_attributes=True) if chunk else None,
                read=read_range(chunk),
                inbound_degree=place.in_degree if place else None,
                neighborhood=place.neighborhood if place else None,
                neighborhood_label=labels.get(place.neighborhood) if place else None,
            )
            cost = len(item.model_dump_json()) // 4
            if items and used + cost > max_tokens:
                break
            items.append(item)
            used += cost
        return SearchPage(
            repo=repo,
            query=q,
            retrievers=list(view.retrieval.retrievers),
            total=len(ranked),
            truncated=len(items) < len(ranked),
            items=items,
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
            hits = view.retrieval.search(q, limit=seeds, importance=importance_of(view))
            top = hits[0].score if hits and hits[0].score > 0 else 1.0
            starts = [(h.best_chunk or f"file:{h.path}", h.score / top) for h in hits]
            pack = build_pack(
                view.state, by_path, starts, budget=budget, title=q[:80], adjacency=adj
            )
        return context_out(repo, pack, model.freshness(repo))

    return router


def context_out(repo: str, pack: ContextPack, freshness: Freshness) -> ContextOut:
    return ContextOut(
        repo=repo,
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
