"""Prometheus metrics: what the stream's parts count, and what /metrics shows.

The stream's metrics live on the process's default registry and are shared by every
test in the session: the tests read differences, on topics named for the test alone.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Callable
from typing import NamedTuple

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families

from deploy.metrics_server import consumer_lag, metrics_served, report_consumer_lag
from deploy.settings import Settings
from processors.indexer import RepoIndex
from processors.neighborhood_stream import InMemorySnapshotSink, NeighborhoodStream
from processors.neighborhoods.reclusterer import Reclusterer
from processors.parsing import ParseResult
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message
from producers.events import encode
from producers.kafka_sink import KafkaSink
from producers.topics import Topics
from query.api import create_api
from query.dense import DenseIndex
from query.read_model import ReadModel
from stores.delta_log import InMemoryDeltaLog
from stores.snapshot_log import InMemorySnapshotLog
from stores.text.embedders import HashingEmbedder
from stores.text.embedding_cache import InMemoryEmbeddingCache
from stores.vectors import InMemoryVectorStore
from tests.factories import Stamp, tiny_parse
from tests.unit.test_kafka_sink import FlakyProducer
from tests.unit.test_neighborhood_stream import BrokenReclusterer, Worker, scanned
from tests.unit.test_query_api import status


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def stage_counts() -> dict[str, float]:
    stages = ("decode", "restore", "handle", "publish")
    return {s: sample("gazetteer_stage_seconds_count", stage=s) for s in stages}


def delta_of(read: Callable[[], dict[str, float]], before: dict[str, float]) -> dict[str, float]:
    return {key: value - before[key] for key, value in read().items()}


def scraped(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def broken_parse(path: str, content: bytes) -> ParseResult:
    if path == "bad.py":
        raise RuntimeError("a parser bug")
    return tiny_parse(path, content)


async def test_the_pipeline_counts_events_stages_and_dead_letters_by_kind() -> None:
    topic = f"t{uuid.uuid4().hex[:10]}.file-events.v1"
    log = InMemoryDeltaLog()
    pipeline = IndexingPipeline(
        log,
        InMemoryDeltaSink(log),
        new_index=lambda repo: RepoIndex(repo, parse=broken_parse),
    )
    stamp = Stamp()
    raws = [
        encode(stamp.claim()),
        encode(stamp.changed("a.py", "def f")),
        b"not json",
        encode(stamp.changed("bad.py", "def g")),
        encode(stamp.scan_completed("c1")),
    ]
    messages = [Message(topic, 0, offset, b"app-1", raw) for offset, raw in enumerate(raws)]
    stages = stage_counts()
    letters = {k: sample("gazetteer_dead_letters_total", failure=k) for k in ("malformed", "bug")}

    await pipeline.process_batch(messages)

    assert sample("gazetteer_events_consumed_total", topic=topic) == 5
    # decode: every message; handle: the four events (the bug included); publish: the
    # batch's deltas once, and once more before the bug's index is restored; restore:
    # the partition at first, and again after the bug.
    assert delta_of(stage_counts, stages) == {"decode": 5, "restore": 2, "handle": 4, "publish": 2}
    assert {k: sample("gazetteer_dead_letters_total", failure=k) - letters[k] for k in letters} == {
        "malformed": 1,
        "bug": 1,
    }


async def test_a_recluster_is_timed_and_a_failed_one_counted() -> None:
    count = "gazetteer_recluster_seconds_count"
    before = (sample(count), sample("gazetteer_recluster_failures_total"))
    worker, stamp = Worker(InMemoryDeltaLog(), InMemorySnapshotLog()), Stamp()
    await scanned(worker, stamp)
    assert len(await worker.tick(after_s=1)) == 1
    broken = Worker(InMemoryDeltaLog(), InMemorySnapshotLog(), BrokenReclusterer())
    await scanned(broken, Stamp())
    assert await broken.tick(after_s=1) == []

    assert sample(count) - before[0] == 2  # the failed run took time too
    assert sample("gazetteer_recluster_failures_total") - before[1] == 1


async def test_the_stream_does_not_count_what_it_did_not_recluster() -> None:
    stream = NeighborhoodStream(Reclusterer(), InMemorySnapshotLog(), InMemorySnapshotSink())
    before = sample("gazetteer_recluster_seconds_count")
    await stream.tick()
    assert sample("gazetteer_recluster_seconds_count") == before


async def test_the_kafka_sink_counts_what_the_broker_acknowledged_per_topic() -> None:
    topics = Topics(f"t{uuid.uuid4().hex[:10]}")
    producer = FlakyProducer(failures=2)
    sink = KafkaSink("unused:0", topics=topics, first_delay_s=0.001, producer=producer)  # type: ignore[arg-type]
    s = Stamp()
    await asyncio.wait_for(sink.publish([s.changed("a.py", "A = 1"), s.changed("b.py", "B")]), 5)

    # Sent twice (the first attempt failed), acknowledged once: two events.
    assert sample("gazetteer_events_produced_total", topic=topics.file_events) == 2
    assert sample("gazetteer_events_produced_total", topic=topics.sources) == 0


def fed_model() -> ReadModel:
    store = InMemoryVectorStore()
    dense = DenseIndex(HashingEmbedder(dim=16), store, InMemoryEmbeddingCache(), batch=2)
    model = ReadModel(clock=lambda: 1002.0, dense=dense)
    for repo, last_seq in (("app-1", 3), ("lib-2", 6)):
        index, s = RepoIndex(repo, parse=tiny_parse), Stamp(repo)
        for event in (s.claim(), s.changed("a.py", "def f\ndef g"), s.scan_completed("c1")):
            delta = index.handle(event, now=1000.5)
            assert delta is not None
            model.apply_delta(delta)
        model.apply_status(status(last_seq, repo=repo, batch_first_seq=3, batch_started_at=1001))
    return model


def test_metrics_show_freshness_per_repository_and_the_embedding_queue() -> None:
    model = fed_model()
    assert model.dense is not None
    queued = model.dense.queued()
    assert queued > 0
    client = TestClient(create_api(model, ready=lambda: True))

    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    samples = scraped(response.text)
    per_repo = {
        name: {repo: samples[(name, (("repo", repo),))] for repo in ("app-1", "lib-2")}
        for name in (
            "gazetteer_freshness_lag_seconds",
            "gazetteer_pending_events",
            "gazetteer_repository_fresh",
        )
    }
    # app-1 reflects all 2 events (indexed 0.5 s after they were emitted); lib-2 has 3
    # pending, the oldest batch emitted at 1001, scraped at 1002.
    assert per_repo == {
        "gazetteer_freshness_lag_seconds": {"app-1": 0.5, "lib-2": 1.0},
        "gazetteer_pending_events": {"app-1": 0.0, "lib-2": 3.0},
        "gazetteer_repository_fresh": {"app-1": 1.0, "lib-2": 0.0},
    }
    assert samples[("gazetteer_embedding_queue_chunks", ())] == queued
    assert samples[("gazetteer_embedded_chunks_total", ())] == 0

    model.dense.fill()
    after = scraped(client.get("/metrics").text)
    assert after[("gazetteer_embedding_queue_chunks", ())] == 0
    assert after[("gazetteer_embedded_chunks_total", ())] == queued


def test_query_latency_is_counted_by_route_template_and_metrics_itself_is_not() -> None:
    client = TestClient(create_api(fed_model(), ready=lambda: True))

    def counts() -> dict[str, float]:
        endpoints: tuple[str, ...] = ("/repositories/{repo}", "/health", "/metrics")
        endpoints += ("/repositories/{repo}/files/{path:path}", "<unmatched>")
        return {e: sample("gazetteer_query_seconds_count", endpoint=e) for e in endpoints}

    before = counts()
    for path in ("/repositories/app-1", "/repositories/lib-2", "/repositories/nope"):
        client.get(path)
    assert client.get("/repositories/app-1/files/a.py").status_code == 200
    assert client.get("/no/such/route").status_code == 404
    client.get("/metrics")

    assert delta_of(counts, before) == {
        "/repositories/{repo}": 3,  # a 404 of the endpoint counts under it
        "/repositories/{repo}/files/{path:path}": 1,
        "/health": 0,
        "/metrics": 0,
        "<unmatched>": 1,
    }


def test_metrics_is_not_in_the_schema_so_not_an_mcp_tool() -> None:
    api = create_api(ReadModel(), ready=lambda: False)
    assert "/metrics" not in api.openapi()["paths"]
    assert "/health" in api.openapi()["paths"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_worker_serves_the_process_metrics_on_its_port_once_for_all_parts() -> None:
    settings = Settings.model_validate({"metrics_port": free_port(), "host": "127.0.0.1"})
    url = f"http://127.0.0.1:{settings.metrics_port}/metrics"
    async with metrics_served(settings), metrics_served(settings):  # worker and producers
        async with httpx.AsyncClient() as client:
            body = (await client.get(url)).text
    assert "# TYPE gazetteer_stage_seconds histogram" in body
    assert "# TYPE gazetteer_events_consumed_total counter" in body
    async with httpx.AsyncClient() as client:  # stopped with the last part using it
        with pytest.raises(httpx.ConnectError):
            await client.get(url)


class TP(NamedTuple):
    topic: str
    partition: int


class FetchedConsumer:
    """A consumer's view of its partitions: (topic, partition) -> (high watermark, position)."""

    def __init__(self, fetched: dict[tuple[str, int], tuple[int | None, int]]) -> None:
        self.fetched = fetched

    def assignment(self) -> set[tuple[str, int]]:
        return set(self.fetched)

    def highwater(self, tp: TP) -> int | None:
        return self.fetched[(tp.topic, tp.partition)][0]

    async def position(self, tp: TP) -> int | None:
        return self.fetched[(tp.topic, tp.partition)][1]


async def test_the_workers_lag_counts_from_what_the_pipeline_processed() -> None:
    consumer = FetchedConsumer(
        {
            TP("events", 0): (10, 10),  # fetched to the end, processed up to offset 6
            TP("events", 1): (5, 2),  # nothing processed yet: from the position
            TP("events", 2): (None, 0),  # not fetched yet
            TP("other", 0): (100, 0),
        }
    )
    processed = {("events", 0): 7}
    assert await consumer_lag(consumer, "events", processed) == 3 + 3

    topic = f"t{uuid.uuid4().hex[:10]}.file-events.v1"
    consumer.fetched = {TP(topic, 0): (4, 1)}
    stop = asyncio.Event()
    reporting = asyncio.create_task(report_consumer_lag(consumer, topic, {}, stop, every_s=0.01))
    await asyncio.sleep(0.05)
    assert sample("gazetteer_consumer_lag_messages", topic=topic) == 3
    stop.set()
    await asyncio.wait_for(reporting, 1)
