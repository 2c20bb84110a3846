"""What both benchmarks share: brokers, an in-process stack with a joined worker, output.

The stack is `tests.integration.stack.Stack`: the worker, the query service and the
sources run in this process's event loop and talk only through a real broker. The
worker part mirrors `deploy.worker_part.run_worker` but keeps the faust app, so that the
benchmark can wait until the worker has joined its consumer group (start-up, reported
apart from the measured work) and read the pipeline's counters.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faust
from faust.exceptions import ConsumerNotStarted

from deploy.embedded_broker import EmbeddedBroker
from deploy.kafka_dist import ApacheKafka
from deploy.query_part import run_query
from deploy.settings import Settings
from deploy.worker_part import run_worker
from query.read_model import ReadModel
from stores.freshness import Freshness
from tests.integration.stack import Part, Stack, open_stack, stack_settings

OUT_DIR = Path(__file__).with_name("out")
BROKERS = {"embedded": "embedded (Tansu)", "kafka": "Apache Kafka 4.4"}
DEFAULTS = ("partitions", "heartbeat_s", "debounce_ms", "poll_s")


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def broker_kinds(choice: str) -> list[str]:
    return list(BROKERS) if choice == "both" else [choice]


def add_broker_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--broker", choices=("embedded", "kafka", "both"), default="both")


@dataclass(frozen=True, slots=True)
class RunningBroker:
    kind: str
    bootstrap: str
    pid: int | None


@contextlib.asynccontextmanager
async def running_broker(kind: str) -> AsyncIterator[RunningBroker]:
    """Start the named broker for the benchmark, on loopback."""
    started = time.monotonic()
    launcher = EmbeddedBroker() if kind == "embedded" else ApacheKafka(partitions=1)
    async with launcher:
        took = time.monotonic() - started
        progress(f"{BROKERS[kind]} up at {launcher.bootstrap} in {took:.1f} s")
        yield RunningBroker(kind, launcher.bootstrap, launcher.pid)


class CpuMeter:
    """CPU seconds used between start and read: by the broker process, by this process
    (all its threads) and by its finished children (git)."""

    def __init__(self, broker_pid: int | None) -> None:
        self._pid = broker_pid
        self._start = self._now()

    def _now(self) -> tuple[float, float, float]:
        times = os.times()
        return (process_cpu_s(self._pid), time.process_time(), times[2] + times[3])

    def read(self) -> dict[str, float]:
        now = self._now()
        broker, own, children = (b - a for a, b in zip(self._start, now, strict=True))
        return {"broker_cpu_s": broker, "gazetteer_cpu_s": own, "children_cpu_s": children}


def process_cpu_s(pid: int | None) -> float:
    """utime + stime of a live process, from /proc (0 where there is no /proc)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_settings(bootstrap: str, data_dir: Path) -> Settings:
    """A fresh namespace and worker group per run; Settings' own defaults otherwise.

    (`stack_settings` shortens heartbeats and polling for the tests; a benchmark
    measures what a user runs.)
    """
    defaults = {name: Settings.model_fields[name].default for name in DEFAULTS}
    return stack_settings(bootstrap, data_dir, **defaults)


@dataclass
class BenchStack:
    stack: Stack
    app: faust.App
    model: ReadModel
    url: str
    connect_s: float
    worker_join_s: float
    query_start_s: float

    @property
    def settings(self) -> Settings:
        return self.stack.settings

    def counters(self) -> dict[str, int]:
        pipeline = self.app.gazetteer_pipeline  # type: ignore[attr-defined]
        return {
            "worker_events_processed": pipeline.processed,
            "worker_dead_lettered": pipeline.dead_lettered,
            "read_model_deltas_applied": self.model.deltas_applied,
            "read_model_dead_letters": self.model.dead_letters_total,
        }


async def open_bench_stack(settings: Settings, model: ReadModel) -> BenchStack:
    """Topics, then the worker (until it has joined), then the query service."""
    started = time.monotonic()
    stack = await open_stack(settings)
    connected = time.monotonic()
    app = await _start_worker(stack)
    await wait_joined(app, settings)
    joined = time.monotonic()
    url = await _start_query(stack, model)
    listening = time.monotonic()
    return BenchStack(
        stack, app, model, url, connected - started, joined - connected, listening - joined
    )


async def _start_worker(stack: Stack) -> faust.App:
    started: asyncio.Future[faust.App] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    task = asyncio.ensure_future(
        run_worker(stack.settings, stack.cluster, stop, on_started=started.set_result)
    )
    stack.parts["worker"] = Part(stop, task)
    waiters: list[asyncio.Future[Any]] = [started, task]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()  # a worker that failed to start raises here
    return started.result()


async def wait_joined(app: faust.App, settings: Settings, timeout: float = 120.0) -> None:
    """Until the worker owns every partition of the file-events topic."""
    topic, deadline = settings.topics.file_events, time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ConsumerNotStarted):  # until faust's consumer thread runs
            owned = {tp for tp in app.consumer.assignment() if tp.topic == topic}
            if len(owned) == settings.partitions and not app.rebalancing:
                return
        await asyncio.sleep(0.01)
    raise TimeoutError(f"the worker did not join within {timeout} s")


async def _start_query(stack: Stack, model: ReadModel) -> str:
    """`Stack.start_query`, with the benchmark's own read model."""
    listening: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()
    run = run_query(
        stack.settings, stack.cluster, stop, model=model, on_listening=listening.set_result
    )
    stack.parts["query"] = Part(stop, asyncio.ensure_future(run))
    stack.model, stack.url = model, await asyncio.wait_for(listening, 60)
    return stack.url


@dataclass
class FreshMarks:
    """Seconds from a start until the read side saw: all events emitted, all reflected,
    and the status ``fresh``."""

    emitted_s: float
    indexed_s: float
    fresh_s: float
    freshness: Freshness


async def wait_fresh(
    model: ReadModel,
    repo: str,
    head: str | None,
    events: int,
    started: float,
    timeout: float = 600.0,
    every_s: float = 0.01,
) -> FreshMarks:
    """Poll the read model (in process) until ``repo`` is fresh at ``head``."""
    marks: dict[str, float] = {}
    deadline = started + timeout
    while time.monotonic() < deadline:
        view, now = model.repos.get(repo), time.monotonic() - started
        if view is not None and view.status is not None:
            fresh = model.freshness(repo)
            if view.status.last_seq >= events:
                marks.setdefault("emitted", now)
            if fresh.pending_events == 0 and fresh.indexed_commit == head and "emitted" in marks:
                marks.setdefault("indexed", now)
            if fresh.status == "fresh" and fresh.pending_events == 0 and "indexed" in marks:
                return FreshMarks(marks["emitted"], marks["indexed"], now, fresh)
        await asyncio.sleep(every_s)
    raise TimeoutError(f"{repo} was not fresh after {timeout} s (marks: {marks})")


def median_of(runs: Sequence[dict[str, Any]], key: str) -> float:
    return statistics.median(float(run[key]) for run in runs)


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 10 else f"{value:,.1f}"
    return str(value)


def write_json(name: str, payload: dict[str, Any]) -> Path:
    """``out/NAME.json``; NaN (an edit never shown) is written as null."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.json"
    text = json.dumps(_finite(payload), indent=2, sort_keys=True, default=str, allow_nan=False)
    path.write_text(text + "\n")
    return path


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
