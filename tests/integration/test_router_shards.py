"""The router over two shards of real replicas (issue 18), on both brokers.

Four repositories indexed by one worker; a replica of every partition holds them all,
and two shard replicas each hold the repositories of their partitions. Through a router
in front of the two shards: a repository's answers are its shard's and the whole
replica's; an org-wide search is the whole replica's, hit for hit and score for score,
and so are the org-wide context pack (drawn from repositories of both shards within its
budget), session start and graph search; the MCP tools answer as the routes; a shard
stopped leaves the answers partial, saying which shard is missing, and they are whole
again once its replica is back on its port.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from deploy.broker_process import free_port
from producers.repo_id import repository_id
from query.materializer import partition_of
from query.router import Router, ShardReplicas, create_router_app
from query.shard import Shard
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually, running_stack
from tests.integration.test_reconcile import FILES, fresh_at
from tests.integration.test_state_topic import timeless

pytestmark = pytest.mark.integration

PARTITIONS = 4  # tests.integration.stack.stack_settings
QUESTIONS = ("parse the settings", "own name", "helper")
ORG_ANSWERS = {  # the org-wide answers but search, and their parameters
    "/context": {"budget": 2000, "seeds": 6},
    "/session-start": {"hits": 40},
    "/graph-search": {"limit": 5},
}
STAMPS = ("shards", "missing", "partial", "partitions")


@asynccontextmanager
async def routed(shards: list[ShardReplicas]) -> AsyncIterator[httpx.AsyncClient]:
    """A router in process over ``shards`` (real replicas over HTTP), its MCP running."""
    async with httpx.AsyncClient(timeout=10) as backend:
        app = create_router_app(Router(shards, PARTITIONS, backend))
        async with app.state.mcp.run():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://router") as client:
                yield client


async def get(client: httpx.AsyncClient, path: str, **params: Any) -> Any:
    answer = await client.get(path, params=params)
    assert answer.status_code == 200, (path, answer.text)
    return answer.json()


def hits(page: dict[str, Any]) -> list[tuple[str, str, float]]:
    return [(h["repo"], h["path"], h["score"]) for h in page["items"]]


async def test_the_router_answers_as_one_replica_and_says_when_a_shard_is_missing(
    broker, tmp_path: Path
) -> None:
    # Two repositories on each shard's partitions: names picked by where their ids
    # (producers/repo_id.py: from the path, without a remote) are keyed.
    parts = {"a": {0, 1}, "b": {2, 3}}
    names: dict[str, list[str]] = {"a": [], "b": []}
    for i in itertools.count():
        rid = repository_id(tmp_path / f"svc{i}", None)
        shard = "a" if partition_of(rid, PARTITIONS) in parts["a"] else "b"
        if len(names[shard]) < 2:
            names[shard].append(f"svc{i}")
        if all(len(n) == 2 for n in names.values()):
            break
    repos = [
        GitRepo.create(tmp_path / name, {**FILES, "pkg/own.py": f"NAME = '{name} own'\n"})
        for name in (*names["a"], *names["b"])
    ]
    async with running_stack(broker.bootstrap, tmp_path / "main") as whole:
        await whole.start_sources([r.root for r in repos])
        rids = [await fresh_at(whole, r.root, r.head()) for r in repos]
        owned = {n: {r for r in rids if partition_of(r, PARTITIONS) in p} for n, p in parts.items()}
        assert [len(owned["a"]), len(owned["b"])] == [2, 2]
        replicas = {
            name: Stack(
                whole.settings.model_copy(
                    update={
                        "data_dir": tmp_path / name,
                        "serve_partitions": ",".join(map(str, sorted(spec))),
                        "port": free_port(),
                    }
                ),
                whole.cluster,
            )
            for name, spec in parts.items()
        }
        try:
            urls = {name: await replica.start_query() for name, replica in replicas.items()}
            for name, replica in replicas.items():
                held_here = owned[name]
                await eventually(lambda r=replica, h=held_here: _holds(r, h), 60, f"shard {name}")
            shards = [
                ShardReplicas(Shard(partitions=frozenset(parts[n])), [urls[n]]) for n in parts
            ]
            async with routed(shards) as router:
                await _answers_as_the_whole_replica(router, whole, replicas, owned)
                async with Client(
                    streamable_http_client("http://router/mcp", http_client=router)
                ) as mcp:
                    found = await mcp.call_tool("search_all", {"q": QUESTIONS[0]})
                    packed = await mcp.call_tool("context_all", {"q": "own name", "seeds": 6})
                    listed = await mcp.call_tool("files", {"repo": rids[0], "limit": 100})
                assert found.structured_content is not None
                assert hits(found.structured_content) == hits(
                    await whole.get("/search", q=QUESTIONS[0])
                )
                # Freshness aside: a status may move between two requests (seen on
                # Kafka: 'updating' in the tool's answer, 'fresh' in the route's after).
                assert timeless(listed.structured_content) == timeless(
                    await get(router, f"/repositories/{rids[0]}/files", limit=100)
                )
                assert packed.structured_content is not None
                assert timeless(packed.structured_content) == timeless(
                    await get(router, "/context", q="own name", seeds=6)
                )

                await replicas["b"].stop("query")  # shard b: no replica left
                page = await get(router, "/repositories")
                assert (page["partial"], page["missing"]) == (True, [shards[1].shard.describe()])
                assert {i["repo"] for i in page["items"]} == owned["a"]
                searched = await get(router, "/search", q=QUESTIONS[0])
                assert searched["partial"] is True
                assert {h["repo"] for h in searched["items"]} <= owned["a"]
                packed = await get(router, "/context", q="own name", seeds=6)
                assert (packed["partial"], packed["missing"]) == (
                    True,
                    [shards[1].shard.describe()],
                )
                assert packed["sections"] and {s["repo"] for s in packed["sections"]} <= owned["a"]
                assert packed["repositories"] == 2
                for rid in owned["b"]:
                    gone = await router.get(f"/repositories/{rid}/files")
                    assert gone.status_code == 503 and "no replica of shard" in gone.text

                await replicas["b"].start_query()  # back, on its port
                await eventually(lambda: _holds(replicas["b"], owned["b"]), 60, "shard b back")
                await _answers_as_the_whole_replica(router, whole, replicas, owned)
        finally:
            for replica in replicas.values():
                await replica.close()


async def _holds(replica: Stack, rids: set[str]) -> bool:
    health = await replica.get("/health")
    listed = {i["repo"] for i in (await replica.get("/repositories"))["items"]}
    return bool(health["ready"]) and listed == rids


async def _answers_as_the_whole_replica(
    router: httpx.AsyncClient, whole: Stack, replicas: dict[str, Stack], owned: dict[str, set[str]]
) -> None:
    page = await get(router, "/repositories")
    assert page["partial"] is False and page["missing"] == []
    assert timeless(page["items"]) == timeless((await whole.get("/repositories"))["items"])
    for name, rids in owned.items():
        for rid in rids:
            path = f"/repositories/{rid}/files"
            through = timeless(await get(router, path, limit=100))
            assert through == timeless(await replicas[name].get(path, limit=100))
            assert through == timeless(await whole.get(path, limit=100))
    for question in QUESTIONS:
        searched = await get(router, "/search", q=question)
        assert searched["partial"] is False
        assert hits(searched) == hits(await whole.get("/search", q=question))
        for path, params in ORG_ANSWERS.items():
            through = await get(router, path, q=question, **params)
            assert (through["partial"], through["missing"]) == (False, []), path
            alone = await whole.get(path, q=question, **params)
            assert _unstamped(through) == _unstamped(alone), (path, question)
    packed = await get(router, "/context", q="own name", budget=2000, seeds=6)
    drawn = {s["repo"] for s in packed["sections"]}
    assert drawn & owned["a"] and drawn & owned["b"], "the pack should span both shards"
    assert packed["tokens"] <= 2000 and all(s["freshness"] for s in packed["sections"])


def _unstamped(answer: dict[str, Any]) -> object:
    """An org-wide answer without what says who answered it (the router's shards, a
    replica's partitions) and without freshness (its ages are each replica's clock)."""
    return timeless({k: v for k, v in answer.items() if k not in STAMPS})
