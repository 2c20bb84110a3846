"""Org-wide context packs, session starts and graph searches over HTTP (issue 18).

``GET /context``, ``/session-start`` and ``/graph-search`` are the repository's routes
of those names without the repository: over every repository the token may read, or
those ``repos`` names. The ``/shard/...`` POSTs are a router's protocol (its passes
over the shards, query/router.py), not in the API's schema. The answers are the
`QueryService`'s (query/service/org_answers.py).
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from query.graph_search_api import MAX_LIMIT
from query.graph_search_schemas import GraphCorpusOut, GraphCorpusQuestion, OrgGraphSearchPage
from query.retrieval_schemas import (
    CorpusQuestion,
    OrgContextOut,
    OrgSessionStart,
    PackQuestion,
    PackSections,
    SessionCandidates,
)
from query.search.graph_search import CHANNELS
from query.service import QueryService
from query.service.errors import InvalidArguments

MAX_OFFSET = 1000
"""An org-wide channel is merged from each repository's first offset + limit hits."""


def repos_query() -> str | None:
    return Query(
        None,
        max_length=2000,
        description="the repositories to draw from: a comma list of ids, root names, "
        "substrings or globs ('payments-*,shared'); every repository held when absent",
    )


def create_org_routes(service: QueryService) -> APIRouter:
    router = APIRouter(tags=["retrieval"])

    @router.get("/context", response_model=OrgContextOut)
    async def context_all(
        q: str = Query(..., min_length=1, description="a question or an issue's text"),
        repos: str | None = repos_query(),
        budget: int = Query(8000, ge=50, le=100_000, description="tokens (characters / 4)"),
        seeds: int = Query(3, ge=1, le=10, description="search hits to start from"),
    ) -> OrgContextOut:
        """A context pack across repositories within one budget: the question's best
        files on the org-wide search's scale are the targets, each repository's a
        section (its pack, its freshness) with a share of the budget by their scores."""
        return service.context_all(q, repos=repos, budget=budget, seeds=seeds)

    @router.get("/session-start", response_model=OrgSessionStart)
    async def session_start_all(
        q: str = Query(..., min_length=1, description="the first message of the session"),
        repos: str | None = repos_query(),
        top: int = Query(3, ge=1, le=10, description="neighborhoods to return"),
        hits: int = Query(20, ge=1, le=100, description="search hits mapped to neighborhoods"),
        matched: int = Query(5, ge=1, le=20, description="matched files per neighborhood"),
    ) -> OrgSessionStart:
        """Where to start across repositories: the neighborhoods the first message's
        best files (ranked as org-wide search ranks) fall in, each with its repository."""
        return service.session_start_all(q, repos=repos, top=top, hits=hits, matched=matched)

    @router.get("/graph-search", response_model=OrgGraphSearchPage)
    async def graph_search_all(
        q: str = Query(..., min_length=1, max_length=200, description="names, words or a glob"),
        repos: str | None = repos_query(),
        channels: str | None = Query(
            None, description=f"comma-separated, default all: {','.join(CHANNELS)}"
        ),
        prefix: str | None = Query(None, description="only files under this path prefix"),
        glob: str | None = Query(None, description="only files matching: '**/models.py'"),
        offset: int = Query(0, ge=0, le=MAX_OFFSET, description="per channel"),
        limit: int = Query(10, ge=1, le=MAX_LIMIT, description="per channel"),
    ) -> OrgGraphSearchPage:
        """The seven-channel search across repositories: a term's rarity counted over
        every repository's files, each channel's hits merged and paged, each with its
        repository."""
        return service.graph_search_all(
            q, repos=repos, channels=channels, prefix=prefix, glob=glob, offset=offset, limit=limit
        )

    @router.post("/shard/context", response_model=PackSections, include_in_schema=False)
    async def context_sections(question: PackQuestion) -> PackSections:
        """The sections a router planned of an org-wide pack, each packed here."""
        return service.context_sections(question.q, question.sections)

    @router.post("/shard/session-start", response_model=SessionCandidates, include_in_schema=False)
    async def session_candidates(question: CorpusQuestion) -> SessionCandidates:
        """This replica's best files (``limit``) with the whole corpus's figures, and
        their neighborhoods: a router's last pass of an org-wide session start."""
        if question.corpus is None or question.corpus.top is None:
            raise InvalidArguments("give the corpus with its top: the router's first two passes")
        return service.session_candidates(
            question.q, question.corpus, repos=question.repos, hits=question.limit
        )

    @router.post(
        "/shard/graph-search/statistics", response_model=GraphCorpusOut, include_in_schema=False
    )
    async def graph_statistics(question: GraphCorpusQuestion) -> GraphCorpusOut:
        """This replica's share of an org-wide graph search's IDF figures."""
        return service.graph_statistics(question)

    @router.post("/shard/graph-search", response_model=OrgGraphSearchPage, include_in_schema=False)
    async def graph_candidates(question: GraphCorpusQuestion) -> OrgGraphSearchPage:
        """Each channel's best hits (``depth``) with the corpus's figures: a router's
        last pass of an org-wide graph search."""
        return service.graph_candidates(question)

    return router
