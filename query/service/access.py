"""Whom the service answers: the principal of the request being answered (issue 19).

The service is one object shared by every request of a replica, and its methods keep
the HTTP API's and the MCP tools' parameters; who asks is not one of them. So the
principal travels beside the call, in a context variable the authentication middleware
(query/auth/middleware.py) sets for exactly the request it admitted (`reading_as`),
and which every task the request starts inherits (the MCP tool calls run in tasks of
the /mcp request). Outside any request, and when authentication is off, it is
`EVERYONE`: the service answers as it did before tokens.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

from query.auth.principal import EVERYONE, Principal

_READER: ContextVar[Principal] = ContextVar("gazetteer_reader", default=EVERYONE)


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
