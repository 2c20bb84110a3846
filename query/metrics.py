"""The query service's metrics: freshness per repository, the embedding queue, the
materializer's lag behind the topics, and request latency per endpoint.

What the read model knows is read at scrape time (``ReadModelCollector``), on the event
loop that feeds it, so a scrape never sees a repository half-way through a delta. The
collector is bound to one read model, so it goes on a registry of its own per service;
``exposition`` renders it after the process's default registry, where the stream's
counters (stores/metrics.py) and the latency histogram live.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import REGISTRY, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Receive, Scope, Send

from query.read_model import ReadModel
from stores.metrics import LATENCY_BUCKETS

METRICS_PATH = "/metrics"
UNTIMED = frozenset({METRICS_PATH, "/dashboard/events"})  # a scrape; a stream held open
UNMATCHED = "<unmatched>"

QUERY_SECONDS = Histogram(
    "gazetteer_query_seconds",
    "Time to answer an HTTP request, per endpoint (its route template).",
    ["endpoint"],
    buckets=LATENCY_BUCKETS,
)


class ReadModelCollector(Collector):
    """Freshness and the embedding queue of one read model, read when scraped."""

    def __init__(self, model: ReadModel) -> None:
        self._model = model

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily(
            "gazetteer_freshness_lag_seconds",
            "Age of the oldest event not yet indexed; with none pending, how long the "
            "last event took to be indexed.",
            labels=["repo"],
        )
        pending = GaugeMetricFamily(
            "gazetteer_pending_events",
            "Events the repository's producer emitted and the index does not reflect yet.",
            labels=["repo"],
        )
        fresh = GaugeMetricFamily(
            "gazetteer_repository_fresh",
            "1 when the index reflects the head commit and the work tree, else 0.",
            labels=["repo"],
        )
        for repo in sorted(self._model.repos):
            freshness = self._model.freshness(repo)
            lag.add_metric([repo], freshness.lag_ms / 1000)
            pending.add_metric([repo], freshness.pending_events)
            fresh.add_metric([repo], 1.0 if freshness.status == "fresh" else 0.0)
        yield from (lag, pending, fresh)
        dense = self._model.dense
        if dense is not None:
            yield GaugeMetricFamily(
                "gazetteer_embedding_queue_chunks",
                "Chunks waiting to be embedded for dense retrieval.",
                value=dense.queued(),
            )
            yield CounterMetricFamily(
                "gazetteer_embedded_chunks",
                "Chunks embedded and stored since the service started.",
                value=dense.embedded,
            )


def service_registry(model: ReadModel) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(ReadModelCollector(model))
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """The process's metrics, then the service's own (the text format allows any order
    of families)."""
    return generate_latest(REGISTRY) + generate_latest(registry)


def endpoint_of(scope: Scope) -> str:
    """The route template a request matched (``/repositories/{repo}``), never its raw
    path: one series per endpoint, however many repositories and files there are."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


class QueryTimer:
    """ASGI middleware: observes every HTTP request's time by endpoint, ``/metrics``
    and the dashboard's event stream aside. Timed to the end of the response, so a
    streamed answer counts whole."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        try:
            await self.app(scope, receive, send)
        finally:
            endpoint = endpoint_of(scope)
            if endpoint not in UNTIMED:
                QUERY_SECONDS.labels(endpoint).observe(time.perf_counter() - started)
