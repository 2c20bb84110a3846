"""The request limits over a tiny app: exact statuses, headers and bodies for a long
URL, a large body (declared or streamed), a slow handler, and a caller over its rate."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from query.caller import ANONYMOUS, caller_key, caller_name
from query.rate_limit import RateLimit
from query.request_limits import SizeLimit, TimeLimit
from query.token_bucket import Rate


@dataclass(frozen=True)
class Token:
    """A principal as the authentication would leave one (more than the name, too)."""

    name: str
    scopes: frozenset[str] = frozenset({"read"})


class Authenticated:
    """What the authentication does, for these tests: ``x-test-token`` names the
    principal."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = dict(scope["headers"]).get(b"x-test-token")
        if name is not None:
            scope.setdefault("state", {})["principal"] = Token(name.decode())
        await self.app(scope, receive, send)


class Events:
    """What the handlers saw: bodies received, and the slow one's fate."""

    def __init__(self) -> None:
        self.bodies: list[int] = []
        self.cancelled = 0


def tiny_app(events: Events, *middleware: Middleware) -> Starlette:
    async def echo(request: Request) -> Response:
        body = await request.body()
        events.bodies.append(len(body))
        return JSONResponse({"bytes": len(body)})

    async def slow(request: Request) -> Response:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.cancelled += 1
            raise
        return JSONResponse({})

    async def stream(request: Request) -> Response:
        async def ticks() -> AsyncIterator[bytes]:
            for i in range(4):
                await asyncio.sleep(0.05)
                yield f"data: {i}\n\n".encode()

        return StreamingResponse(ticks(), media_type="text/event-stream")

    async def stubborn(request: Request) -> Response:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            events.cancelled += 1
        return JSONResponse({"late": True})  # the cancel caught: an answer after all

    async def own_timeout(request: Request) -> Response:
        raise TimeoutError("the handler's own")

    async def who(request: Request) -> Response:
        return JSONResponse({"key": caller_key(request.scope), "name": caller_name(request.scope)})

    routes = [
        Route("/echo", echo, methods=["POST"]),
        Route("/slow", slow),
        Route("/stream", stream),
        Route("/stubborn", stubborn),
        Route("/own-timeout", own_timeout),
        Route("/who", who),
    ]
    return Starlette(routes=routes, middleware=list(middleware))


def client(app: ASGIApp, **kwargs: object) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=app, client=("10.0.0.7", 4321), **kwargs)  # type: ignore[arg-type]
    return httpx.AsyncClient(transport=transport, base_url="http://localhost")


SIZE = Middleware(SizeLimit, max_body_bytes=100, max_url_bytes=64)


async def test_a_body_within_the_cap_is_read() -> None:
    events = Events()
    async with client(tiny_app(events, SIZE)) as http:
        answer = await http.post("/echo", content=b"x" * 100)
    assert (answer.status_code, answer.json()) == (200, {"bytes": 100})


async def test_a_declared_length_over_the_cap_is_refused_unread() -> None:
    events = Events()
    async with client(tiny_app(events, SIZE)) as http:
        answer = await http.post("/echo", content=b"x" * 101)
    assert answer.status_code == 413
    assert answer.json() == {"detail": "the request body is over 100 bytes"}
    assert answer.headers["content-type"] == "application/json"
    assert events.bodies == []  # the handler never ran


async def test_a_streamed_body_is_cut_once_past_the_cap() -> None:
    events = Events()
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked
        for i in range(10):
            sent.append(i)
            yield b"y" * 40

    async with client(tiny_app(events, SIZE)) as http:
        answer = await http.post("/echo", content=chunks())
    assert answer.status_code == 413
    assert answer.json() == {"detail": "the request body is over 100 bytes"}
    assert events.bodies == []  # the handler's read failed at the third chunk
    assert sent == [0, 1, 2]  # and the rest was never asked for


async def test_a_small_streamed_body_passes() -> None:
    events = Events()

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(2):
            yield b"y" * 40

    async with client(tiny_app(events, SIZE)) as http:
        answer = await http.post("/echo", content=chunks())
    assert (answer.status_code, answer.json()) == (200, {"bytes": 80})


async def test_a_long_url_is_refused() -> None:
    events = Events()
    async with client(tiny_app(events, SIZE)) as http:
        # The path and the query string: "/who" and "q=aa...", 64 bytes.
        fits = await http.get("/who", params={"q": "a" * 58})
        too_long = await http.get("/who", params={"q": "a" * 59})
        encoded = await http.get("/who", params={"q": "é" * 10})  # 6 bytes each, encoded
    assert fits.status_code == 200
    assert too_long.status_code == 414
    assert too_long.json() == {"detail": "the URL is over 64 bytes"}
    assert encoded.status_code == 414


async def test_a_slow_handler_is_cancelled_and_answered_503() -> None:
    events = Events()
    app = tiny_app(events, Middleware(TimeLimit, timeout_s=0.05))
    async with client(app) as http:
        answer = await http.get("/slow")
    assert answer.status_code == 503
    assert answer.json() == {"detail": "no answer within 0.05 s: the request was cancelled"}
    assert events.cancelled == 1


async def test_a_stream_begun_in_time_is_not_cut() -> None:
    app = tiny_app(Events(), Middleware(TimeLimit, timeout_s=0.05))
    async with client(app) as http:
        answer = await http.get("/stream")  # 0.2 s of events, the first after 0.05 s
    assert answer.status_code == 200
    assert answer.text == "".join(f"data: {i}\n\n" for i in range(4))


async def test_a_handlers_own_timeout_is_not_the_limits() -> None:
    app = tiny_app(Events(), Middleware(TimeLimit, timeout_s=5))
    async with client(app) as http:
        with pytest.raises(TimeoutError, match="the handler's own"):
            await http.get("/own-timeout")


async def test_a_handler_that_answers_despite_the_cancel_is_let_through() -> None:
    events = Events()
    app = tiny_app(events, Middleware(TimeLimit, timeout_s=0.05))
    async with client(app) as http:
        answer = await http.get("/stubborn")
    assert (answer.status_code, answer.json(), events.cancelled) == (200, {"late": True}, 1)


def test_a_time_limit_is_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        TimeLimit(tiny_app(Events()), timeout_s=0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def rate_limited(clock: Clock, rate: Rate) -> Starlette:
    # Listed outermost first: the authentication, then the limit inside it.
    return tiny_app(
        Events(), Middleware(Authenticated), Middleware(RateLimit, rate=rate, clock=clock)
    )


async def test_a_caller_over_its_rate_is_told_when_to_come_back() -> None:
    clock = Clock()
    app = rate_limited(clock, Rate(per_s=0.5, burst=2))  # a token every 2 s
    async with client(app) as http:
        statuses = [(await http.get("/who")).status_code for _ in range(2)]
        refused = await http.get("/who")
        clock.now += 1.5
        later = await http.get("/who")
        clock.now += 0.5
        admitted = await http.get("/who")
    assert statuses == [200, 200]
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "2"
    assert refused.json() == {
        "detail": "rate limit of this client (0.5 requests/s, burst 2) reached: retry after 2 s",
        "retry_after_s": 2,
    }
    assert (later.status_code, later.headers["retry-after"]) == (429, "1")
    assert admitted.json() == {"key": "client:10.0.0.7", "name": ANONYMOUS}


async def test_tokens_are_limited_by_name_not_address() -> None:
    clock = Clock()
    app = rate_limited(clock, Rate(per_s=1.0, burst=1))
    async with client(app) as http:
        ci = await http.get("/who", headers={"x-test-token": "ci-agent"})
        ci_again = await http.get("/who", headers={"x-test-token": "ci-agent"})
        other = await http.get("/who", headers={"x-test-token": "alice"})
        anonymous = await http.get("/who")  # the same address: its own bucket
    assert ci.json() == {"key": "token:ci-agent", "name": "ci-agent"}
    assert ci_again.status_code == 429
    assert ci_again.headers["retry-after"] == "1"
    assert ci_again.json()["detail"].startswith("rate limit of this token (1 requests/s")
    assert other.status_code == 200
    assert anonymous.json() == {"key": "client:10.0.0.7", "name": ANONYMOUS}


def test_a_principal_without_a_name_is_no_principal() -> None:
    scope: Scope = {"type": "http", "state": {"principal": object()}, "client": ("::1", 5)}
    assert (caller_key(scope), caller_name(scope)) == ("client:::1", ANONYMOUS)
    assert caller_key({"type": "http"}) == "client:unknown"
