"""At most a few queries compute at once, so that the read side and /health never wait.

The routes are coroutines on the event loop that also folds the topics into the read
model (query/api.py says why), and a query is CPU work with no await inside: with 20
clients, 20 handlers are ready at once and each round of the loop runs all of them
before the materializer's next step, so an edit waited a whole round (a second and
more) to be applied, and ``/health`` behind them (issue 15). Admitting ``slots``
queries at a time leaves the others parked on a semaphore, not on the loop's ready
queue: between two queries the loop runs the materializer and anything cheap. The
queries take as long as before in total (the process has one core's worth of Python
either way); what changes is who waits.

Only the query routes are gated (``/repositories/...``, ``/dead-letters``); ``/health``,
``/metrics`` and the dashboard's page and event stream are not. ``/mcp`` is not gated as
a route: its tools call the QueryService in process and take the same slots, after the
same look, through `ComputeGate.admit` (gating the route too would hold a slot while
waiting for another).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.types import ASGIApp, Receive, Scope, Send

GATED_PREFIXES = ("/repositories", "/dead-letters")
DEFAULT_SLOTS = 2
"""Two: one query computing while another awaits I/O (a dense search, a thread)."""


class ComputeGate:
    """Pure ASGI middleware: at most ``slots`` gated requests inside the app at once;
    the others wait in arrival order."""

    def __init__(
        self,
        app: ASGIApp,
        slots: int = DEFAULT_SLOTS,
        before: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """``before(repo)`` runs when a request about a repository arrives, before it
        waits for a slot (the service looks for news on the broker it has not read)."""
        if slots < 1:
            raise ValueError(f"a gate needs at least one slot, not {slots}")
        self.app = app
        self._before = before
        self._slots = asyncio.Semaphore(slots)
        self.inside = 0  # gated requests inside the app now (for tests and metrics)
        self.most_inside = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(GATED_PREFIXES):
            await self.app(scope, receive, send)
            return
        async with self.admit(repository_of(scope["path"])):
            await self.app(scope, receive, send)

    @contextlib.asynccontextmanager
    async def admit(self, repo: str | None) -> AsyncIterator[None]:
        """Inside: one of the slots, after ``before(repo)`` (when ``repo`` is given). The
        HTTP requests enter through it; an in-process caller (an MCP tool calling the
        service) enters the same way and shares the same slots."""
        # Before the wait for a slot: what was on the broker when the request came is
        # what its answer must know of, and a look that waits on I/O holds no slot.
        if repo is not None and self._before is not None:
            await self._before(repo)
        async with self._slots:
            self.inside += 1
            self.most_inside = max(self.most_inside, self.inside)
            try:
                yield
            finally:
                self.inside -= 1


def repository_of(path: str) -> str | None:
    """The repository a route is about: ``/repositories/{repo}/...`` (None for others;
    ``path`` as ASGI gives it, percent-decoded)."""
    parts = path.split("/", 3)
    if len(parts) >= 3 and parts[1] == "repositories" and parts[2]:
        return parts[2]
    return None
