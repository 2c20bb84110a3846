"""The query service as its clients see it: one GET, its JSON answer, or why not.

The stdio MCP server (`serve_stdio`) and the CLI's ``search`` and ``context`` verbs,
which ask a service running in another process, both go through here, so both report
a refusal with the service's own message (404 unknown repository, 409 no neighborhoods
yet, 422 bad arguments) and an unreachable service in one sentence.

httpx is imported by the functions that send, not by this module: the stdio MCP server
imports `QueryError` to answer ``initialize`` and needs httpx only at its first tool
call (issue 20: httpx and its client are 0.1 s of CPU of a one-second handshake).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import httpx


class QueryError(Exception):
    """The service refused (``status`` is its HTTP status) or did not answer (None)."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def expand(template: str, values: Mapping[str, object]) -> str:
    """Fill a path template such as ``/repositories/{repo}/files/{path}``.

    Every value is quoted whole ('/' too): servers route on the decoded path, so a
    file path still reaches a ``{path:path}`` parameter intact.
    """
    return template.format_map({k: quote(str(v), safe="") for k, v in values.items()})


async def get_json(
    client: httpx.AsyncClient,
    path: str,
    params: Mapping[str, object] | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    """GET ``path``; None-valued parameters are left out, as if not given."""
    import httpx

    try:
        response = await client.get(path, params=_given(params), headers=headers)
    except httpx.HTTPError as exc:
        raise _unanswered(client.base_url, exc) from exc
    return _answer(response)


async def post_json(
    client: httpx.AsyncClient,
    path: str,
    body: Mapping[str, object],
    headers: Mapping[str, str] | None = None,
) -> Any:
    """POST ``body`` as JSON to ``path`` (``impact``: a diff does not fit a query string)."""
    import httpx

    try:
        response = await client.post(path, json=body, headers=headers)
    except httpx.HTTPError as exc:
        raise _unanswered(client.base_url, exc) from exc
    return _answer(response)


def post_json_now(client: httpx.Client, path: str, body: Mapping[str, object]) -> Any:
    """`post_json` with a synchronous client, for the CLI's ``impact``."""
    import httpx

    try:
        response = client.post(path, json=body)
    except httpx.HTTPError as exc:
        raise _unanswered(client.base_url, exc) from exc
    return _answer(response)


def get_json_now(
    client: httpx.Client, path: str, params: Mapping[str, object] | None = None
) -> Any:
    """`get_json` with a synchronous client: the CLI's one-shot verbs start no event loop
    (asyncio and anyio are a tenth of their 0.5 s budget, issue 20)."""
    import httpx

    try:
        response = client.get(path, params=_given(params))
    except httpx.HTTPError as exc:
        raise _unanswered(client.base_url, exc) from exc
    return _answer(response)


def _given(params: Mapping[str, object] | None) -> dict[str, Any]:
    return {k: v for k, v in (params or {}).items() if v is not None}


def _unanswered(url: httpx.URL, exc: httpx.HTTPError) -> QueryError:
    reason = str(exc) or type(exc).__name__
    return QueryError(f"the query service at {url} did not answer: {reason}", None)


def _answer(response: httpx.Response) -> Any:
    if response.is_error:
        raise QueryError(f"{refusal(response)} (HTTP {response.status_code})", response.status_code)
    return response.json()


def refusal(response: httpx.Response) -> str:
    """The service's message: FastAPI's ``detail``, a string or a list of field errors."""
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        detail = None
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list) and detail:
        # loc is ("query", "limit") or ("path", "repo"): the argument's name is what helps.
        return field_errors((e for e in detail if isinstance(e, dict)), skip=1)
    return response.text[:300] or response.reason_phrase


def field_errors(errors: Iterable[Mapping[str, Any]], *, skip: int = 0) -> str:
    """Validation errors (pydantic's, or FastAPI's 422 ``detail``) as ``name: message``
    joined by '; '; ``skip``: the leading parts of each ``loc`` that say where the
    argument was (FastAPI's ``query``), not which it is."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())[skip:]) or 'request'}: "
        f"{e.get('msg', 'invalid')}"
        for e in errors
    )
