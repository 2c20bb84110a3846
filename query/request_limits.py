"""How large and how long a request may be, and where the limits sit in an app.

- `SizeLimit`: a URL (path and query string, as sent) over ``max_url_bytes`` is
  answered 414; a body over ``max_body_bytes`` 413, before it is read: at once when its
  ``Content-Length`` says so, else (a chunked body) as soon as the bytes received pass
  the cap, whatever the route was doing with them.
- `TimeLimit`: a request that has not begun its answer ``timeout_s`` after it came is
  cancelled and answered 503. The limit ends at the answer's first byte: a stream, once
  begun (the dashboard's events, an MCP answer), is not cut; it ends when its client
  leaves or the service stops. Cancelling takes effect at the handler's next ``await``:
  the wait for a compute slot (query/compute_gate.py), a dense search, a look at the
  broker. A query's CPU work has no ``await`` inside and runs to its end, but it is
  over in milliseconds to a few seconds; the long waits are the queue's.

`add_inner` and `add_outer` put them in an app with the rate limit, in this order from
the outside in: the audit line (query/audit_log.py), the Host check, `SizeLimit`, the
authentication, `RateLimit` (which needs the caller), `TimeLimit`.
"""

from __future__ import annotations

import asyncio

import structlog
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from query.limits import MAX_BODY_BYTES, MAX_URL_BYTES, TIMEOUT_S, RequestLimits
from query.rate_limit import RateLimit

log = structlog.get_logger(__name__)

__all__ = [
    "MAX_BODY_BYTES",
    "MAX_URL_BYTES",
    "TIMEOUT_S",
    "RequestLimits",
    "SizeLimit",
    "TimeLimit",
]


def add_inner(app: Starlette, limits: RequestLimits) -> None:
    """The limits that count per caller: added before (so inside) the authentication."""
    if limits.timeout_s is not None:
        app.add_middleware(TimeLimit, timeout_s=limits.timeout_s)
    if limits.rate is not None:
        app.add_middleware(RateLimit, rate=limits.rate)


def add_outer(app: Starlette, limits: RequestLimits) -> None:
    """The limits that need no caller: added after (so outside) the authentication."""
    app.add_middleware(
        SizeLimit, max_body_bytes=limits.max_body_bytes, max_url_bytes=limits.max_url_bytes
    )


class BodyTooLarge(Exception):
    """Raised into the app by `SizeLimit`'s ``receive`` once a body passes the cap."""


class SizeLimit:
    """Pure ASGI middleware: 414 for a long URL, 413 for a large body."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, max_url_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.max_url_bytes = max_url_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("raw_path") or scope["path"].encode()
        if len(path) + len(scope.get("query_string", b"")) > self.max_url_bytes:
            detail = f"the URL is over {self.max_url_bytes} bytes"
            await self.refuse(414, detail, scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            await self.refuse(413, self.too_large(), scope, receive, send)
            return
        received, over, answered = 0, False, False

        async def receiving() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    over = True
                    raise BodyTooLarge(self.too_large())
            return message

        async def sending(message: Message) -> None:
            nonlocal answered
            if over:  # the app's own answer to a body cut short (FastAPI's is a 400)
                if message["type"] == "http.response.start" and not answered:
                    answered = True
                    await self.refuse(413, self.too_large(), scope, receive, send)
                return
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receiving, sending)
        except Exception:
            if not over:
                raise  # whatever the app raised once the body was cut is the cut's doing
        if over and not answered:
            await self.refuse(413, self.too_large(), scope, receive, send)

    def too_large(self) -> str:
        return f"the request body is over {self.max_body_bytes} bytes"

    @staticmethod
    async def refuse(status: int, detail: str, scope: Scope, receive: Receive, send: Send) -> None:
        await JSONResponse({"detail": detail}, status_code=status)(scope, receive, send)


class TimeLimit:
    """Pure ASGI middleware: 503 for a request with no answer begun in ``timeout_s``."""

    def __init__(self, app: ASGIApp, *, timeout_s: float) -> None:
        if not timeout_s > 0:
            raise ValueError(f"a time limit must be positive, not {timeout_s}")
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        begun = False
        try:
            async with asyncio.timeout(self.timeout_s) as deadline:

                async def sending(message: Message) -> None:
                    nonlocal begun
                    if message["type"] == "http.response.start":
                        begun = True
                        if not deadline.expired():  # begun in time: a stream runs on
                            deadline.reschedule(None)
                    await send(message)

                await self.app(scope, receive, sending)
        except TimeoutError:
            if not deadline.expired():
                raise  # the app's own
            log.warning("request_timed_out", path=scope["path"], timeout_s=self.timeout_s)
            if begun:  # an answer begun as the limit struck (an app that caught the cancel)
                return
            detail = f"no answer within {self.timeout_s:g} s: the request was cancelled"
            await JSONResponse({"detail": detail}, status_code=503)(scope, receive, send)
