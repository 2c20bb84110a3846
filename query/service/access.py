"""Whom the service answers: the principal of the request being answered (issue 19).

The service is one object shared by every request of a replica, and its methods keep
the HTTP API's and the MCP tools' parameters; who asks is not one of them. So the
principal travels beside the call, in a context variable the authentication middleware
(query/auth/middleware.py) sets for exactly the request it admitted (`reading_as`),
and which every task the request starts inherits (the MCP tool calls run in tasks of
the /mcp request). Outside any request, and when authentication is off, it is
`EVERYONE`: the service answers as it did before tokens.

The same way back: what an answer drew from that its request did not name (the
repositories of an org-wide search's hits) is noted (`touched`) for the request's audit
line, which collects it (`noting`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar

from query.auth.principal import EVERYONE, Principal

_READER: ContextVar[Principal] = ContextVar("gazetteer_reader", default=EVERYONE)
_TOUCHED: ContextVar[list[str] | None] = ContextVar("gazetteer_touched", default=None)


def reader() -> Principal:
    """The principal the current request runs as (`EVERYONE` outside one)."""
    return _READER.get()


@contextlib.contextmanager
def reading_as(principal: Principal) -> Iterator[None]:
    """Answer as ``principal`` inside the block (a request, or a test)."""
    token = _READER.set(principal)
    try:
        yield
    finally:
        _READER.reset(token)


def touched(repos: Iterable[str]) -> None:
    """Note the repositories an answer drew from (an org-wide search's hits) for the
    request's audit line (query/audit_log.py); outside `noting`, nothing."""
    noted = _TOUCHED.get()
    if noted is not None:
        noted.extend(repos)


@contextlib.contextmanager
def noting() -> Iterator[list[str]]:
    """The repositories the service notes as `touched` inside the block (a request and
    every task it starts: the MCP tool calls), as they are noted."""
    noted: list[str] = []
    token = _TOUCHED.set(noted)
    try:
        yield noted
    finally:
        _TOUCHED.reset(token)
