"""Per-caller rate limits: a caller over its `Rate` is answered 429 with ``Retry-After``.

The caller is its token's name once authentication has found one, else its client
address (query/caller.py): so this middleware sits inside the authentication, which
must have run first. The counting is `query.token_bucket`'s; this is the ASGI shell.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from query.caller import caller_key, principal_of
from query.token_bucket import Buckets, Rate, retry_after_s


class RateLimit:
    """Pure ASGI middleware: each HTTP request takes a token of its caller's bucket."""

    def __init__(
        self,
        app: ASGIApp,
        rate: Rate,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.buckets = Buckets(rate)
        self._clock = clock

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        key = caller_key(scope)
        wait = self.buckets.take(key, self._clock())
        if wait <= 0.0:
            await self.app(scope, receive, send)
            return
        seconds = retry_after_s(wait)
        who = "token" if principal_of(scope) is not None else "client"
        refusal = JSONResponse(
            {
                "detail": f"rate limit of this {who} ({self.buckets.rate.describe()}) "
                f"reached: retry after {seconds} s",
                "retry_after_s": seconds,
            },
            status_code=429,
            headers={"Retry-After": str(seconds)},
        )
        await refusal(scope, receive, send)
