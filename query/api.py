"""The HTTP query service (FastAPI; OpenAPI at /docs). It reads only the read model."""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable
from typing import Literal

from fastapi import FastAPI, HTTPException, Query, Response
from prometheus_client import CONTENT_TYPE_LATEST

from query.churn_api import create_churn_routes
from query.compute_gate import ComputeGate
from query.dashboard import create_dashboard_routes
from query.graph_search_api import create_graph_search_routes
from query.host_check import HostCheck, HostRule
from query.metrics import METRICS_PATH, QueryTimer, exposition, service_registry
from query.neighborhood_api import create_neighborhood_routes
from query.read_model import ReadModel, RepoView
from query.repo_lookup import repo_view as lookup_repo
from query.retrieval_api import create_retrieval_routes
from query.schemas import (
    DeadLetterOut,
    DeadLetterPage,
    FileDetail,
    FilePage,
    FileSummary,
    Health,
    ImportOut,
    Producer,
    Repository,
    RepositoryList,
    SymbolPage,
)
from stores.freshness import Freshness
from stores.records import FileRecord

MAX_PAGE = 1000
MAX_FENCED = 20  # older leases listed per repository
GLOB_CHARS = frozenset("*?[")
FreshnessStatus = Literal["fresh", "stale", "updating"]
STATUS = Query(None, description="only the repositories of this freshness status")


def root_name(root: str) -> str:
    """A repository root's base name: the one part of its path on the producer's
    machine that answers show (the path itself tells a stranger where things live)."""
    return root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def name_matches(pattern: str, repo: str, view: RepoView) -> bool:
    """``pattern`` (a substring, or a glob when it holds * ? [) against the id and
    the root directory name, case-insensitively."""
    names = [repo.lower()]
    if view.status is not None:
        names.append(root_name(view.status.root).lower())
    pattern = pattern.lower()
    if GLOB_CHARS.intersection(pattern):
        return any(fnmatch.fnmatchcase(n, pattern) for n in names)
    return any(pattern in n for n in names)


def create_api(
    model: ReadModel,
    ready: Callable[[], bool],
    *,
    hosts: HostRule | None = None,
    before_answer: Callable[[str], Awaitable[None]] | None = None,
) -> FastAPI:
    """The endpoints are coroutines on purpose: they run on the event loop that feeds the
    read model, so a request never sees the model half-way through a delta (FastAPI runs
    plain functions in a thread pool, beside the loop).

    ``hosts``: the Host names every route answers to (query/host_check.py; the service
    passes `host_rule` of its bind address); None: any, for an app called in process
    (tests, the stdio MCP server's schema). ``before_answer(repo)``: awaited before an
    answer about a repository is computed (the materializer's `probe_sources`)."""
    api = FastAPI(
        title="Gazetteer",
        description="Where things are in an organization's code, and how far to trust it.",
        version="0.1.0",
    )
    # Inside the timer, so that a query's time counts its wait for a slot.
    api.add_middleware(ComputeGate, before=before_answer)
    api.add_middleware(QueryTimer)
    api.state.host_rule = hosts  # mount_mcp's in-process calls pass the same check
    if hosts is not None:
        api.add_middleware(HostCheck, rule=hosts)  # outermost: a refusal does no work
    registry = service_registry(model)

    def repo_view(repo: str) -> RepoView:
        return lookup_repo(model, repo)

    def file_record(view: RepoView, path: str) -> FileRecord:
        record = view.state.files.get(path.strip("/"))
        if record is None:
            raise HTTPException(404, f"no file {path!r} in repository {view.state.repo!r}")
        return record

    def repository(view: RepoView) -> Repository:
        state = view.state
        return Repository(
            repo=state.repo,
            name=root_name(view.status.root) if view.status else None,
            branch=state.branch or (view.status.branch if view.status else None),
            files=len(state.files),
            symbols=sum(len(r.symbols) for r in state.files.values()),
            edges=len(state.edges),
            dead_letters=view.dead_letters,
            delta_seq=state.seq,
            owner=(
                Producer(producer=owner.producer, epoch=owner.epoch, host=owner.host)
                if (owner := view.owner) is not None
                else None
            ),
            fenced=[Producer(producer=p, epoch=e) for e, p in view.fenced_producers[:MAX_FENCED]],
            freshness=model.freshness(state.repo),
        )

    @api.get("/health", response_model=Health)
    async def health() -> Health:
        """Whether the service is up and its read side has caught up with the topics."""
        return Health(
            status="ok",
            ready=ready(),
            repositories=len(model.repos),
            deltas_applied=model.deltas_applied,
            dead_letters=model.dead_letters_total,
        )

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
    ) -> RepositoryList:
        """The indexed repositories with their counts and freshness, by id, filtered and
        paged, with the true total."""
        matched = [
            r
            for r in sorted(model.repos)
            if (name is None or name_matches(name, r, model.repos[r]))
            and (status is None or model.freshness(r).status == status)
        ]
        page = [repository(model.repos[r]) for r in matched[offset : offset + limit]]
        return RepositoryList(total=len(matched), offset=offset, limit=limit, items=page)

    @api.get("/repositories/{repo}", response_model=Repository)
    async def one_repository(repo: str) -> Repository:
        """One repository: counts, branch, root directory name and freshness."""
        return repository(repo_view(repo))

    @api.get("/repositories/{repo}/freshness", response_model=Freshness)
    async def freshness(repo: str) -> Freshness:
        """How far to trust answers about a repository: indexed vs head commit, pending."""
        return model.freshness(repo_view(repo).state.repo)

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
        view = repo_view(repo)
        matched = [
            r
            for _, r in sorted(view.state.files.items())
            if (language is None or r.language == language)
            and (prefix is None or r.path.startswith(prefix))
            and (glob is None or fnmatch.fnmatchcase(r.path, glob))
            and (skipped is None or (r.skipped is not None) == skipped)
        ]
        page = matched[offset : offset + limit]
        return FilePage(
            repo=repo,
            total=len(matched),
            offset=offset,
            limit=limit,
            items=[
                FileSummary(
                    path=r.path,
                    language=r.language,
                    size=r.size,
                    lines=r.lines,
                    symbols=len(r.symbols),
                    imports=len(r.imports),
                    skipped=r.skipped,
                    parse_errors=r.parse_errors,
                )
                for r in page
            ],
            freshness=model.freshness(repo),
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
        view = repo_view(repo)
        record = file_record(view, path)
        node = f"file:{record.path}"
        depends_on = sorted(
            e.dst.split(":", 1)[1]
            for e in view.state.owned_edges(record.path)
            if e.kind == "IMPORTS"
        )
        imported_by = sorted(
            key[0].split(":", 1)[1]
            for key in view.state.edges
            if key[1] == node and key[2] == "IMPORTS"
        )
        return FileDetail(
            repo=repo,
            path=record.path,
            language=record.language,
            size=record.size,
            lines=record.lines,
            content_hash=record.content_hash,
            skipped=record.skipped,
            parse_errors=record.parse_errors,
            problems=list(record.problems),
            origin=record.origin,
            commit=record.commit,
            working_tree=record.working_tree,
            package=record.package,
            purpose=record.purpose,
            sections=[f"L{s.line_start}-{s.line_end}: {s.label}" for s in record.sections],
            keywords=[k.term for k in record.keywords],
            references=view.references.get(record.path, len(record.references)),
            symbols=list(record.symbols[:limit]),
            symbols_total=len(record.symbols),
            imports=[
                ImportOut(module=i.module, names=list(i.names), level=i.level, line=i.line)
                for i in record.imports[:limit]
            ],
            imports_total=len(record.imports),
            depends_on=depends_on[:limit],
            depends_on_total=len(depends_on),
            imported_by=imported_by[:limit],
            imported_by_total=len(imported_by),
            freshness=model.freshness(repo),
        )

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
        view = repo_view(repo)
        record = file_record(view, path)
        items = [s for s in record.symbols if kind is None or s.kind == kind.upper()]
        return SymbolPage(
            repo=repo,
            path=record.path,
            total=len(items),
            offset=offset,
            limit=limit,
            items=items[offset : offset + limit],
            freshness=model.freshness(repo),
        )

    # Not in the schema: the schema's operations are the MCP tools, and this is no tool.
    @api.get(METRICS_PATH, include_in_schema=False)
    async def metrics() -> Response:
        """Prometheus metrics, text format."""
        return Response(exposition(registry), media_type=CONTENT_TYPE_LATEST)

    api.include_router(create_neighborhood_routes(model))
    api.include_router(create_retrieval_routes(model))
    api.include_router(create_graph_search_routes(model))
    api.include_router(create_churn_routes(model))
    api.include_router(create_dashboard_routes(model))

    @api.get("/dead-letters", response_model=DeadLetterPage)
    async def dead_letters(limit: int = Query(20, ge=1, le=100)) -> DeadLetterPage:
        """The most recent events that could not be processed, with the reason."""
        recent = list(model.dead_letters)[-limit:][::-1]
        return DeadLetterPage(
            total=model.dead_letters_total,
            items=[
                DeadLetterOut(
                    failure=d.failure,
                    reason=d.reason,
                    topic=d.topic,
                    partition=d.partition,
                    offset=d.offset,
                    key=d.key.decode(errors="replace") if d.key else None,
                    failed_at=d.failed_at,
                )
                for d in recent
            ],
        )

    return api
