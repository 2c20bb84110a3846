"""The gate in front of the query routes: a few at a time, the rest wait their turn."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from query.compute_gate import ComputeGate, repository_of


class Probe:
    """An ASGI app whose requests wait until released, recording who got in."""

    def __init__(self) -> None:
        self.entered: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope, receive, send) -> None:  # type: ignore[no-untyped-def]
        self.entered.append(scope["path"])
        if scope["path"] != "/health":
            await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


async def test_two_queries_compute_at_once_and_health_never_waits() -> None:
    probe = Probe()
    gate = ComputeGate(probe, slots=2)
    transport = httpx.ASGITransport(app=gate)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        paths = [f"/repositories/r{i}/search" for i in range(5)]
        queries = [asyncio.create_task(client.get(p)) for p in paths]
        for _ in range(50):
            await asyncio.sleep(0)
        assert probe.entered == paths[:2] and gate.inside == 2
        # /health and the dashboard are not gated: they answer while the slots are taken.
        assert (await client.get("/health")).status_code == 200
        assert probe.entered == [*paths[:2], "/health"]
        probe.release.set()
        assert [r.status_code for r in await asyncio.gather(*queries)] == [200] * 5
    # The others went in, in the order they came, never more than two at once.
    assert probe.entered == [*paths[:2], "/health", *paths[2:]]
    assert (gate.inside, gate.most_inside) == (0, 2)


def test_a_gate_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        ComputeGate(Probe(), slots=0)


async def test_before_looks_at_the_repository_an_answer_is_about() -> None:
    probe, looked = Probe(), []
    probe.release.set()

    async def before(repo: str) -> None:
        looked.append((repo, list(probe.entered)))

    transport = httpx.ASGITransport(app=ComputeGate(probe, before=before))
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        for path in ("/repositories/app-1/search", "/repositories", "/repositories/b-2"):
            assert (await client.get(path)).status_code == 200
    # Once per answer about one repository, before the app computes it.
    assert looked == [("app-1", []), ("b-2", ["/repositories/app-1/search", "/repositories"])]


def test_the_repository_of_a_route() -> None:
    assert repository_of("/repositories/app-1/files/src/a.py") == "app-1"
    assert repository_of("/repositories/app-1") == "app-1"
    assert repository_of("/repositories") is None
    assert repository_of("/repositories/") is None
    assert repository_of("/dead-letters") is None


async def test_an_in_process_caller_takes_the_same_slots_after_the_same_look() -> None:
    probe, looked = Probe(), []

    async def before(repo: str) -> None:
        looked.append(repo)

    gate = ComputeGate(probe, slots=1, before=before)
    transport = httpx.ASGITransport(app=gate)
    order: list[str] = []

    async def tool_call() -> None:
        async with gate.admit("app-1"):
            order.append(f"tool inside with {gate.inside}")

    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        query = asyncio.create_task(client.get("/repositories/b-2/search"))
        for _ in range(50):
            await asyncio.sleep(0)
        assert gate.inside == 1
        called = asyncio.create_task(tool_call())
        for _ in range(50):
            await asyncio.sleep(0)
        assert order == [] and looked == ["b-2", "app-1"]  # looked, then waits its turn
        probe.release.set()
        assert (await query).status_code == 200
        await called
    assert order == ["tool inside with 1"] and (gate.inside, gate.most_inside) == (0, 1)
