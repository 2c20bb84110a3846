"""The limits in the query service as `run_query` builds it (`create_api` with MCP
mounted): a query or a tool call still waiting at the time limit is cancelled and
answered 503, and the middlewares are in their order (the audit line outermost)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
from structlog.testing import capture_logs

from query.api import create_api
from query.host_check import host_rule
from query.mcp_http import mount_mcp
from query.request_limits import RequestLimits
from query.token_bucket import Rate
from tests.unit.test_retrieval_api import indexed_model

MCP_HEADERS = {"accept": "application/json, text/event-stream"}


class SlowLook:
    """The look at the broker before an answer (the materializer's), taking too long."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []

    async def __call__(self, repo: str) -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled.append(repo)
            raise


@contextlib.asynccontextmanager
async def service() -> AsyncIterator[tuple[httpx.AsyncClient, SlowLook]]:
    """In the test's own task: the MCP endpoint's task group is left where entered."""
    look = SlowLook()
    limits = RequestLimits(timeout_s=0.2, rate=Rate(per_s=0.01, burst=4))
    api = create_api(
        indexed_model(),
        ready=lambda: True,
        hosts=host_rule("127.0.0.1"),
        before_answer=look,
        limits=limits,
    )
    endpoint = mount_mcp(api)
    async with endpoint.run():
        transport = httpx.ASGITransport(app=api, client=("10.0.0.1", 1))
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as http:
            yield http, look


async def test_a_query_and_a_tool_call_past_the_limit_are_cancelled() -> None:
    async with service() as (http, look):
        await past_the_limit(http, look)


async def past_the_limit(http: httpx.AsyncClient, look: SlowLook) -> None:
    detail = {"detail": "no answer within 0.2 s: the request was cancelled"}
    query = await http.get("/repositories/app-1/search", params={"q": "session"})
    assert (query.status_code, query.json()) == (503, detail)
    call = {"name": "search", "arguments": {"repo": "app-1", "q": "session"}}
    tool = await http.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
        headers=MCP_HEADERS,
    )
    assert (tool.status_code, tool.json()) == (503, detail)
    await asyncio.sleep(0.05)  # the tool's task ends as its transport is terminated
    assert look.cancelled == ["app-1", "app-1"]
    health = await http.get("/health")  # not about a repository: no look, no wait
    assert health.status_code == 200


async def test_the_order_of_the_middlewares() -> None:
    async with service() as (http, _):
        with capture_logs() as logs:
            rebinding = await http.get("/health", headers={"host": "evil.example"})
            large = await http.post("/repositories/app-1/impact", content=b" " * (2 << 20))
            answered = [(await http.get("/health")).status_code for _ in range(5)]
    # The Host check and the size limit refuse before the rate limit: no token spent.
    assert (rebinding.status_code, large.status_code) == (421, 413)
    assert answered == [200, 200, 200, 200, 429]
    lines = [(e["route"], e["status"]) for e in logs if e["event"] == "request_handled"]
    assert lines == [
        ("/health", 421),
        ("/repositories/{repo}/impact", 413),
        *[("/health", 200)] * 4,
        ("/health", 429),
    ]
