"""The router's ``/repositories`` (issue 18), and why its count of fresh repositories
jumped between polls at 500 repositories (docs/PERFORMANCE.md, "Org simulation").

Reproduced here with a few repositories and two shards: the merge is exact, and the
count moves by whole shards because (1) a replica that has not stood at the end of its
topics within ``CAUGHT_UP_WITHIN_S`` says ``updating`` of every repository it holds
(stores/freshness.py: it cannot know what it has not read), and (2) a shard slower
than the router's timeout is left out, the answer marked partial. Past 1,000
repositories a shard, the pages were wrong too (each shard asked for its first
1,000 only): the pages are now gathered from each shard in pages of 1,000.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from processors.indexer import RepoIndex
from query.api import create_api
from query.materializer import partition_of
from query.read_model import ReadModel
from query.router import Router, ShardReplicas, create_router_app
from query.shard import Shard
from stores.freshness import CAUGHT_UP_WITHIN_S
from tests.factories import Stamp, source_status

PARTITIONS = 2
NAMES = ("billing", "gateway", "ledger", "search")
ON = {p: [r for r in NAMES if partition_of(r, PARTITIONS) == p] for p in range(PARTITIONS)}


class Clock:
    def __init__(self) -> None:
        self.now = 1002.0

    def __call__(self) -> float:
        return self.now


def fresh_model(
    repos: list[str], clock: Clock, code: str = "def a():\n    return 1\n"
) -> ReadModel:
    """Each repository indexed at its producer's head (``a.py`` holding ``code``), the
    producer heartbeating."""
    model = ReadModel(clock=clock)
    for repo in repos:
        index, stamp = RepoIndex(repo), Stamp(repo=repo)
        events = [stamp.claim(), stamp.changed("a.py", code, "scan")]
        for event in [*events, stamp.scan_completed("c1")]:
            delta = index.handle(event, now=1000.0)
            assert delta is not None
            model.apply_delta(delta)
        source = model.repos[repo].state.source
        assert source is not None
        model.apply_status(
            source_status(source.seq, repo=repo, producer=stamp.producer, epoch=stamp.epoch)
        )
    model.caught_up()
    return model


class Slow(httpx.AsyncBaseTransport):
    """A replica that answers after ``delay`` seconds, or times out past ``timeout``."""

    def __init__(self, inner: httpx.AsyncBaseTransport, delay: float, timeout: float) -> None:
        self.inner, self.delay, self.timeout = inner, delay, timeout

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(min(self.delay, self.timeout))
        if self.delay > self.timeout:
            raise httpx.ReadTimeout("timed out", request=request)
        return await self.inner.handle_async_request(request)


def shards() -> list[ShardReplicas]:
    return [ShardReplicas(Shard(partitions=frozenset({p})), [f"http://s{p}"]) for p in ON]


def fresh_count(page: dict[str, Any]) -> int:
    return sum(1 for i in page["items"] if i["freshness"]["status"] == "fresh")


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def test_a_replica_behind_its_topics_takes_fresh_from_its_whole_shard(
    clock: Clock,
) -> None:
    assert all(ON.values()), ON
    models = {p: fresh_model(ON[p], clock) for p in ON}
    mounts: dict[str, httpx.AsyncBaseTransport] = {
        f"http://s{p}": httpx.ASGITransport(app=create_api(m, ready=lambda: True))
        for p, m in models.items()
    }
    async with httpx.AsyncClient(mounts=mounts) as backend:
        app = create_router_app(Router(shards(), PARTITIONS, backend))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://r") as routed:
            both = (await routed.get("/repositories")).json()
            # Shard 0's replica is busy (its loop full of deltas of other repositories):
            # past CAUGHT_UP_WITHIN_S it says `updating` of all it holds, done or not.
            clock.now += CAUGHT_UP_WITHIN_S + 0.1
            models[1].caught_up()
            one = (await routed.get("/repositories")).json()
            clock.now += CAUGHT_UP_WITHIN_S + 0.1
            neither = (await routed.get("/repositories")).json()
    assert (fresh_count(both), both["total"], both["partial"]) == (len(NAMES), len(NAMES), False)
    assert (fresh_count(one), one["total"], one["partial"]) == (len(ON[1]), len(NAMES), False)
    behind = {i["repo"]: i["freshness"]["reason"] for i in one["items"]}
    assert all("last caught up with the topics 600 ms ago" in behind[r] for r in ON[0])
    assert (fresh_count(neither), neither["total"], neither["partial"]) == (0, len(NAMES), False)


async def test_a_shard_slower_than_the_routers_timeout_is_left_out_marked_partial(
    clock: Clock,
) -> None:
    models = {p: fresh_model(ON[p], clock) for p in ON}

    def mounts(delay: float) -> dict[str, httpx.AsyncBaseTransport]:
        apps = {
            p: httpx.ASGITransport(app=create_api(m, ready=lambda: True)) for p, m in models.items()
        }
        return {"http://s0": apps[0], "http://s1": Slow(apps[1], delay, timeout=0.2)}

    pages = []
    for delay in (0.05, 0.5):
        async with httpx.AsyncClient(mounts=mounts(delay)) as backend:
            app = create_router_app(Router(shards(), PARTITIONS, backend))
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://r") as routed:
                pages.append((await routed.get("/repositories")).json())
    in_time, late = pages
    assert (in_time["total"], fresh_count(in_time), in_time["partial"]) == (
        len(NAMES),
        len(NAMES),
        False,
    )
    assert (late["total"], fresh_count(late), late["partial"], late["missing"]) == (
        len(ON[0]),
        len(ON[0]),
        True,
        ["1"],
    )


def listing(repos: list[str]) -> httpx.MockTransport:
    """A replica's ``/repositories`` over ``repos`` (by id), at most 1,000 a page as a
    replica's route allows (query/api.py MAX_PAGE)."""

    def answer(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params.get("offset", 0))
        limit = int(request.url.params.get("limit", 100))
        if limit > 1000:
            return httpx.Response(422, json={"detail": "limit: at most 1000"})
        items = [{"repo": r, "freshness": {"status": "fresh"}} for r in repos]
        page = items[offset : offset + limit]
        return httpx.Response(
            200, json={"total": len(items), "offset": offset, "limit": limit, "items": page}
        )

    return httpx.MockTransport(answer)


async def test_the_routers_pages_past_a_thousand_repositories_a_shard_are_the_merge() -> None:
    held = {0: [f"a{i:04d}" for i in range(1500)], 1: [f"b{i:04d}" for i in range(1200)]}
    mounts: dict[str, httpx.AsyncBaseTransport] = {
        f"http://s{p}": listing(repos) for p, repos in held.items()
    }
    every = sorted(held[0] + held[1])
    async with httpx.AsyncClient(mounts=mounts) as backend:
        app = create_router_app(Router(shards(), PARTITIONS, backend))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://r") as routed:
            seen: list[str] = []
            while True:  # as tests/bench/org_simulation.py pages: 1,000 at a time
                asked = {"offset": len(seen), "limit": 1000}
                page = (await routed.get("/repositories", params=asked)).json()
                assert page["total"] == len(every) and page["partial"] is False
                seen += [i["repo"] for i in page["items"]]
                if not page["items"] or len(seen) >= page["total"]:
                    break
            middle = await routed.get("/repositories", params={"offset": 1400, "limit": 5})
            bad = await routed.get("/repositories", params={"offset": "x"})
    assert seen == every
    assert [i["repo"] for i in middle.json()["items"]] == every[1400:1405]
    assert bad.status_code == 422


class Ticking(Clock):
    """A clock that moves on by ``step`` each time it is read: a loop slow enough that
    listing one repository takes ``step`` seconds."""

    def __init__(self, step: float) -> None:
        super().__init__()
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_one_answer_judges_every_repository_at_the_instant_it_began() -> None:
    """At 1,000 repositories the org simulation's listings said ``updating`` of the
    last few hundred of a replica's repositories, "caught up 516 ms ago": the listing
    itself took that long, and each repository was judged later than the one before,
    though the read side reads nothing while it lists. Each answer about many
    repositories now judges them all at the instant it began."""
    from query.service import QueryService

    clock = Ticking(step=0.0)
    code = "def settle_invoice(ledger):\n    return ledger.balance\n"
    model = fresh_model(list(NAMES), clock, code)  # caught up at 1002.0
    clock.step = CAUGHT_UP_WITHIN_S * 0.4  # listing the 4 one by one: past the window
    service = QueryService(model)
    listed = service.repositories()
    assert [r.freshness.status for r in listed.items] == ["fresh"] * len(NAMES)
    hits = service.search_all("settle invoice", None, 10, 8000)
    assert [h.freshness.status for h in hits.items] == ["fresh"] * len(NAMES)
    # Outside one answer the window still holds: judged now, the read side is behind.
    assert service.freshness(NAMES[0]).status == "updating"
    assert "last caught up with the topics" in service.freshness(NAMES[0]).reason
