"""The query service's metrics: freshness per repository, the embedding queue, the
materializer's lag behind the topics, and request latency per endpoint.

What the read model knows is read at scrape time (``ReadModelCollector``), on the event
loop that feeds it, so a scrape never sees a repository half-way through a delta. The
collector is bound to one read model, so it goes on a registry of its own per service;
``exposition`` renders it after the process's default registry, where the stream's
counters (stores/metrics.py) and the latency histogram live.

Under ``gazetteer up`` the worker and the producers run in processes of their own
(issue 15), each serving its metrics on a loopback port; ``PeerCollector`` (on the
default registry of the query process) reads them at scrape time and adds them with a
``part`` label (``worker``, ``watch``), so this ``/metrics`` still shows every part.
``exposition`` merges the families that several processes share (one group per name,
as the text format requires).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import structlog
from prometheus_client import REGISTRY, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from starlette.types import ASGIApp, Receive, Scope, Send

from query.read_model import ReadModel
from stores.metrics import LATENCY_BUCKETS

METRICS_PATH = "/metrics"
UNTIMED = frozenset({METRICS_PATH, "/dashboard/events"})  # a scrape; a stream held open
UNMATCHED = "<unmatched>"

log = structlog.get_logger(__name__)

PEER_TIMEOUT_S = 2.0
"""A part's metrics are read on loopback from a thread of its own (prometheus_client's
server), so they answer while the part's event loop is busy; a part that is restarting
is missing from one scrape (``gazetteer_part_scraped`` says so), not blocking it."""

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
    """The process's metrics (with the peers', if any), then the service's own (the
    text format allows any order of families, but one group per name)."""
    families = merge_families([*REGISTRY.collect(), *registry.collect()])
    rendered = CollectorRegistry(auto_describe=False)
    rendered.register(_Fixed(families))
    return generate_latest(rendered)


@dataclass(frozen=True, slots=True)
class Peer:
    """Another process of the same deployment whose metrics this one shows."""

    part: str
    url: str


class PeerCollector(Collector):
    """The peers' metrics, read when scraped, each sample labelled with its ``part``."""

    def __init__(self, peers: Sequence[Peer], timeout_s: float = PEER_TIMEOUT_S) -> None:
        self._peers = tuple(peers)
        self._timeout_s = timeout_s

    def describe(self) -> Iterable[Metric]:
        return ()  # names unknown until scraped; the registry must not scrape to learn them

    def collect(self) -> Iterator[Metric]:
        with ThreadPoolExecutor(max_workers=max(1, len(self._peers))) as pool:
            texts = list(pool.map(self._read, self._peers))
        scraped = GaugeMetricFamily(
            "gazetteer_part_scraped",
            "1 when this scrape read the part's metrics, 0 when the part did not answer.",
            labels=["part"],
        )
        for peer, text in zip(self._peers, texts, strict=True):
            scraped.add_metric([peer.part], 0.0 if text is None else 1.0)
            if text is not None:
                yield from labelled(text, peer.part)
        yield scraped

    def _read(self, peer: Peer) -> str | None:
        try:
            response = httpx.get(peer.url, timeout=self._timeout_s)
            response.raise_for_status()
        except httpx.HTTPError as error:
            log.info("part_metrics_unavailable", part=peer.part, error=repr(error))
            return None
        return response.text


def labelled(text: str, part: str) -> Iterator[Metric]:
    """The families of one exposition, every sample with ``part=`` added. The ``_created``
    gauges are left out: the text format derives them from their counter or histogram,
    so the peer's would be a second group of the same name."""
    for family in text_string_to_metric_families(text):
        if family.type == "gauge" and family.name.endswith("_created"):
            continue
        family.samples = [
            Sample(s.name, {**s.labels, "part": part}, s.value, s.timestamp, s.exemplar)
            for s in family.samples
        ]
        yield family


def merge_families(families: Iterable[Metric]) -> list[Metric]:
    """One family per name, in the order first seen; samples of the same name and type
    concatenated (a family of another type under a taken name is dropped and logged)."""
    merged: dict[str, Metric] = {}
    for family in families:
        known = merged.get(family.name)
        if known is None:
            merged[family.name] = family
        elif known.type == family.type:
            known.samples = [*known.samples, *family.samples]
        else:
            log.warning(
                "metric_family_conflicted", name=family.name, types=[known.type, family.type]
            )
    return list(merged.values())


class _Fixed(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self._families = families

    def describe(self) -> Iterable[Metric]:
        return ()

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)


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
