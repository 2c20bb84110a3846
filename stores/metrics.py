"""The stream's Prometheus metrics: messages in and out per topic, stage latencies,
dead letters, reclusters and the worker's embedding.

The worker and the query service's materializer count here, so this module sits where
both may import it; what producers count is in ``producers/metrics.py`` (producers
import nothing of ours). The metrics live on the process's default
registry and are created once, at import: in ``gazetteer up`` every part runs in one
process and the query service's ``/metrics`` shows them all; ``gazetteer worker``
serves them on ``GAZETTEER_METRICS_PORT``. Tests read differences, never totals.
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.context_managers import Timer

Stage = Literal["decode", "restore", "handle", "publish"]

# From a no-op event (~50 us) to a scan barrier resolving a large repository (~minutes).
LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    180.0,
)

EVENTS_CONSUMED = Counter(
    "gazetteer_events_consumed_total",
    "Messages read from a topic (the worker: file events; the query service: the rest).",
    ["topic"],
)
STAGE_SECONDS = Histogram(
    "gazetteer_stage_seconds",
    "Time in each stage of the indexing pipeline: decode, restore (a partition from the "
    "delta log), handle (parse and resolve one event), publish (a batch of deltas, "
    "until acknowledged).",
    ["stage"],
    buckets=LATENCY_BUCKETS,
)
CONSUMER_LAG = Gauge(
    "gazetteer_consumer_lag_messages",
    "Messages on a topic this process has not processed yet (the high watermark of the "
    "last fetch minus the next offset): the worker's file events, the query service's "
    "other topics.",
    ["topic"],
)
DEAD_LETTERS = Counter(
    "gazetteer_dead_letters_total",
    "Events sent to the dead-letter topic, per failure kind (malformed, bug).",
    ["failure"],
)
RECLUSTER_SECONDS = Histogram(
    "gazetteer_recluster_seconds",
    "Time to recluster one repository's neighborhoods.",
    buckets=LATENCY_BUCKETS,
)
RECLUSTER_FAILURES = Counter(
    "gazetteer_recluster_failures_total",
    "Reclusters that raised (a bug: logged with its traceback).",
)
HEAP_SETTLED = Counter(
    "gazetteer_heap_settled_total",
    "Times the heap was frozen (gc.freeze, no collection) after a large scan or restore.",
    ["side"],  # worker | query
)

RESOLUTION_WARMED_FILES = Counter(
    "gazetteer_resolution_warmed_files_total",
    "Files (and folders) of restored repositories the worker resolved while idle, so "
    "that the first change after a restart re-resolves only what it affects (issue 16).",
)
RESOLUTION_WARM_SLICE_SECONDS = Histogram(
    "gazetteer_resolution_warm_slice_seconds",
    "Time of one slice of that background resolution (events wait at most about this).",
    buckets=LATENCY_BUCKETS,
)

WORKER_EMBEDDING_QUEUE = Gauge(
    "gazetteer_worker_embedding_queue_chunks",
    "Chunks waiting to be embedded by this worker (GAZETTEER_EMBED_IN=worker; the query "
    "service's gazetteer_embedding_queue_chunks is 0 then).",
)
WORKER_EMBEDDED_CHUNKS = Counter(
    "gazetteer_worker_embedded_chunks_total",
    "Chunks this worker embedded and stored in the shared vector store.",
)


def consumed(topic: str, count: int = 1) -> None:
    EVENTS_CONSUMED.labels(topic).inc(count)


def stage_timer(stage: Stage) -> Timer:
    """A context manager that observes the time spent in ``stage``."""
    return STAGE_SECONDS.labels(stage).time()
