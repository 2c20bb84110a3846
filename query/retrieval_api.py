"""Search and context packs over HTTP: where to look, and what to read within a budget.

The answers are the `QueryService`'s (query/service/retrieval.py says how they rank
and pack); these routes declare the parameters, their bounds and descriptions.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from query.retrieval_schemas import (
    ContextOut,
    CorpusOut,
    CorpusQuestion,
    OrgSearchPage,
    RankingOut,
    SearchPage,
    SessionStart,
)
from query.service import QueryService
from query.service.errors import InvalidArguments

SESSION = Query(None, max_length=200, description="an id: recent answers lift its files")


def create_retrieval_routes(service: QueryService) -> APIRouter:
    router = APIRouter(tags=["retrieval"])

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
        return service.search(
            repo,
            q,
            limit=limit,
            path_prefix=path_prefix,
            max_tokens=max_tokens,
            session=session,
        )

    @router.get("/search", response_model=OrgSearchPage)
    async def search_all(
        q: str = Query(..., min_length=1, description="a question, an issue's text, a name"),
        repos: str | None = Query(
            None,
            max_length=2000,
            description="the repositories to search: a comma list of ids, root names, "
            "substrings or globs ('payments-*,shared'); every repository held when absent",
        ),
        limit: int = Query(10, ge=1, le=100),
        max_tokens: int = Query(2000, ge=100, le=50_000, description="bound on the answer"),
    ) -> OrgSearchPage:
        """Files ranked across repositories on one scale (BM25 with the statistics of
        every repository searched), each hit with its repository and freshness."""
        return service.search_all(q, repos=repos, limit=limit, max_tokens=max_tokens)

    @router.post("/shard/search/statistics", response_model=CorpusOut, include_in_schema=False)
    async def search_statistics(question: CorpusQuestion) -> CorpusOut:
        """This replica's share of an org-wide question's figures: a router's first pass
        over its shards (their sum is the corpus every shard then ranks with)."""
        return service.search_statistics(question.q, repos=question.repos)

    @router.post("/shard/search/top", response_model=CorpusOut, include_in_schema=False)
    async def search_top(question: CorpusQuestion) -> CorpusOut:
        """The corpus given, with this replica's best BM25 file score under it: a
        router's second pass (it keeps the greatest)."""
        if question.corpus is None:
            raise InvalidArguments("give the corpus: the sum of every shard's statistics")
        return service.search_top(question.q, question.corpus, repos=question.repos)

    @router.post("/shard/search", response_model=OrgSearchPage, include_in_schema=False)
    async def search_corpus(question: CorpusQuestion) -> OrgSearchPage:
        """`GET /search` ranked with the whole corpus's figures: a router's last pass.
        The three /shard routes are the router's protocol, not in the API's schema."""
        if question.corpus is None or question.corpus.top is None:
            raise InvalidArguments("give the corpus with its top: the router's first two passes")
        return service.search_corpus(
            question.q,
            question.corpus,
            repos=question.repos,
            limit=question.limit,
            max_tokens=question.max_tokens,
        )

    @router.get("/repositories/{repo}/ranking", response_model=RankingOut)
    async def ranking(repo: str) -> RankingOut:
        """The weights search ranks this repository's files with, and where they come
        from: its own profile, the one for every repository ('*'), or the defaults."""
        return service.ranking(repo)

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
        return service.session_start(repo, q, top=top, hits=hits, matched=matched, session=session)

    @router.get("/repositories/{repo}/context", response_model=ContextOut)
    async def context(
        repo: str,
        q: str | None = Query(None, description="a question or an issue's text"),
        symbol: str | None = Query(None, description="a symbol name: 'Session.send'"),
        path: str | None = Query(
            None, description="a file's path; with symbol, a file or folder to look in"
        ),
        budget: int = Query(8000, ge=50, le=100_000, description="tokens (characters / 4)"),
        seeds: int = Query(3, ge=1, le=10, description="search hits to start from (with q)"),
        session: str | None = SESSION,
    ) -> ContextOut:
        """A context pack within the budget: targets in full, related code as signatures."""
        return service.context(
            repo, q=q, symbol=symbol, path=path, budget=budget, seeds=seeds, session=session
        )

    return router
