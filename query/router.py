"""The router: one address in front of sharded query replicas (issue 18).

A stateless front that knows which shard holds which repository from the partition its
key is on (`query.materializer.partition_of`, the producers' partitioner) and each
shard's partitions (`query.shard`), and nothing else:

- a repository's request (``/repositories/{repo}/...``, any method) goes to a replica
  of its shard (the answer's ``Gazetteer-Shard`` and ``Gazetteer-Replica`` headers say
  which), the next replica of the shard when one does not answer or answers
  502/503/504 (the replicas of a shard are interchangeable), and comes back as the
  replica answered it; no replica left: 503 naming the shard;
- ``/repositories`` asks every shard and merges the pages by repository id (totals
  summed);
- ``/search`` (every repository) ranks across shards in the three passes of
  `query.org_search` (each shard's statistics, summed; each shard's best score under
  them, the greatest kept; each shard's ranking with the whole corpus), so that the
  merged ranking is the one a single replica holding everything would give (`across`);
- ``/context``, ``/session-start`` and ``/graph-search`` (every repository) are merged
  from each shard's candidates on one scale the same way (query/router_org.py);
- ``/health`` says, per shard, which replicas are ready; the router is ready when every
  shard has a ready replica;
- ``/mcp`` serves the query service's MCP tools, each call made as its route's request
  to the router itself (query/router_mcp.py).

Every merged answer names the shards that answered and those missing (``partial``):
a shard with no replica answering leaves its repositories out, and says so.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_args

import httpx
import structlog
from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from query.audit_log import AuditLog, note_repositories
from query.host_check import HostCheck, HostRule
from query.materializer import partition_of
from query.org_search import Corpus
from query.request_limits import RequestLimits, add_inner, add_outer
from query.retrieval_schemas import CorpusOut, OrgSearchPage
from query.router_mcp import mount_router_mcp
from query.service.org_answers import merged_hits
from query.service.repositories import RepositoryOrder, repository_key
from query.service.retrieval import corpus_in, corpus_out, within_tokens
from query.shard import Shard, parse_partitions, parse_shard

log = structlog.get_logger(__name__)

RETRIED = frozenset({502, 503, 504})
"""A replica's answers that send the request to the next replica of its shard."""

TIMEOUT_S = 30.0

SHARD_PAGE = 1000
"""A replica's largest page of ``/repositories`` (query/api.py ``MAX_PAGE``)."""


@dataclass
class ShardReplicas:
    """One shard: its partitions and the base URLs of its interchangeable replicas."""

    shard: Shard
    replicas: Sequence[str]
    _turn: itertools.count[int] = field(default_factory=itertools.count)

    def in_turn(self) -> list[str]:
        """The replicas, starting one further each time (requests spread over them)."""
        start = next(self._turn) % len(self.replicas)
        return [*self.replicas[start:], *self.replicas[:start]]


class NoReplica(Exception):
    """Every replica of a shard failed: the last reason."""


class Refused(Exception):
    """A replica refused the request's credential (401, 403): the router's answer too,
    rather than a page without that shard (issue 19)."""

    def __init__(self, answer: httpx.Response) -> None:
        super().__init__(answer.status_code)
        self.answer = answer

    def response(self) -> Response:
        challenge = self.answer.headers.get("www-authenticate")
        return Response(
            self.answer.content,
            self.answer.status_code,
            media_type=self.answer.headers.get("content-type"),
            headers={"WWW-Authenticate": challenge} if challenge else None,
        )


FORWARDED = frozenset({"content-type", "authorization"})
"""The request headers a replica is given: the body's type, and the caller's token,
which the replicas check (they fold the tokens; the router holds no state)."""


def forwarded(request: Request) -> dict[str, str]:
    return {k: v for k, v in request.headers.items() if k.lower() in FORWARDED}


@dataclass
class Router:
    shards: Sequence[ShardReplicas]
    partitions: int
    client: httpx.AsyncClient

    def shard_of(self, repo: str) -> ShardReplicas | None:
        partition = partition_of(repo, self.partitions)
        return next((s for s in self.shards if s.shard.owns(partition)), None)

    async def send(
        self, shard: ShardReplicas, method: str, path: str, **request: Any
    ) -> httpx.Response:
        """The first answer of a replica of ``shard`` that answers (not 502/503/504)."""
        reason = "no replica"
        for base in shard.in_turn():
            try:
                answer = await self.client.request(method, base + path, **request)
            except httpx.HTTPError as exc:
                reason = f"{base}: {type(exc).__name__}"
                log.warning("router_replica_failed", replica=base, path=path, error=repr(exc))
                continue
            if answer.status_code not in RETRIED:
                return answer
            reason = f"{base}: HTTP {answer.status_code}"
            log.warning("router_replica_refused", replica=base, path=path, status=reason)
        raise NoReplica(reason)

    async def each(
        self,
        ask: Callable[[ShardReplicas], Awaitable[Any]],
        shards: Sequence[ShardReplicas] | None = None,
    ) -> tuple[list[tuple[ShardReplicas, Any]], list[str]]:
        """``ask`` of every shard (or of ``shards``) at once: the answers of those that
        answered, and the shards (by partitions) that did not."""
        asked = self.shards if shards is None else shards
        answers = await asyncio.gather(*(ask(s) for s in asked), return_exceptions=True)
        got, missing = [], []
        for shard, answer in zip(asked, answers, strict=True):
            if isinstance(answer, NoReplica | httpx.HTTPError | ValueError):
                missing.append(shard.shard.describe())
            elif isinstance(answer, BaseException):
                raise answer
            else:
                got.append((shard, answer))
        return got, missing

    async def across(
        self, last: str, body: Mapping[str, Any], headers: Mapping[str, str]
    ) -> tuple[list[tuple[ShardReplicas, Any]], list[str]]:
        """An org-wide question asked of every shard in the three passes of
        `query.org_search`: each shard's statistics, summed; each shard's best score
        under them, the greatest kept; then ``last`` (``/shard/search``, or another
        answer's candidates) of each shard with the whole corpus. The last pass's
        answers, and the shards missing from any pass (sorted)."""
        got, missing = await self.each(
            lambda s: self.json_of(
                s, "POST", "/shard/search/statistics", json=body, headers=headers
            )
        )
        parts = [corpus_in(CorpusOut.model_validate(c)) for _, c in got]
        corpus = corpus_out(Corpus.merged(parts)).model_dump(mode="json")
        # Only the shards whose figures are in the corpus go on: one that missed the
        # first pass and answered a later one would be on another scale.
        asked = {**body, "corpus": corpus}
        tops, lost = await self.each(
            lambda s: self.json_of(s, "POST", "/shard/search/top", json=asked, headers=headers),
            [s for s, _ in got],
        )
        corpus["top"] = max((c["top"] for _, c in tops if c["top"] is not None), default=0.0)
        answers, gone = await self.each(
            lambda s: self.json_of(s, "POST", last, json=asked, headers=headers),
            [s for s, _ in tops],
        )
        return answers, sorted(set(missing) | set(lost) | set(gone))

    async def listed(
        self, shard: ShardReplicas, params: Mapping[str, str], headers: Mapping[str, str], want: int
    ) -> dict[str, Any]:
        """A shard's first ``want`` repositories in the order ``params`` ask, gathered
        in pages of at most `SHARD_PAGE` (a replica's largest): the merge's page at
        ``offset`` needs each shard's first ``offset + limit``, and one page of 1,000
        left a shard's later repositories out of every page past the first thousand.
        Its total and ``partial`` are its last page's."""
        items: list[Any] = []
        while True:
            asked = {
                **params,
                "offset": str(len(items)),
                "limit": str(min(SHARD_PAGE, want - len(items))),
            }
            page = await self.json_of(shard, "GET", "/repositories", params=asked, headers=headers)
            items += page["items"]
            if not page["items"] or len(items) >= min(want, page["total"]):
                return {**page, "items": items}

    async def json_of(self, shard: ShardReplicas, method: str, path: str, **request: Any) -> Any:
        answer = await self.send(shard, method, path, **request)
        if answer.status_code in (401, 403):
            raise Refused(answer)
        if answer.status_code != 200:
            raise NoReplica(f"HTTP {answer.status_code}: {answer.text[:200]}")
        return answer.json()


def create_router_app(
    router: Router,
    *,
    hosts: HostRule | None = None,
    limits: RequestLimits | None = None,
    authenticate: bool = False,
) -> FastAPI:
    """``hosts`` and ``limits`` as in `query.api.create_api`. ``authenticate``: a request
    without a token is refused here (401), one with a token is passed on to the replicas
    with it, which check it (a refusal of theirs is the answer); ``/health`` stays open."""
    app = FastAPI(title="Gazetteer router", docs_url=None, redoc_url=None, openapi_url=None)
    if limits is not None:
        add_inner(app, limits)
    if authenticate:
        app.add_middleware(TokenRequired)
    if limits is not None:
        add_outer(app, limits)
    if hosts is not None:
        app.add_middleware(HostCheck, rule=hosts)
    if limits is not None and limits.audit:
        app.add_middleware(AuditLog, routes=lambda: iter_route_contexts(app.routes))

    @app.exception_handler(Refused)
    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return exc.response()

    # The MCP tools at /mcp, each call a request to this app (its run() is the caller's
    # to enter: `gazetteer route` does).
    app.state.mcp = mount_router_mcp(app, timeout_s=TIMEOUT_S)

    @app.get("/health")
    async def health() -> JSONResponse:
        async def look(shard: ShardReplicas) -> list[dict[str, Any]]:
            seen = []
            for base in shard.replicas:
                try:
                    answer = (await router.client.get(base + "/health")).json()
                    seen.append({"replica": base, "ready": bool(answer.get("ready"))})
                except (httpx.HTTPError, ValueError) as exc:
                    seen.append({"replica": base, "ready": False, "error": type(exc).__name__})
            return seen

        looks = await asyncio.gather(*(look(s) for s in router.shards))
        shards = [
            {"partitions": s.shard.describe(), "replicas": seen}
            for s, seen in zip(router.shards, looks, strict=True)
        ]
        ready = all(any(r["ready"] for r in seen) for seen in looks)
        return JSONResponse({"status": "ok", "ready": ready, "shards": shards})

    @app.get("/repositories")
    async def repositories(request: Request) -> JSONResponse:
        params = dict(request.query_params)
        if params.get("sort", "repo") not in get_args(RepositoryOrder):
            orders = ", ".join(get_args(RepositoryOrder))
            return JSONResponse({"detail": f"sort: one of {orders}"}, 422)
        try:
            offset, limit = int(params.pop("offset", 0)), int(params.pop("limit", 100))
        except ValueError:
            return JSONResponse({"detail": "offset and limit: integers"}, 422)
        if offset < 0 or not 1 <= limit <= SHARD_PAGE:
            return JSONResponse({"detail": f"offset >= 0, limit 1-{SHARD_PAGE}"}, 422)

        async def ask(shard: ShardReplicas) -> Any:
            return await router.listed(shard, params, forwarded(request), offset + limit)

        got, missing = await router.each(ask)
        order = repository_key(params.get("sort", "repo"))
        items = sorted((i for _, page in got for i in page["items"]), key=order)
        return JSONResponse(
            {
                "total": sum(page["total"] for _, page in got),
                "offset": offset,
                "limit": limit,
                "items": items[offset : offset + limit],
                **stamp(
                    [s for s, _ in got],
                    missing,
                    partial=any(page.get("partial", False) for _, page in got),
                ),
            }
        )

    @app.get("/search")
    async def search(
        request: Request, q: str, repos: str | None = None, limit: int = 10, max_tokens: int = 2000
    ) -> JSONResponse:
        if not q or not 1 <= limit <= 100 or not 100 <= max_tokens <= 50_000:
            return JSONResponse({"detail": "q (non-empty), limit 1-100, max_tokens 100-50000"}, 422)
        body: dict[str, Any] = {"q": q, "repos": repos, "limit": limit, "max_tokens": 50_000}
        answered, missing = await router.across("/shard/search", body, forwarded(request))
        pages = [OrgSearchPage.model_validate(page) for _, page in answered]
        hits = merged_hits(pages, limit)
        items = within_tokens(hits, max_tokens)
        note_repositories(request.scope, (i.repo for i in items))  # for the audit line
        first = pages[0] if pages else None
        return JSONResponse(
            {
                "query": first.query if first else q,
                "question_chars": len(q),
                "question_truncated": first.question_truncated if first else False,
                "repositories": sum(page.repositories for page in pages),
                "ranking": first.ranking.model_dump(mode="json") if first else None,
                "candidates": sum(page.candidates for page in pages),
                "truncated": len(items) < len(hits),
                "items": [i.model_dump(mode="json") for i in items],
                **stamp([s for s, _ in answered], missing, partial=any(p.partial for p in pages)),
            }
        )

    # Org-wide context, session starts and graph searches: query/router_org.py, which
    # builds on this module (so it is imported here, not above).
    from query.router_org import create_router_org_routes

    app.include_router(create_router_org_routes(router))

    @app.api_route(
        "/repositories/{repo}/{rest:path}", methods=["GET", "POST"], include_in_schema=False
    )
    @app.api_route("/repositories/{repo}", methods=["GET"], include_in_schema=False)
    async def forward(request: Request, repo: str) -> Response:
        shard = router.shard_of(repo)
        if shard is None:  # a partition no shard serves: as the replicas say of an unknown one
            return JSONResponse({"detail": f"unknown repository {repo!r}; see /repositories"}, 404)
        body = await request.body()
        headers = forwarded(request)
        try:
            answer = await router.send(
                shard,
                request.method,
                request.url.path,
                params=request.query_params,
                content=body or None,
                headers=headers,
            )
        except NoReplica as exc:
            return JSONResponse(
                {"detail": f"no replica of shard {shard.shard.describe()} answered ({exc})"},
                503,
            )
        return Response(
            answer.content,
            answer.status_code,
            media_type=answer.headers.get("content-type"),
            # Which shard answered, and which of its replicas (the body is the replica's).
            headers={
                "Gazetteer-Shard": shard.shard.describe(),
                "Gazetteer-Replica": str(answer.url.copy_with(path="/", query=None)).rstrip("/"),
                **{
                    k: v
                    for k, v in answer.headers.items()
                    if k.lower() == "www-authenticate"  # a refusal's challenge
                },
            },
        )

    return app


def stamp(
    answered: Sequence[ShardReplicas], missing: Sequence[str], *, partial: bool = False
) -> dict[str, Any]:
    """What every merged answer says of its shards: those that answered, those missing,
    and whether it is partial (never silently): a shard missing, or ``partial``, an
    answer of a replica still loading its partitions (its own ``partial``)."""
    return {
        "shards": [s.shard.describe() for s in answered],
        "missing": list(missing),
        "partial": bool(missing) or partial,
    }


class TokenRequired:
    """ASGI middleware: a request but ``/health`` without an ``Authorization`` header is
    refused at once (401), as a replica would refuse it; one with a header goes on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/health":
            if not Headers(scope=scope).get("authorization"):
                answer = JSONResponse(
                    {"detail": "authentication required"},
                    401,
                    headers={"WWW-Authenticate": 'Bearer realm="gazetteer"'},
                )
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def parse_shard_spec(spec: str) -> ShardReplicas:
    """``0-3=http://a:8765,http://b:8765`` (or ``1/2=...``): a shard and its replicas."""
    partitions, eq, urls = spec.partition("=")
    replicas = [u.strip().rstrip("/") for u in urls.split(",") if u.strip()]
    if not eq or not replicas:
        raise ValueError(f"{spec!r} is not a shard like 0-3=http://host:8765[,http://...]")
    if "/" in partitions and "-" not in partitions and "," not in partitions:
        shard = parse_shard(partitions)
    else:
        shard = Shard(partitions=parse_partitions(partitions))
    return ShardReplicas(shard, replicas)


def check_cover(shards: Sequence[ShardReplicas], partitions: int) -> None:
    """Every partition served by exactly one shard, or a clear refusal."""
    owners = {p: [s.shard.describe() for s in shards if s.shard.owns(p)] for p in range(partitions)}
    unserved = [p for p, o in owners.items() if not o]
    twice = {p: o for p, o in owners.items() if len(o) > 1}
    if unserved:
        raise ValueError(f"partitions {unserved} of {partitions} are served by no shard")
    if twice:
        raise ValueError(f"partitions served by more than one shard: {twice}")
    for s in shards:
        s.shard.of(partitions)  # a named partition the topics lack is refused
