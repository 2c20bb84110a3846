"""What producers count: messages the broker acknowledged, per topic (the worker counts
its own publishing here too). On the process's default registry, like the stream's
other metrics (``stores/metrics.py``)."""

from __future__ import annotations

from prometheus_client import Counter

EVENTS_PRODUCED = Counter(
    "gazetteer_events_produced_total",
    "Messages the broker acknowledged, per topic.",
    ["topic"],
)


def produced(topic: str, count: int = 1) -> None:
    """Count messages the broker acknowledged on ``topic``."""
    EVENTS_PRODUCED.labels(topic).inc(count)
