"""The churn ledger and the structural diff over HTTP.

``/churn`` lists a repository's entries oldest first, ``/churn/{entry_id}`` gives one
entry with its lists, and ``/diff`` composes the entries between two indexed commits;
the answers are the `QueryService`'s (query/service/churn.py), each list cut to
``max_tokens`` beside its true total.
"""

from __future__ import annotations

from fastapi import APIRouter, Path, Query

from query.churn_schemas import ChurnDetail, ChurnPage, StructuralDiffOut
from query.service import QueryService

MAX_PAGE = 1000
MAX_TOKENS = Query(4000, ge=100, le=50_000, description="bound on the answer")


def create_churn_routes(service: QueryService) -> APIRouter:
    router = APIRouter(tags=["churn"])

    @router.get("/repositories/{repo}/churn", response_model=ChurnPage)
    async def churn(
        repo: str,
        limit: int = Query(50, ge=1, le=MAX_PAGE),
        offset: int = Query(0, ge=0),
        max_tokens: int = MAX_TOKENS,
    ) -> ChurnPage:
        """How each scan, commit and the work tree changed the code graph, oldest first:
        files, symbols, edges by type, file dependencies, neighborhoods, hubs, new import
        cycles, and the graph's size and modularity after it."""
        return service.churn(repo, limit=limit, offset=offset, max_tokens=max_tokens)

    @router.get("/repositories/{repo}/churn/{entry_id}", response_model=ChurnDetail)
    async def churn_entry(
        repo: str,
        entry_id: str = Path(..., description="a churn entry id, as `churn` lists them"),
        max_tokens: int = MAX_TOKENS,
    ) -> ChurnDetail:
        """One churn entry (a sha, 'scan:...' or 'working-tree') with its lists: files and
        symbols added, removed and changed, dependencies, neighborhood events, new cycles."""
        return service.churn_entry(repo, entry_id, max_tokens=max_tokens)

    @router.get("/repositories/{repo}/diff", response_model=StructuralDiffOut)
    async def diff(
        repo: str,
        base: str = Query(..., min_length=1, description="the commit to compare from"),
        head: str = Query(..., min_length=1, description="the later commit to compare to"),
        max_tokens: int = MAX_TOKENS,
    ) -> StructuralDiffOut:
        """What changed structurally from one indexed commit to a later one (a pull
        request's review): dependencies added and removed, files added, removed and
        renamed, files moved between neighborhoods, neighborhoods' entry points."""
        return service.structural_diff(repo, base, head, max_tokens=max_tokens)

    return router
