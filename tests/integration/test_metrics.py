"""/metrics on a real broker: what the producers sent, the worker read and the query
service answered, as Prometheus sees it.

The parts run in the test's process, as in ``gazetteer up``: one default registry. Each
test's topics have a namespace of their own, so per-topic counts are this test's alone.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually
from tests.integration.test_streaming import APP_FILES, fresh_repo

pytestmark = pytest.mark.integration

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(stack: Stack) -> Samples:
    assert stack.url is not None
    async with httpx.AsyncClient(base_url=stack.url, timeout=10) as client:
        response = await client.get("/metrics")
    response.raise_for_status()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


async def test_metrics_follow_a_repository_from_producer_to_query(
    stack: Stack, tmp_path: Path
) -> None:
    topics = stack.settings.topics
    files: dict[str, str | bytes] = dict(APP_FILES)
    repo = GitRepo.create(tmp_path / "app", files)
    await stack.start_sources([repo.root])
    rid = (await fresh_repo(stack))["repo"]

    samples = await scrape(stack)
    produced = value(samples, "gazetteer_events_produced_total", topic=topics.file_events)
    assert produced is not None and produced >= len(APP_FILES) + 1  # the files, the barrier
    # Fresh: every event emitted is indexed, so the worker has read each one (once).
    consumed = value(samples, "gazetteer_events_consumed_total", topic=topics.file_events)
    assert consumed == produced
    assert (value(samples, "gazetteer_events_produced_total", topic=topics.sources) or 0) >= 1
    # The query service read the worker's deltas: at least the repository's sequence.
    deltas = value(samples, "gazetteer_events_consumed_total", topic=topics.graph_deltas)
    assert stack.model is not None
    assert deltas is not None and deltas >= stack.model.repos[rid].state.seq > 0
    # ... and the worker counts the deltas it published (the topic is per test run).
    published = value(samples, "gazetteer_events_produced_total", topic=topics.graph_deltas)
    assert published == deltas
    for stage in ("decode", "handle", "publish"):
        count = value(samples, "gazetteer_stage_seconds_count", stage=stage)
        assert count is not None and count > 0, stage

    assert value(samples, "gazetteer_repository_fresh", repo=rid) == 1.0
    assert value(samples, "gazetteer_pending_events", repo=rid) == 0.0
    lag = value(samples, "gazetteer_freshness_lag_seconds", repo=rid)
    assert lag is not None and 0.0 <= lag < 60.0

    async def caught_up() -> bool:
        now = await scrape(stack)
        lags = [
            value(now, "gazetteer_consumer_lag_messages", topic=topic)
            for topic in (topics.file_events, topics.graph_deltas, topics.sources)
        ]
        return lags == [0.0, 0.0, 0.0]

    await eventually(caught_up, 30, "the worker's and the materializer's lag to reach 0")

    def query_counts(samples: Samples) -> dict[str, float]:
        endpoints = ("/repositories/{repo}", "/repositories/{repo}/files/{path:path}")
        return {
            e: value(samples, "gazetteer_query_seconds_count", endpoint=e) or 0.0 for e in endpoints
        }

    before = query_counts(await scrape(stack))
    for _ in range(3):
        await stack.get(f"/repositories/{rid}")
    await stack.get(f"/repositories/{rid}/files/app/views.py")
    await stack.get(f"/repositories/{rid}/files/web/main.js")
    after = query_counts(await scrape(stack))
    assert {e: after[e] - before[e] for e in after} == {
        "/repositories/{repo}": 3,
        "/repositories/{repo}/files/{path:path}": 2,
    }
