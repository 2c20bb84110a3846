"""The router's org-wide context packs, session starts and graph searches (issue 18).

Each asks every shard for its candidates on one scale and merges them with the
functions a replica holding everything merges its own with (query/service/
org_answers.py), so the router's answer is that replica's:

- ``/context``: the three passes of org-wide search (`Router.across`) for the pack's
  seeds; the seeds kept across shards planned into sections (query/org_context.py);
  each section packed by a replica of its repository's shard (``/shard/context``);
- ``/session-start``: the three passes, the last each shard's best files with their
  neighborhoods (``/shard/session-start``); grouped across shards;
- ``/graph-search``: each shard's IDF figures per channel, summed; each shard's best
  hits under them; merged and paged.

Every answer names the shards that answered and those missing (`query.router.stamp`).
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from query.audit_log import note_repositories
from query.graph_search_schemas import GraphCorpusOut, OrgGraphSearchPage
from query.org_api import MAX_OFFSET
from query.retrieval_schemas import OrgSearchPage, PackSections, SessionCandidates
from query.router import Router, ShardReplicas, forwarded, stamp
from query.service.errors import InvalidArguments
from query.service.graph_search import parse_channels
from query.service.org_answers import (
    CANDIDATES_TOKENS,
    context_answer,
    merged_hits,
    sections_asked,
    session_answer,
)
from query.service.org_graph_search import graph_answer, graph_corpus


def answered(shards: Any, *lost: list[str]) -> list[ShardReplicas]:
    """The shards of ``shards`` (answers by shard) not among the ``lost`` of later passes."""
    gone = {name for names in lost for name in names}
    return [s for s, _ in shards if s.shard.describe() not in gone]


def create_router_org_routes(router: Router) -> APIRouter:
    api = APIRouter()

    @api.get("/context")
    async def context_all(
        request: Request,
        q: str = Query(..., min_length=1),
        repos: str | None = Query(None, max_length=2000),
        budget: int = Query(8000, ge=50, le=100_000),
        seeds: int = Query(3, ge=1, le=10),
    ) -> JSONResponse:
        auth = forwarded(request)
        body = {"q": q, "repos": repos, "limit": seeds, "max_tokens": CANDIDATES_TOKENS}
        found, missing = await router.across("/shard/search", body, auth)
        pages = [OrgSearchPage.model_validate(page) for _, page in found]
        planned = sections_asked(q, merged_hits(pages, seeds), budget)
        owners: dict[str, ShardReplicas] = {}
        for section in planned:
            if (shard := router.shard_of(section.repo)) is not None:
                owners.setdefault(shard.shard.describe(), shard)

        async def pack(shard: ShardReplicas) -> Any:
            mine = [s for s in planned if router.shard_of(s.repo) is shard]
            asked = {"q": q, "sections": [s.model_dump(mode="json") for s in mine]}
            return await router.json_of(shard, "POST", "/shard/context", json=asked, headers=auth)

        packed, lost = await router.each(pack, list(owners.values()))
        built = {c.repo: c for _, p in packed for c in PackSections.model_validate(p).sections}
        sections = [built[s.repo] for s in planned if s.repo in built]
        missing = sorted({*missing, *lost})
        answer = context_answer(q, pages, sections, budget, partitions="", partial=bool(missing))
        note_repositories(request.scope, (s.repo for s in sections))
        return JSONResponse(
            {
                **answer.model_dump(mode="json", exclude={"partitions"}),
                **stamp(answered(found, lost), missing),
            }
        )

    @api.get("/session-start")
    async def session_start_all(
        request: Request,
        q: str = Query(..., min_length=1),
        repos: str | None = Query(None, max_length=2000),
        top: int = Query(3, ge=1, le=10),
        hits: int = Query(20, ge=1, le=100),
        matched: int = Query(5, ge=1, le=20),
    ) -> JSONResponse:
        body = {"q": q, "repos": repos, "limit": hits, "max_tokens": CANDIDATES_TOKENS}
        found, missing = await router.across("/shard/session-start", body, forwarded(request))
        parts = [SessionCandidates.model_validate(part) for _, part in found]
        answer = session_answer(
            q,
            parts,
            top=top,
            hits=hits,
            matched=matched,
            partitions="",
            partial=bool(missing),
        )
        note_repositories(request.scope, sorted({n.repo for n in answer.neighborhoods}))
        return JSONResponse(
            {
                **answer.model_dump(mode="json", exclude={"partitions"}),
                **stamp(answered(found), missing),
            }
        )

    @api.get("/graph-search")
    async def graph_search_all(
        request: Request,
        q: str = Query(..., min_length=1, max_length=200),
        repos: str | None = Query(None, max_length=2000),
        channels: str | None = None,
        prefix: str | None = None,
        glob: str | None = None,
        offset: int = Query(0, ge=0, le=MAX_OFFSET),
        limit: int = Query(10, ge=1, le=100),
    ) -> JSONResponse:
        try:
            parse_channels(channels)  # refused here, not as every shard's failure
        except InvalidArguments as exc:
            return JSONResponse({"detail": exc.message}, 422)
        auth = forwarded(request)
        body: dict[str, Any] = {
            "q": q,
            "repos": repos,
            "channels": channels,
            "prefix": prefix,
            "glob": glob,
            "depth": offset + limit,
        }
        got, missing = await router.each(
            lambda s: router.json_of(
                s, "POST", "/shard/graph-search/statistics", json=body, headers=auth
            )
        )
        corpus = graph_corpus(GraphCorpusOut.model_validate(c) for _, c in got)
        asked = {**body, "corpus": corpus.model_dump(mode="json")}
        found, lost = await router.each(
            lambda s: router.json_of(s, "POST", "/shard/graph-search", json=asked, headers=auth),
            [s for s, _ in got],
        )
        missing = sorted({*missing, *lost})
        answer = graph_answer(
            q,
            [OrgGraphSearchPage.model_validate(page) for _, page in found],
            offset=offset,
            limit=limit,
            partitions="",
            partial=bool(missing),
        )
        note_repositories(request.scope, sorted(answer.freshness))
        return JSONResponse(
            {
                **answer.model_dump(mode="json", exclude={"partitions"}),
                **stamp(answered(found), missing),
            }
        )

    return api
