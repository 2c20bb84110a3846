"""Live updates for the dashboard: what changed in the read model, as Server-Sent Events.

The read model has no change callbacks (it is fed by the materializer alone), so the
stream polls a cheap signature of it: per repository, the last graph delta, the last
neighborhood snapshot and the freshness the page shows. An event goes out when the
signature moves, and the page refetches what it draws.

A stream ends when the client goes away (Starlette cancels it), when ``stopping`` is
set, or after ``lifetime_s``: uvicorn's graceful shutdown waits for every open
response, so a stream must never be endless; EventSource reconnects by itself after
the ``retry`` it is given.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable

from query.read_model import ReadModel

RETRY_MS = 500
KEEPALIVE_S = 10.0

Signature = dict[str, list[object]]


def signature(model: ReadModel, readable: Callable[[str], bool] = lambda _: True) -> Signature:
    """Per repository ``readable`` by the page's viewer: [delta seq, snapshot seq,
    status, pending, indexed, head commit]."""
    found: Signature = {}
    for repo in sorted(r for r in model.repos if readable(r)):
        view = model.repos[repo]
        fresh = model.freshness(repo)
        found[repo] = [
            view.state.seq,
            view.neighborhoods.seq if view.neighborhoods else 0,
            fresh.status,
            fresh.pending_events,
            fresh.indexed_commit,
            fresh.head_commit,
        ]
    return found


def sse(event: str, data: object) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


async def model_events(
    model: ReadModel,
    *,
    poll_s: float,
    lifetime_s: float,
    stopping: asyncio.Event | None = None,
    readable: Callable[[str], bool] = lambda _: True,
) -> AsyncIterator[str]:
    """``model`` events (the signature of the ``readable`` repositories) when it
    changes, the first one at once."""
    loop = asyncio.get_running_loop()
    started = last_sent = loop.time()
    stop = stopping or asyncio.Event()
    yield f"retry: {RETRY_MS}\n\n"
    last: Signature | None = None
    while not stop.is_set() and loop.time() - started < lifetime_s:
        now = signature(model, readable)
        if now != last:
            last, last_sent = now, loop.time()
            # The deltas of the repositories shown: the model's count tells of the others.
            applied = sum(model.repos[r].state.seq for r in now)
            yield sse("model", {"repos": now, "deltas_applied": applied})
        elif loop.time() - last_sent >= KEEPALIVE_S:
            # A comment line: keeps proxies from timing the stream out, and a dead
            # client is noticed at the latest here, whatever the ASGI server.
            last_sent = loop.time()
            yield ": keep-alive\n\n"
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=poll_s)
