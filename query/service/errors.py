"""Why the query service refuses an answer: domain errors, no transport in them.

The HTTP API maps each to its status code in one place (query/api.py
`HTTP_STATUS`); the MCP tools report the same message with the same code, so an agent
reads one refusal whichever way it asked.
"""

from __future__ import annotations


class QueryRefused(Exception):
    """The service cannot answer as asked; ``message`` says why, for the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(QueryRefused):
    """What the question names does not exist: a repository, a file, a neighborhood."""


class NotReady(QueryRefused):
    """It exists but cannot be answered yet (no neighborhoods before the first recluster)."""


class Warming(QueryRefused):
    """The replica has not read its partitions up to where they stood when it started,
    so a repository it does not hold yet may exist: ask again (another replica)."""


class BadRequest(QueryRefused):
    """The arguments are well formed but contradict each other (a diff's base after head)."""


class InvalidArguments(QueryRefused):
    """The arguments do not make one question (none or two of q, symbol, path)."""
