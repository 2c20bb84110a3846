"""/repositories filtered by language and sorted, on one replica and through the router."""

from __future__ import annotations

import httpx
from fastapi.testclient import TestClient

from query.api import create_api
from query.service.repositories import repository_key
from tests.unit.test_router import _clients, model_of

ALL = ["billing", "docs", "gateway"]


def listed(client: TestClient, **params: object) -> list[str]:
    answer = client.get("/repositories", params=params)
    assert answer.status_code == 200, answer.text
    return [item["repo"] for item in answer.json()["items"]]


def test_repositories_by_language_and_in_each_order() -> None:
    client = TestClient(create_api(model_of(ALL), ready=lambda: True))
    items = {i["repo"]: i for i in client.get("/repositories").json()["items"]}
    assert items["gateway"]["languages"] == {"python": 4}
    assert items["docs"]["languages"] == {}  # a document has no language of code
    assert listed(client) == ALL
    assert listed(client, language="python") == ["billing", "gateway"]
    assert listed(client, language="PYTHON") == ["billing", "gateway"]
    assert listed(client, language="rust") == []
    assert listed(client, sort="files") == ["docs", "billing", "gateway"]
    assert listed(client, sort="-files") == ["gateway", "billing", "docs"]
    assert listed(client, sort="-repo") == ["gateway", "docs", "billing"]
    assert listed(client, sort="-files", limit=1, offset=1) == ["billing"]
    page = client.get("/repositories", params={"sort": "-files", "limit": 1}).json()
    assert page["total"] == 3
    assert client.get("/repositories", params={"sort": "size"}).status_code == 422


def test_a_missing_value_sorts_last_and_ties_go_by_id() -> None:
    key = repository_key("-indexed_at")
    items = [
        {"repo": "b", "freshness": {"indexed_at": 5.0}},
        {"repo": "a", "freshness": {"indexed_at": None}},
        {"repo": "c", "freshness": {"indexed_at": 5.0}},
        {"repo": "d", "freshness": {"indexed_at": 9.0}},
    ]
    assert [i["repo"] for i in sorted(items, key=key)] == ["d", "b", "c", "a"]
    names = [{"repo": "x", "name": "ab"}, {"repo": "y", "name": "abc"}, {"repo": "z", "name": None}]
    assert [i["repo"] for i in sorted(names, key=repository_key("-name"))] == ["y", "x", "z"]
    assert [i["repo"] for i in sorted(names, key=repository_key("name"))] == ["x", "y", "z"]


async def test_the_router_sorts_the_shards_pages_alike() -> None:
    async with await _clients() as (routed, whole):
        for params in (
            {"sort": "-files"},
            {"sort": "files", "limit": 2, "offset": 1},
            {"language": "python"},
        ):
            through = (await routed.get("/repositories", params=params)).json()
            alone = (await whole.get("/repositories", params=params)).json()
            assert [i["repo"] for i in through["items"]] == [i["repo"] for i in alone["items"]]
            assert through["total"] == alone["total"]
        bad = await routed.get("/repositories", params={"sort": "size"})
        assert bad.status_code == 422 and isinstance(bad, httpx.Response)
