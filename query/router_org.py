"""The router's org-wide context packs, session starts and graph searches (issue 18).

Each asks every shard for its candidates on one scale and merges them with the
functions a replica holding everything merges its own with (query/service/
org_answers.py, org_graph_search.py), so the router's answer is that replica's:

- ``/context``: the three passes of org-wide search (`Router.across`) for the pack's
  seeds; the seeds kept across shards planned into sections (query/org_context.py);
  each section packed by a replica of its repository's shard (``/shard/context``);
- ``/session-start``: the three passes, the last each shard's best files with their
  neighborhoods (``/shard/session-start``); grouped across shards;
- ``/graph-search``: each shard's IDF figures per channel, summed; each shard's best
  hits under them; merged and paged.

`OrgFanOut` asks and merges; the routes declare the parameters (the replica's names
and bounds) and stamp the answer with the shards that answered and those missing
(`query.router.stamp`). A shard missing from any pass is missing from the answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from query.audit_log import note_repositories
from query.graph_search_schemas import GraphCorpusOut, OrgGraphSearchPage
from query.org_api import MAX_OFFSET
from query.retrieval_schemas import (
    OrgContextOut,
    OrgSearchPage,
    OrgSessionStart,
    PackSections,
    SessionCandidates,
)
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

Answers = list[tuple[ShardReplicas, Any]]
A = TypeVar("A", OrgContextOut, OrgSessionStart, OrgGraphSearchPage)


@dataclass(frozen=True, slots=True)
class Merged(Generic[A]):
    """An org-wide answer merged across shards, who answered it, and who did not."""

    answer: A
    answered: list[ShardReplicas]
    missing: list[str]

    def response(self, request: Request, repos: Iterable[str]) -> JSONResponse:
        """The answer as JSON with its shards (``repos``: the audit line's)."""
        note_repositories(request.scope, sorted(set(repos)))
        body = self.answer.model_dump(mode="json", exclude={"partitions"})
        stamped = stamp(self.answered, self.missing, partial=self.answer.partial)
        return JSONResponse({**body, **stamped})


def merged(answer: A, found: Answers, *missing: Sequence[str]) -> Merged[A]:
    """``answer`` made of ``found`` (the last pass's answers); ``missing``: each pass's."""
    gone = sorted({name for names in missing for name in names})
    return Merged(answer, [s for s, _ in found if s.shard.describe() not in gone], gone)


@dataclass(frozen=True, slots=True)
class OrgFanOut:
    """The org-wide answers of a router: each shard asked, the answers merged."""

    router: Router
    headers: Mapping[str, str]

    async def context(
        self, q: str, repos: str | None, budget: int, seeds: int
    ) -> Merged[OrgContextOut]:
        body = {"q": q, "repos": repos, "limit": seeds, "max_tokens": CANDIDATES_TOKENS}
        found, missing = await self.router.across("/shard/search", body, self.headers)
        pages = [OrgSearchPage.model_validate(page) for _, page in found]
        planned = sections_asked(merged_hits(pages, seeds), budget)
        owners = {id(s): s for p in planned if (s := self.router.shard_of(p.repo)) is not None}

        async def pack(shard: ShardReplicas) -> Any:
            mine = [p for p in planned if self.router.shard_of(p.repo) is shard]
            asked = {"q": q, "sections": [p.model_dump(mode="json") for p in mine]}
            return await self.router.json_of(
                shard, "POST", "/shard/context", json=asked, headers=self.headers
            )

        packed, lost = await self.router.each(pack, list(owners.values()))
        built = {c.repo: c for _, p in packed for c in PackSections.model_validate(p).sections}
        sections = [built[p.repo] for p in planned if p.repo in built]
        partial = bool(missing or lost) or any(p.partial for p in pages)
        answer = context_answer(q, pages, sections, budget, partitions="", partial=partial)
        return merged(answer, found, missing, lost)

    async def session_start(
        self, q: str, repos: str | None, top: int, hits: int, matched: int
    ) -> Merged[OrgSessionStart]:
        body = {"q": q, "repos": repos, "limit": hits, "max_tokens": CANDIDATES_TOKENS}
        found, missing = await self.router.across("/shard/session-start", body, self.headers)
        parts = [SessionCandidates.model_validate(part) for _, part in found]
        partial = bool(missing) or any(p.page.partial for p in parts)
        answer = session_answer(
            q, parts, top=top, hits=hits, matched=matched, partitions="", partial=partial
        )
        return merged(answer, found, missing)

    async def graph_search(
        self, q: str, offset: int, limit: int, **asked: Any
    ) -> Merged[OrgGraphSearchPage]:
        """``asked``: repos, channels, prefix and glob, as the replica's route takes them."""
        body: dict[str, Any] = {"q": q, **asked, "depth": offset + limit}
        got, missing = await self._each("/shard/graph-search/statistics", body)
        corpus = graph_corpus(GraphCorpusOut.model_validate(c) for _, c in got)
        body["corpus"] = corpus.model_dump(mode="json")
        found, lost = await self._each("/shard/graph-search", body, [s for s, _ in got])
        pages = [OrgGraphSearchPage.model_validate(page) for _, page in found]
        answer = graph_answer(
            q,
            pages,
            offset=offset,
            limit=limit,
            partitions="",
            partial=bool(missing or lost) or any(p.partial for p in pages),
        )
        return merged(answer, found, missing, lost)

    async def _each(
        self, path: str, body: Mapping[str, Any], shards: Sequence[ShardReplicas] | None = None
    ) -> tuple[Answers, list[str]]:
        return await self.router.each(
            lambda s: self.router.json_of(s, "POST", path, json=body, headers=self.headers),
            shards,
        )


def create_router_org_routes(router: Router) -> APIRouter:
    api = APIRouter()

    def fan_out(request: Request) -> OrgFanOut:
        return OrgFanOut(router, forwarded(request))

    @api.get("/context")
    async def context_all(
        request: Request,
        q: str = Query(..., min_length=1),
        repos: str | None = Query(None, max_length=2000),
        budget: int = Query(8000, ge=50, le=100_000),
        seeds: int = Query(3, ge=1, le=10),
    ) -> JSONResponse:
        done = await fan_out(request).context(q, repos, budget, seeds)
        return done.response(request, (s.repo for s in done.answer.sections))

    @api.get("/session-start")
    async def session_start_all(
        request: Request,
        q: str = Query(..., min_length=1),
        repos: str | None = Query(None, max_length=2000),
        top: int = Query(3, ge=1, le=10),
        hits: int = Query(20, ge=1, le=100),
        matched: int = Query(5, ge=1, le=20),
    ) -> JSONResponse:
        done = await fan_out(request).session_start(q, repos, top, hits, matched)
        return done.response(request, (n.repo for n in done.answer.neighborhoods))

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
        done = await fan_out(request).graph_search(
            q, offset, limit, repos=repos, channels=channels, prefix=prefix, glob=glob
        )
        return done.response(request, done.answer.freshness)

    return api
