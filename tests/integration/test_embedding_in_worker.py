"""GAZETTEER_EMBED_IN=worker on a real broker: the worker embeds, the query service reads.

Both parts run in the test's process and share one in-memory vector store object, as
they would share a Qdrant collection; the query service gets it read-only, so any write
from its side fails the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from deploy.query_part import run_query
from deploy.worker_part import run_worker
from query.dense import DenseReader
from query.read_model import ReadModel
from stores.vectors import InMemoryVectorStore, Vector, VectorHit
from tests.gitrepo import GitRepo
from tests.integration.stack import Part, Stack, eventually, open_stack, stack_settings
from tests.integration.test_streaming import APP_FILES, fresh_repo

pytestmark = pytest.mark.integration

TEAM = (
    "class User:\n    def name(self):\n        return 'y'\n\n"
    "class Team:\n    def roster(self):\n        return []\n"
)


class ReadOnlyStore:
    """The query service's view of the shared store: a write is a failure."""

    def __init__(self, store: InMemoryVectorStore) -> None:
        self._store = store

    def upsert(self, repo: str, points: Sequence[tuple[str, Vector, Mapping[str, Any]]]) -> None:
        raise AssertionError(f"the query service wrote vectors of {repo}")

    def delete_by_path(self, repo: str, path: str) -> None:
        raise AssertionError(f"the query service deleted vectors of {repo}:{path}")

    def search(
        self, repo: str, vector: Vector, limit: int, path_prefix: str | None = None
    ) -> list[VectorHit]:
        return self._store.search(repo, vector, limit, path_prefix)

    def count(self, repo: str) -> int:
        return self._store.count(repo)


def stored(store: InMemoryVectorStore, repo: str) -> dict[str, str]:
    """chunk id -> the content hash its vector was embedded from."""
    hits = store.search(repo, [1.0] * 256, limit=10_000)
    return {hit.point_id: hit.payload["content_hash"] for hit in hits}


def live(model: ReadModel, repo: str) -> dict[str, str]:
    """chunk id -> content hash of every chunk the read model holds."""
    return {c.id: c.content_hash for c in model.repos[repo].retrieval.chunks.values()}


def embedded_by_workers() -> float:
    return REGISTRY.get_sample_value("gazetteer_worker_embedded_chunks_total") or 0.0


async def start(stack: Stack, shared: InMemoryVectorStore) -> ReadModel:
    worker_stop, query_stop = asyncio.Event(), asyncio.Event()
    worker = run_worker(stack.settings, stack.cluster, worker_stop, vectors=shared)
    stack.parts["worker"] = Part(worker_stop, asyncio.ensure_future(worker))
    stack.model = ReadModel()
    listening: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    query = run_query(
        stack.settings,
        stack.cluster,
        query_stop,
        model=stack.model,
        on_listening=listening.set_result,
        vectors=ReadOnlyStore(shared),
    )
    stack.parts["query"] = Part(query_stop, asyncio.ensure_future(query))
    stack.url = await asyncio.wait_for(listening, 30)
    return stack.model


async def test_the_worker_embeds_the_repository_and_the_query_service_only_reads(
    broker, tmp_path: Path
) -> None:
    settings = stack_settings(broker.bootstrap, tmp_path / "data", embed_in="worker")
    stack, shared = await open_stack(settings), InMemoryVectorStore()
    try:
        model = await start(stack, shared)
        assert isinstance(model.dense, DenseReader)
        before = embedded_by_workers()
        repo = GitRepo.create(tmp_path / "app", APP_FILES)
        await stack.start_sources([repo.root])
        rid = (await fresh_repo(stack))["repo"]

        async def all_embedded() -> bool:
            return bool(live(model, rid)) and stored(shared, rid) == live(model, rid)

        await eventually(all_embedded, 60, "the worker to embed every chunk")
        page = await stack.get(f"/repositories/{rid}/search", q="user name")
        assert page["retrievers"] == ["bm25", "mentions", "dense"]
        assert "dense" in page["items"][0]["signals"]
        assert embedded_by_workers() - before >= len(live(model, rid))
        assert (model.dense.embedded, model.dense.queued()) == (0, 0)
        metrics = await stack.metrics()
        assert "gazetteer_embedding_queue_chunks 0.0" in metrics
        assert "gazetteer_embedded_chunks_total 0.0" in metrics

        old = stored(shared, rid)
        repo.write("app/models.py", TEAM)

        async def models_replaced() -> bool:
            ids = {c for c in live(model, rid) if c.startswith("app/models.py#")}
            return "app/models.py#Team.roster" in ids and stored(shared, rid) == live(model, rid)

        await eventually(models_replaced, 60, "the edited file's vectors to be replaced")
        new = stored(shared, rid)
        assert {c: (old.get(c), h) for c, h in new.items() if old.get(c) != h} == {
            "app/models.py#User.name": (
                old["app/models.py#User.name"],
                new["app/models.py#User.name"],
            ),
            "app/models.py#Team": (None, new["app/models.py#Team"]),
            "app/models.py#Team.roster": (None, new["app/models.py#Team.roster"]),
        }
        page = await stack.get(f"/repositories/{rid}/search", q="team roster")
        assert page["items"][0]["path"] == "app/models.py"
        assert page["items"][0]["signals"].get("dense", 0) > 0
        assert (model.dense.embedded, model.dense.queued()) == (0, 0)
    finally:
        await stack.close()
