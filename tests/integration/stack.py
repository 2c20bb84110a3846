"""The pipeline's parts run in the test's event loop, talking only through a real broker."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from deploy.query_part import run_query
from deploy.runtime import Cluster, connect
from deploy.settings import Settings
from deploy.sources_part import run_sources
from deploy.worker_part import run_worker
from query.read_model import ReadModel


def stack_settings(bootstrap: str, data_dir: Path, **overrides: object) -> Settings:
    fields: dict[str, object] = {
        "broker": f"kafka://{bootstrap}",
        "namespace": f"t{uuid.uuid4().hex[:10]}",
        "app_id": f"worker-{uuid.uuid4().hex[:8]}",
        "data_dir": data_dir,
        "port": 0,
        "partitions": 4,
        "heartbeat_s": 1.0,
        "debounce_ms": 50,
        "poll_s": 0.1,
        # Dense retrieval in the background: the hashing embedder keeps the 2 cores for
        # the pipeline under test (the default model has its own unit tests).
        "embedder": "hash:256",
    }
    fields.update(overrides)
    return Settings(**fields)  # type: ignore[arg-type]


@dataclass
class Part:
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def close(self, timeout: float = 30.0) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, timeout)


@dataclass
class Stack:
    settings: Settings
    cluster: Cluster
    parts: dict[str, Part] = field(default_factory=dict)
    model: ReadModel | None = None
    url: str | None = None
    worker_apps: list[Any] = field(default_factory=list)  # each generation's faust app

    async def start_worker(self) -> None:
        self._start(
            "worker",
            lambda stop: run_worker(
                self.settings, self.cluster, stop, on_started=self.worker_apps.append
            ),
        )

    async def start_query(self) -> str:
        self.model = ReadModel()
        listening: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._start(
            "query",
            lambda stop: run_query(
                self.settings,
                self.cluster,
                stop,
                model=self.model,
                on_listening=listening.set_result,
            ),
        )
        self.url = await asyncio.wait_for(listening, 30)
        return self.url

    async def start_sources(self, roots: Sequence[Path]) -> None:
        since = (
            (
                lambda repo: (
                    self.model.repos[repo].state.indexed_commit
                    if repo in self.model.repos
                    else None
                )
            )
            if self.model is not None
            else (lambda repo: None)
        )
        model = self.model
        known_epoch = model.known_epoch if model is not None else (lambda repo: 0)
        self._start(
            "sources",
            lambda stop: run_sources(
                self.settings, self.cluster, roots, stop, since=since, known_epoch=known_epoch
            ),
        )

    def _start(self, name: str, run: Callable[[asyncio.Event], Awaitable[None]]) -> None:
        stop = asyncio.Event()
        self.parts[name] = Part(stop, asyncio.ensure_future(run(stop)))

    async def stop(self, name: str) -> None:
        part = self.parts.pop(name)
        await part.close()

    async def close(self) -> None:
        for name in ("sources", "worker", "query"):
            if name in self.parts:
                await self.stop(name)

    async def get(self, path: str, **params: object) -> dict:
        assert self.url is not None, "start the query service first"
        async with httpx.AsyncClient(base_url=self.url, timeout=10) as client:
            # A query string in ``path`` stands when no params are given.
            response = await (client.get(path, params=params) if params else client.get(path))
            response.raise_for_status()
            return response.json()

    async def metrics(self) -> str:
        """The query service's /metrics (the worker's too: one process, one registry)."""
        assert self.url is not None, "start the query service first"
        async with httpx.AsyncClient(base_url=self.url, timeout=10) as client:
            response = await client.get("/metrics")
            response.raise_for_status()
            return response.text


async def open_stack(settings: Settings) -> Stack:
    return Stack(settings, await connect(settings, settings.bootstrap or ""))


async def eventually(
    check: Callable[[], Awaitable[bool]], timeout: float = 60.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if await check():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def running_stack(
    bootstrap: str, data_dir: Path, **overrides: object
) -> AsyncIterator[Stack]:
    """A worker and a query service on ``bootstrap`` (sources are each test's to start)."""
    stack = await open_stack(stack_settings(bootstrap, data_dir, **overrides))
    try:
        await stack.start_worker()
        await stack.start_query()
        yield stack
    finally:
        await stack.close()
