"""A replica still loading its partitions answers org-wide listings and searches from
what it holds, marked partial, never complete (issue 18); through a router, a shard
whose replica is warming makes the merged answer partial though no shard is missing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from query.api import create_api
from query.materializer import partition_of
from query.router import Router, ShardReplicas, create_router_app
from query.shard import Shard, spans
from tests.unit.test_org_search import REPOS
from tests.unit.test_router import FIRST, PARTITIONS, REST, model_of

ORG_ROUTES: dict[str, dict[str, Any]] = {
    "/repositories": {},
    "/search": {"q": "rate limit request"},
    "/context": {"q": "rate limit request"},
    "/session-start": {"q": "rate limit request"},
    "/graph-search": {"q": "limit"},
}


@pytest.mark.parametrize("path", sorted(ORG_ROUTES))
@pytest.mark.parametrize("ready", [True, False])
def test_a_replica_still_loading_marks_its_org_answers_partial(path: str, ready: bool) -> None:
    client = TestClient(create_api(model_of(list(REPOS)), ready=lambda: ready))
    answer = client.get(path, params=ORG_ROUTES[path])
    assert answer.status_code == 200, answer.text
    page = answer.json()
    assert page["partial"] is (not ready)
    if path == "/repositories":
        assert page["total"] == len(REPOS)  # what it holds, listed all the same
    else:
        assert page["repositories"] == len(REPOS)


def test_a_warming_replica_still_refuses_a_repository_it_does_not_hold_with_503() -> None:
    client = TestClient(create_api(model_of(list(REPOS)), ready=lambda: False))
    assert client.get("/repositories/nope").status_code == 503


@pytest.mark.parametrize("path", sorted(ORG_ROUTES))
async def test_through_the_router_a_warming_shard_makes_the_answer_partial(path: str) -> None:
    on_first = [r for r in REPOS if partition_of(r, PARTITIONS) == FIRST]
    rest = [r for r in REPOS if r not in on_first]
    ready = {"http://a": True, "http://b": False}  # shard b's replica is still loading
    models = {"http://a": model_of(on_first), "http://b": model_of(rest)}
    mounts: dict[str, httpx.AsyncBaseTransport] = {
        url: httpx.ASGITransport(app=create_api(models[url], ready=lambda u=url: ready[u]))
        for url in ready
    }
    shards = [
        ShardReplicas(Shard(partitions=frozenset({FIRST})), ["http://a"]),
        ShardReplicas(Shard(partitions=REST), ["http://b"]),
    ]
    async with httpx.AsyncClient(mounts=mounts) as backend:
        app = create_router_app(Router(shards, PARTITIONS, backend))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://router") as routed:
            answer = await routed.get(path, params=ORG_ROUTES[path])
            for url in ready:
                ready[url] = True  # both replicas ready: the same answer, complete
            again = await routed.get(path, params=ORG_ROUTES[path])
    page, complete = answer.json(), again.json()
    assert answer.status_code == 200, answer.text
    assert (page["partial"], page["missing"], page["shards"]) == (
        True,
        [],
        [str(FIRST), spans(REST)],
    )
    assert (complete["partial"], complete["missing"]) == (False, [])
