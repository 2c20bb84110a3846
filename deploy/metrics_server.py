"""The worker's side of metrics: an HTTP endpoint, and its consumer lag.

The query service answers ``/metrics`` itself. A worker or the producers started on their
own (``gazetteer worker``, ``gazetteer watch``) serve the process's metrics on
``GAZETTEER_METRICS_PORT`` at ``GAZETTEER_HOST`` when the port is not 0.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol
from wsgiref.simple_server import WSGIServer

import structlog
from prometheus_client import start_http_server

from deploy.settings import Settings
from stores.metrics import CONSUMER_LAG

log = structlog.get_logger(__name__)


class _MetricsServer:
    """One Prometheus endpoint per process for the parts that serve no HTTP of their own
    (the worker, the producers), however many of them ask for it (``up`` runs both)."""

    def __init__(self) -> None:
        self._server: WSGIServer | None = None
        self._users = 0

    @contextlib.asynccontextmanager
    async def used(self, host: str, port: int) -> AsyncIterator[None]:
        if self._server is None:
            self._server, _ = start_http_server(port, addr=host)
            log.info("metrics_listening", url=f"http://{host}:{port}/metrics")
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


_METRICS_SERVER = _MetricsServer()


@contextlib.asynccontextmanager
async def metrics_served(settings: Settings) -> AsyncIterator[None]:
    """Serve the process's metrics on ``GAZETTEER_METRICS_PORT`` (none when it is 0)."""
    if not settings.metrics_port:
        yield
        return
    async with _METRICS_SERVER.used(settings.host, settings.metrics_port):
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
