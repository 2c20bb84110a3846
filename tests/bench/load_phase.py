"""One load phase against a running ``gazetteer up``, from outside: what the checker judges.

Used by the benchmark (`tests.bench.load_freshness`) and the e2e test
(`tests/e2e/test_freshness_under_load.py`). The service is a black box: HTTP on
loopback, the files on disk, and the checker's own consumer of two topics
(`TopicTap`):

- ``sources`` (SourceStatus: the producer's ``last_seq``): when the service could know
  a save is pending (rule 1 of `tests.freshness_checker`);
- ``file-events`` (FileChanged: path, content hash, producer, seq): which event carries
  which save. The sources topic alone says *that* a batch went out, not which file or
  content it held; the watcher's ``watch_flushed`` log line says neither the content nor
  the sequence number, and a log is no contract. Both topics are the producers' own
  output, read without asking the service anything.

A phase: ``clients`` closed-loop HTTP clients (a seeded mix of search, context and file
details) run while an editor saves ``len(targets)`` files one at a time, each with a
unique probe (`tests.freshness_checker.probe_block`), and polls that file's details
until it shows the new hash (or ``edit_timeout_s``); then the clients stop. Every answer,
the editor's polls included, goes into the timeline.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from aiokafka import AIOKafkaConsumer

from tests.freshness_checker import (
    Answer,
    Emitted,
    Save,
    StatusReceived,
    Verdict,
    judge,
    probe_block,
    probe_query,
    served_by_context,
    served_by_file,
    served_by_search,
)

EDITOR = -1  # the client id of the editor's own polls
# The request mix of a load client: search 50%, context 20%, file details 30%.
MIX = ("search",) * 5 + ("context",) * 2 + ("file",) * 3


class TopicTap:
    """The checker's own consumer of the file-events and sources topics, from their ends
    as of `start` on; a thread with its own event loop, so that the load clients' loop
    never delays a receipt time (a delayed receipt would hide violations)."""

    def __init__(self, bootstrap: str, namespace: str) -> None:
        self.bootstrap = bootstrap
        self.file_events = f"{namespace}.file-events.v1"
        self.sources = f"{namespace}.sources.v1"
        self.emitted: list[Emitted] = []
        self.statuses: list[StatusReceived] = []
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="topic-tap", daemon=True)

    def start(self, timeout: float = 60.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout) or self._error is not None:
            self._stop.set()
            raise RuntimeError(f"the topic tap did not start: {self._error!r}")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        if self._error is not None:
            raise RuntimeError("the topic tap failed") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._consume())
        except BaseException as error:  # reported by start() / stop(), never swallowed
            self._error = error
            self._ready.set()

    async def _consume(self) -> None:
        # Subscribed without a group: the consumer takes every partition of both topics
        # as its metadata names them (no group, so nothing of the service is disturbed).
        consumer = AIOKafkaConsumer(
            self.file_events,
            self.sources,
            bootstrap_servers=self.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="latest",
        )
        await consumer.start()
        try:
            deadline = time.monotonic() + 30
            while {tp.topic for tp in consumer.assignment()} != {self.file_events, self.sources}:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no partitions for {self.file_events} / {self.sources}")
                await asyncio.sleep(0.05)
            parts = sorted(consumer.assignment())
            await consumer.seek_to_end(*parts)
            for tp in parts:  # resolve the positions now: no save is written before
                await consumer.position(tp)
            self._ready.set()
            while not self._stop.is_set():
                batches = await consumer.getmany(timeout_ms=50)
                now = time.time()
                for tp, records in batches.items():
                    for record in records:
                        if record.value is not None:
                            self._keep(tp.topic, json.loads(record.value), now)
        finally:
            await consumer.stop()

    def _keep(self, topic: str, data: dict[str, Any], now: float) -> None:
        if topic == self.file_events and data.get("kind") == "file_changed":
            self.emitted.append(
                Emitted(
                    data["path"],
                    data.get("content_hash"),
                    data["producer"],
                    data["seq"],
                    data["emitted_at"],
                    now,
                )
            )
        elif topic == self.sources and data.get("kind") == "source_status":
            self.statuses.append(
                StatusReceived(data["producer"], data["last_seq"], data["sent_at"], now)
            )


@dataclass
class Timeline:
    """What a phase recorded (the answers as they came; saves by number)."""

    baselines: dict[str, str]
    contents: dict[str, bytes]
    saves: dict[int, Save] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)
    latest: Save | None = None


@dataclass(frozen=True, slots=True)
class PhaseOptions:
    clients: int
    first_number: int = 1
    poll_s: float = 0.02
    pause_s: float = 0.2
    edit_timeout_s: float = 30.0
    request_timeout_s: float = 30.0
    max_requests: int = 100_000
    max_phase_s: float = 900.0
    allowance_s: float = 0.5
    seed: int = 0


@dataclass(frozen=True, slots=True)
class PhaseResult:
    options: PhaseOptions
    duration_s: float
    truncated: bool
    verdict: Verdict
    answers: tuple[Answer, ...]


async def ask(
    http: httpx.AsyncClient, timeline: Timeline, repo: str, kind: str, arg: str, client: int
) -> Answer:
    """One request, recorded with the versions its answer shows."""
    route = {"search": "search", "context": "context", "file": f"files/{arg}"}[kind]
    params = {"q": arg} if kind in ("search", "context") else None
    sent = time.time()
    try:
        response = await http.get(f"/repositories/{repo}/{route}", params=params)
    except httpx.HTTPError:
        answer = Answer(kind, client, sent, time.time(), None)
    else:
        received = time.time()
        if response.status_code != 200:
            answer = Answer(kind, client, sent, received, None)
        else:
            body = response.json()
            served = (
                served_by_file(body)
                if kind == "file"
                else served_by_search(body, timeline.saves)
                if kind == "search"
                else served_by_context(body, timeline.saves)
            )
            status = body["freshness"]["status"]
            answer = Answer(kind, client, sent, received, status, served)
    timeline.answers.append(answer)
    return answer


async def load_client(
    http: httpx.AsyncClient,
    timeline: Timeline,
    repo: str,
    number: int,
    questions: Sequence[str],
    paths: Sequence[str],
    stop: asyncio.Event,
    options: PhaseOptions,
) -> None:
    """Closed loop: the next request once the last one is answered."""
    rng = random.Random(options.seed * 1000 + number)
    for _ in range(options.max_requests):
        if stop.is_set():
            return
        kind, latest = rng.choice(MIX), timeline.latest
        probe = latest is not None and rng.random() < 0.5
        if kind == "file":
            arg = latest.path if probe and latest else rng.choice(paths)
        else:
            arg = probe_query(latest.number) if probe and latest else rng.choice(questions)
        await ask(http, timeline, repo, kind, arg, number)


async def edit(
    http: httpx.AsyncClient,
    timeline: Timeline,
    root: Path,
    repo: str,
    targets: Sequence[str],
    options: PhaseOptions,
) -> None:
    """Save each target once (baseline + its probe), polling until it shows."""
    for i, path in enumerate(targets):
        number = options.first_number + i
        data = timeline.contents[path] + probe_block(number).encode()
        (root / path).write_bytes(data)
        save = Save(number, path, hashlib.sha256(data).hexdigest(), time.time())
        timeline.saves[number], timeline.latest = save, save
        while time.time() - save.written_at < options.edit_timeout_s:
            answer = await ask(http, timeline, repo, "file", path, EDITOR)
            if (path, save.content_hash) in answer.served:
                break
            await asyncio.sleep(options.poll_s)
        await asyncio.sleep(options.pause_s)


async def run_phase(
    url: str,
    repo: str,
    root: Path,
    tap: TopicTap,
    targets: Sequence[str],
    questions: Sequence[str],
    paths: Sequence[str],
    options: PhaseOptions,
) -> PhaseResult:
    """The editor and ``options.clients`` load clients until the edits are done."""
    contents = {p: (root / p).read_bytes() for p in dict.fromkeys(targets)}
    timeline = Timeline({p: hashlib.sha256(b).hexdigest() for p, b in contents.items()}, contents)
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=options.clients + 2)
    timeout = httpx.Timeout(options.request_timeout_s)
    started = time.time()
    async with httpx.AsyncClient(base_url=url, timeout=timeout, limits=limits) as http:
        clients = [
            asyncio.ensure_future(
                load_client(http, timeline, repo, n, questions, paths, stop, options)
            )
            for n in range(options.clients)
        ]
        try:
            await asyncio.wait_for(
                edit(http, timeline, root, repo, targets, options), options.max_phase_s
            )
        except TimeoutError:
            truncated = True  # judged as far as it went; the missing saves are reported
        else:
            truncated = False
        finally:
            stop.set()
            await asyncio.gather(*clients)
    duration = time.time() - started
    await asyncio.sleep(0.5)  # the last statuses reach the tap
    verdict = judge(
        timeline.baselines,
        sorted(timeline.saves.values(), key=lambda s: s.number),
        list(tap.emitted),
        list(tap.statuses),
        timeline.answers,
        options.allowance_s,
    )
    return PhaseResult(options, duration, truncated, verdict, tuple(timeline.answers))
