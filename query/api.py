"""The HTTP query service (FastAPI; OpenAPI at /docs): routes over a `QueryService`.

Each route declares its parameters (their bounds and descriptions are the OpenAPI
document, and the MCP tools are read from it) and calls one service method; a
`QueryRefused` becomes its status code here, in `HTTP_STATUS`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp

from query.api_docs import create_docs_routes
from query.audit_log import AuditLog
from query.auth.middleware import Authentication
from query.churn_api import create_churn_routes
from query.compute_gate import ComputeGate
from query.dashboard.routes import create_dashboard_routes
from query.graph_search_api import create_graph_search_routes
from query.host_check import HostCheck, HostRule
from query.impact_api import create_impact_routes
from query.metrics import METRICS_PATH, QueryTimer, exposition, service_registry
from query.navigation_api import create_navigation_routes
from query.neighborhood_api import create_neighborhood_routes
from query.org_api import create_org_routes
from query.read_model import ReadModel
from query.request_limits import RequestLimits, add_inner, add_outer
from query.retrieval_api import create_retrieval_routes
from query.schemas import (
    DeadLetterPage,
    FileDetail,
    FilePage,
    Health,
    Repository,
    RepositoryList,
    SymbolPage,
)
from query.service import (
    BadRequest,
    InvalidArguments,
    NotFound,
    NotReady,
    QueryRefused,
    QueryService,
    Warming,
)
from query.service.repositories import FreshnessStatus, RepositoryOrder
from stores.freshness import Freshness

MAX_PAGE = 1000
SORT = Query("repo", description="order: repo, name, files or indexed_at; '-' first: descending")
STATUS = Query(None, description="only the repositories of this freshness status")

HTTP_STATUS: dict[type[QueryRefused], int] = {
    NotFound: 404,
    NotReady: 409,
    Warming: 503,
    BadRequest: 400,
    InvalidArguments: 422,
}
"""The one place a refusal gets its HTTP status (the MCP tools quote it too)."""


def http_status(refused: QueryRefused) -> int:
    return next((code for kind, code in HTTP_STATUS.items() if isinstance(refused, kind)), 400)


def service_of(api: FastAPI) -> QueryService:
    """The service an app made by `create_api` answers from (for the MCP endpoint)."""
    service = api.state.service
    assert isinstance(service, QueryService), "not an app made by create_api"
    return service


def gate_of(api: FastAPI) -> ComputeGate:
    """The compute gate of an app made by `create_api`: the one its HTTP routes pass,
    for the calls made beside HTTP (the MCP tools) to pass as well."""
    gate = api.state.gate
    assert isinstance(gate, ComputeGate), "not an app made by create_api"
    return gate


def in_front(gate: ComputeGate) -> Callable[[ASGIApp], ASGIApp]:
    """A middleware factory that puts this very ``gate`` in the app's stack (Starlette
    builds its middleware from factories), so that it can be shared."""

    def wrap(app: ASGIApp) -> ASGIApp:
        gate.app = app
        return gate

    return wrap


def create_api(
    model: ReadModel,
    ready: Callable[[], bool],
    *,
    hosts: HostRule | None = None,
    before_answer: Callable[[str], Awaitable[None]] | None = None,
    limits: RequestLimits | None = None,
    authenticate: bool = False,
) -> FastAPI:
    """The endpoints are coroutines on purpose: they run on the event loop that feeds the
    read model, so a request never sees the model half-way through a delta (FastAPI runs
    plain functions in a thread pool, beside the loop).

    ``hosts``: the Host names every route answers to (query/host_check.py; the service
    passes `host_rule` of its bind address); None: any, for an app called in process
    (tests, the stdio MCP server's schema). ``before_answer(repo)``: awaited before an
    answer about a repository is computed (the materializer's `probe_sources`).
    ``limits``: request size, time and rate limits and the audit line
    (query/request_limits.py); None: none. ``authenticate``: every route but the open
    ones asks a token of the model's token book, and answers only about its
    repositories (query/auth/middleware.py)."""
    api = FastAPI(
        title="Gazetteer",
        description="Where things are in an organization's code, and how far to trust it.",
        version="0.1.0",
        docs_url=None,  # served with local assets instead (query/api_docs.py)
        redoc_url=None,
    )
    service = QueryService(model, ready=ready)
    gate = ComputeGate(api.router, before=before_answer)  # its app: set by `in_front`
    api.state.service, api.state.gate = service, gate
    # Inside the timer, so that a query's time counts its wait for a slot.
    api.add_middleware(in_front(gate))
    api.add_middleware(QueryTimer)
    if limits is not None:
        add_inner(api, limits)  # the rate and time limits: inside the authentication
    if authenticate:  # between the two, so the rate limit knows the caller
        api.add_middleware(Authentication, book=model.tokens)
    if limits is not None:
        add_outer(api, limits)  # the size limit
    if hosts is not None:
        api.add_middleware(HostCheck, rule=hosts)  # a refusal does no work
    if limits is not None and limits.audit:
        # Outermost: every request's line, the refusals of the Host check included.
        api.add_middleware(AuditLog, routes=lambda: iter_route_contexts(api.routes))
    registry = service_registry(model)

    async def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, QueryRefused)
        return JSONResponse({"detail": exc.message}, status_code=http_status(exc))

    api.add_exception_handler(QueryRefused, refused)

    @api.get("/health", response_model=Health)
    async def health() -> Health:
        """Whether the service is up and its read side has caught up with the topics."""
        return service.health()

    @api.get("/repositories", response_model=RepositoryList)
    async def repositories(
        name: str | None = Query(
            None,
            max_length=200,
            description="a repository's id or root directory name: a substring, or a glob "
            "when it holds * ? or [ (e.g. 'billing-*')",
        ),
        status: FreshnessStatus | None = STATUS,
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=MAX_PAGE),
        language: str | None = Query(
            None, max_length=50, description="only repositories with files of it, e.g. 'go'"
        ),
        sort: RepositoryOrder = SORT,
    ) -> RepositoryList:
        """The indexed repositories with their counts, languages and freshness, filtered,
        sorted (by id by default) and paged, with the true total."""
        return service.repositories(
            name=name, status=status, offset=offset, limit=limit, language=language, sort=sort
        )

    @api.get("/repositories/{repo}", response_model=Repository)
    async def one_repository(repo: str) -> Repository:
        """One repository: counts, branch, root directory name and freshness."""
        return service.repository(repo)

    @api.get("/repositories/{repo}/freshness", response_model=Freshness)
    async def freshness(repo: str) -> Freshness:
        """How far to trust answers about a repository: indexed vs head commit, pending."""
        return service.freshness(repo)

    @api.get("/repositories/{repo}/files", response_model=FilePage)
    async def files(
        repo: str,
        language: str | None = None,
        prefix: str | None = Query(None, description="path prefix, e.g. 'src/app/'"),
        glob: str | None = Query(None, description="fnmatch pattern on the path, e.g. '*.py'"),
        skipped: bool | None = Query(None, description="only files skipped (or not)"),
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=MAX_PAGE),
    ) -> FilePage:
        """A repository's files, filtered and paged, with the true total."""
        return service.files(
            repo,
            language=language,
            prefix=prefix,
            glob=glob,
            skipped=skipped,
            offset=offset,
            limit=limit,
        )

    @api.get("/repositories/{repo}/files/{path:path}", response_model=FileDetail)
    async def file_detail(
        repo: str,
        path: str,
        limit: int = Query(
            200, ge=1, le=MAX_PAGE, description="at most this many of each list (their totals)"
        ),
    ) -> FileDetail:
        """One file: symbols with line ranges, imports, what it depends on and is used by."""
        return service.file_detail(repo, path, limit=limit)

    @api.get("/repositories/{repo}/symbols", response_model=SymbolPage)
    async def symbols(
        repo: str,
        path: str = Query(..., description="the file's path in the repository"),
        kind: str | None = Query(None, description="CLASS, FUNCTION, METHOD, ..."),
        offset: int = Query(0, ge=0),
        limit: int = Query(200, ge=1, le=MAX_PAGE),
    ) -> SymbolPage:
        """The symbols a file defines (in source order), optionally of one kind, paged,
        with the true total."""
        return service.symbols(repo, path, kind=kind, offset=offset, limit=limit)

    # Not in the schema: the schema's operations are the MCP tools, and this is no tool.
    @api.get(METRICS_PATH, include_in_schema=False)
    async def metrics() -> Response:
        """Prometheus metrics, text format."""
        return Response(exposition(registry), media_type=CONTENT_TYPE_LATEST)

    api.include_router(create_neighborhood_routes(service))
    api.include_router(create_retrieval_routes(service))
    api.include_router(create_graph_search_routes(service))
    api.include_router(create_org_routes(service))
    api.include_router(create_navigation_routes(service))
    api.include_router(create_impact_routes(service))
    api.include_router(create_churn_routes(service))
    api.include_router(create_dashboard_routes(service))
    api.include_router(create_docs_routes(api.title))

    @api.get("/dead-letters", response_model=DeadLetterPage)
    async def dead_letters(limit: int = Query(20, ge=1, le=100)) -> DeadLetterPage:
        """The most recent events that could not be processed, with the reason."""
        return service.dead_letters(limit=limit)

    return api
