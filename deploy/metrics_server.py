"""The worker's side of metrics: an HTTP endpoint, and its consumer lag.

The query service answers ``/metrics`` itself. A worker or the producers started on their
own (``gazetteer worker``, ``gazetteer watch``) serve the process's metrics on
``GAZETTEER_METRICS_PORT`` at ``GAZETTEER_HOST`` when the port is not 0.

With authentication on (``GAZETTEER_AUTH=on``), that endpoint asks what the query
service's ``/metrics`` asks (issue 19): a bearer token with the ``metrics`` scope, else
401 (no token, a wrong or a revoked one) or 403 (a token without the scope), with the
same challenges (query/auth/middleware.py). The process follows the tokens topic for it
(stores/token_follower.py): a revocation holds within a poll of the topic. A WSGI
wrapper around prometheus_client's app on wsgiref, as ``start_http_server`` serves it:
no web framework in the worker (tests/unit/test_cli_imports.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterable, Mapping
from socketserver import ThreadingMixIn
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

import structlog
from prometheus_client import make_wsgi_app, start_http_server

from deploy.settings import Settings
from stores.metrics import CONSUMER_LAG
from stores.token_follower import follow_tokens
from stores.tokens import Scope, TokenBook

log = structlog.get_logger(__name__)

REALM = 'Bearer realm="gazetteer"'
"""The challenge of a refused request, the query service's (query/auth/middleware.py)."""


def guarded(app: WSGIApplication, book: TokenBook, need: Scope = "metrics") -> WSGIApplication:
    """``app``, answered only to the bearer of a live token of ``book`` with ``need``."""

    def guard(environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        given = bearer(environ.get("HTTP_AUTHORIZATION"))
        record = book.record_for(given)
        if record is None:
            invalid = ', error="invalid_token"' if given else ""
            detail = "invalid or revoked token" if given else "authentication required"
            return _refused(start_response, "401 Unauthorized", detail, REALM + invalid)
        if need not in record.scopes:
            challenge = f'{REALM}, error="insufficient_scope", scope="{need}"'
            detail = f"this token lacks the {need!r} scope"
            return _refused(start_response, "403 Forbidden", detail, challenge)
        return app(environ, start_response)

    return guard


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization`` header; '' for another scheme; None: no header."""
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _refused(
    start_response: StartResponse, status: str, detail: str, challenge: str
) -> list[bytes]:
    body = json.dumps({"detail": detail}).encode()
    start_response(
        status,
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("WWW-Authenticate", challenge),
        ],
    )
    return [body]


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # as prometheus_client's: a scrape never holds the process


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr (prometheus_client's handler logs none either)."""


def serve_wsgi(app: WSGIApplication, host: str, port: int) -> WSGIServer:
    """``app`` served at host:port from a thread of its own, a thread per request, as
    prometheus_client's ``start_http_server`` serves its own app."""
    family, _, _, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]

    class Server(_ThreadingServer):
        address_family = family  # an IPv6 host needs its family (as prometheus_client)

    server: WSGIServer = make_server(
        str(address[0]), port, app, Server, handler_class=_QuietHandler
    )
    threading.Thread(target=server.serve_forever, name="metrics-server", daemon=True).start()
    return server


STOP_FOLLOWING_S = 5.0


class _MetricsServer:
    """One Prometheus endpoint per process for the parts that serve no HTTP of their own
    (the worker, the producers), however many of them ask for it (``up`` runs both)."""

    def __init__(self) -> None:
        self._server: WSGIServer | None = None
        self._following: tuple[asyncio.Event, asyncio.Task[None]] | None = None
        self._users = 0

    @contextlib.asynccontextmanager
    async def used(self, settings: Settings, bootstrap: str | None) -> AsyncIterator[None]:
        host, port = settings.host, settings.metrics_port
        if self._server is None:
            if settings.auth:
                self._server = self._start_guarded(settings, bootstrap)
            else:
                self._server, _ = start_http_server(port, addr=host)
            log.info("metrics_listening", url=f"http://{host}:{port}/metrics", auth=settings.auth)
        self._users += 1
        try:
            yield
        finally:
            self._users -= 1
            server = self._server
            if self._users == 0 and server is not None:
                self._server = None
                await asyncio.to_thread(server.shutdown)
                server.server_close()
                await self._stop_following()

    def _start_guarded(self, settings: Settings, bootstrap: str | None) -> WSGIServer:
        if bootstrap is None:
            raise ValueError("metrics asking a token need the broker to follow the tokens")
        book, stop = TokenBook(), asyncio.Event()  # empty until followed: refuses all
        server = serve_wsgi(guarded(make_wsgi_app(), book), settings.host, settings.metrics_port)
        follower = asyncio.create_task(
            follow_tokens(bootstrap, settings.topics.tokens, book, stop), name="token-follower"
        )
        self._following = (stop, follower)
        return server

    async def _stop_following(self) -> None:
        if self._following is None:
            return
        stop, follower = self._following
        self._following = None
        stop.set()
        with contextlib.suppress(TimeoutError):  # a broker that does not answer: cancelled
            await asyncio.wait_for(follower, STOP_FOLLOWING_S)


_METRICS_SERVER = _MetricsServer()


@contextlib.asynccontextmanager
async def metrics_served(settings: Settings, bootstrap: str | None = None) -> AsyncIterator[None]:
    """Serve the process's metrics on ``GAZETTEER_METRICS_PORT`` (none when it is 0);
    with ``settings.auth``, to ``metrics`` tokens of the tokens topic at ``bootstrap``."""
    if not settings.metrics_port:
        yield
        return
    async with _METRICS_SERVER.used(settings, bootstrap):
        yield


class FetchState(Protocol):
    """What a consumer knows of its partitions without asking the broker (faust's
    Consumer has it)."""

    def assignment(self) -> set[Any]: ...

    def highwater(self, tp: Any) -> int | None: ...

    async def position(self, tp: Any) -> int | None: ...


async def consumer_lag(
    consumer: FetchState, topic: str, processed: Mapping[tuple[str, int], int]
) -> int:
    """Messages of ``topic`` on this consumer's partitions not processed yet: the high
    watermark of the last fetch minus the next offset to process (``processed``, by
    (topic, partition); the consumer's position for a partition nothing was processed
    from yet). Partitions not fetched yet count nothing."""
    behind = 0
    for tp in sorted(consumer.assignment()):
        if tp.topic != topic:
            continue
        end = consumer.highwater(tp)
        done = processed.get((tp.topic, tp.partition))
        if done is None:
            done = await consumer.position(tp)
        if end is not None and done is not None:
            behind += max(0, end - done)
    return behind


async def report_consumer_lag(
    consumer: FetchState,
    topic: str,
    processed: Mapping[tuple[str, int], int],
    stop: asyncio.Event,
    every_s: float = 1.0,
) -> None:
    """Set ``gazetteer_consumer_lag_messages{topic}`` every ``every_s`` until ``stop``."""
    while not stop.is_set():
        try:
            CONSUMER_LAG.labels(topic).set(await consumer_lag(consumer, topic, processed))
        except Exception:  # a rebalance under way, the consumer stopping: next time
            log.debug("consumer_lag_unavailable", topic=topic, exc_info=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
