"""Impact over HTTP (issue 20): ``POST /repositories/{repo}/impact`` with a diff, a list
of files or a list of symbols in its JSON body. A POST because a diff does not fit a
query string; it changes nothing. The answer is the `QueryService`'s
(query/service/impact.py); the body's model declares the arguments and their bounds."""

from __future__ import annotations

from fastapi import APIRouter

from query.impact_schemas import ImpactAnswer, ImpactRequest
from query.service import QueryService


def create_impact_routes(service: QueryService) -> APIRouter:
    router = APIRouter(tags=["navigation"])

    @router.post("/repositories/{repo}/impact", response_model=ImpactAnswer)
    async def impact(repo: str, body: ImpactRequest) -> ImpactAnswer:
        """What a change touches, before an edit or a merge: give exactly one of a
        unified diff (``git diff``'s output, against the indexed version), changed files
        or changed symbols. Answers the changed symbols, their dependents within
        ``depth`` hops (each with its hop and the weakest confidence on its path), the
        tests exercising them (by graph and by name), the neighborhoods and entry points
        touched, and a low/medium/high risk with its rule; within ``budget_tokens``."""
        return service.impact(
            repo,
            diff=body.diff,
            files=body.files,
            symbols=body.symbols,
            depth=body.depth,
            budget_tokens=body.budget_tokens,
            limit=body.limit,
        )

    return router
