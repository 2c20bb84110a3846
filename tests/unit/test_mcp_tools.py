"""The MCP tools mounted in the service: the `QueryService` called in process, answering
what the HTTP GET answers, through the same compute gate."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from pydantic_core import PydanticUndefined

from query.api import create_api, gate_of
from query.mcp_answers import OverHttp
from query.mcp_http import InProcess, arguments_model
from query.mcp_operations import COMMON_ARGUMENTS, TOOLS, Operation, operations
from query.mcp_tools import Tools, call
from query.read_model import ReadModel
from query.service import QueryService
from tests.unit.test_query_service import indexed
from tests.unit.test_retrieval_api import indexed_model

# Every tool at least once, answers and refusals (404, 409, 400, 422 of both kinds).
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("health", {}),
    ("repositories", {}),
    ("repositories", {"name": "app*", "status": "stale", "limit": 1}),
    ("repositories", {"status": "bogus"}),
    ("repository", {"repo": "app-1"}),
    ("repository", {"repo": "nope"}),
    ("freshness", {"repo": "app-1"}),
    ("files", {"repo": "app-1", "glob": "*.py", "limit": "2"}),
    ("files", {"repo": "app-1", "skipped": False, "prefix": None}),
    ("file_detail", {"repo": "app-1", "path": "app/models.py", "limit": 1}),
    ("file_detail", {"repo": "app-1", "path": "nope.py"}),
    ("symbols", {"repo": "app-1", "path": "app/sessions.py", "kind": "method"}),
    ("symbols", {"repo": "app-1"}),
    ("search", {"repo": "app-1", "q": "resolve_redirects loops forever", "limit": 5}),
    ("search", {"repo": "app-1", "q": "x", "limit": 1000}),
    ("search", {"repo": "app-1", "q": ""}),
    ("search_all", {"q": "helper send a request", "limit": 5}),
    ("search_all", {"q": "helper", "repos": "lib*"}),
    ("search_all", {"q": ""}),
    ("context", {"repo": "app-1", "symbol": "Session.send", "budget": 200}),
    ("context", {"repo": "app-1", "q": "iter_content of a response"}),
    ("context", {"repo": "app-1"}),
    ("context_all", {"q": "iter_content of a response", "budget": 2000}),
    ("context_all", {"q": "send", "repos": "nothing-*"}),
    ("context_all", {"q": "send", "budget": 10}),
    ("graph_search", {"repo": "app-1", "q": "Session"}),
    ("graph_search_all", {"q": "Session", "limit": 2}),
    ("graph_search_all", {"q": "Session", "channels": "bogus"}),
    ("graph_search", {"repo": "app-1", "q": "Session", "channels": "paths,bogus"}),
    ("definition", {"repo": "app-1", "name": "Session.send"}),
    ("definition", {"repo": "app-1", "name": "nothing", "path": "app/models.py"}),
    ("references", {"repo": "app-1", "symbol": "Session"}),
    ("callers", {"repo": "app-1", "symbol": "send", "path": "app/sessions.py"}),
    ("callees", {"repo": "app-1", "symbol": "Session.send", "limit": 1}),
    ("shortest_path", {"repo": "app-1", "source": "tests/test_sessions.py", "target": "Response"}),
    ("shortest_path", {"repo": "app-1", "source": "a", "target": "b", "max_hops": 9}),
    ("neighbors", {"repo": "app-1", "node": "app/models.py", "order": "dfs", "depth": 1}),
    ("neighbors", {"repo": "app-1", "node": "app/models.py", "order": "sideways"}),
    ("ranking", {"repo": "app-1"}),
    ("session_start", {"repo": "app-1", "q": "send a request"}),
    ("session_start_all", {"q": "send a request", "top": 2}),
    ("neighborhoods", {"repo": "app-1", "kind": "cluster"}),
    ("neighborhood", {"repo": "app-1", "nid": "n-none"}),
    ("neighborhood_of", {"repo": "app-1", "path": "app/models.py"}),
    ("neighborhood_changes", {"repo": "app-1"}),
    ("hubs", {"repo": "app-1", "only_flagged": True}),
    ("hubs", {"repo": "lib-2"}),
    ("importance", {"repo": "app-1", "offset": 1}),
    ("folders", {"repo": "app-1", "level": 2}),
    ("files_by_level", {"repo": "app-1"}),
    ("overview", {"repo": "app-1", "limit": 3}),
    ("churn", {"repo": "app-1"}),
    ("churn_entry", {"repo": "app-1", "entry_id": "scan:c1"}),
    ("churn_entry", {"repo": "app-1", "entry_id": "working-tree"}),
    ("structural_diff", {"repo": "app-1", "base": "c1", "head": "c1"}),
    ("impact", {"repo": "app-1", "symbols": ["Session.send"]}),
    ("impact", {"repo": "app-1", "files": ["app/models.py"], "depth": 3, "budget_tokens": 500}),
    ("impact", {"repo": "app-1", "diff": "not a diff"}),
    ("impact", {"repo": "app-1", "files": ["../etc/passwd"]}),
    ("impact", {"repo": "app-1", "files": ["app/models.py"], "depth": 9}),
    ("impact", {"repo": "app-1"}),
    ("dead_letters", {"limit": 5}),
]


def model() -> ReadModel:
    """``app-1`` indexed and clustered, ``lib-2`` indexed only."""
    found = indexed_model()
    indexed("lib-2", {"lib/util.py": "def helper():\n    return 1\n"}, found, clustered=False)
    return found


@pytest.fixture
async def over_http() -> AsyncIterator[tuple[OverHttp, InProcess, dict[str, Operation]]]:
    api = create_api(model(), ready=lambda: True)
    ops = operations(api.openapi())
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        yield OverHttp(client), InProcess.of(api, ops), {op.tool: op for op in ops}


async def test_every_tool_answers_in_process_what_its_get_answers(
    over_http: tuple[OverHttp, InProcess, dict[str, Operation]],
) -> None:
    http, in_process, ops = over_http
    assert {tool for tool, _ in CALLS} == set(TOOLS)
    refused = []
    for tool, arguments in CALLS:
        expected = await call(http, ops[tool], arguments)
        answered = await call(in_process, ops[tool], arguments)
        assert answered.model_dump() == expected.model_dump(), (tool, arguments)
        if answered.is_error:
            refused.append(answered.content[0].text)  # type: ignore[union-attr]
    assert refused == [
        "status: Input should be 'fresh', 'stale' or 'updating' (HTTP 422)",
        "unknown repository 'nope'; see /repositories (HTTP 404)",
        "no file 'nope.py' in repository 'app-1' (HTTP 404)",
        "path: Field required (HTTP 422)",
        "limit: Input should be less than or equal to 100 (HTTP 422)",
        "q: String should have at least 1 character (HTTP 422)",
        "q: String should have at least 1 character (HTTP 422)",
        "give exactly one of q, symbol, path (HTTP 422)",
        "budget: Input should be greater than or equal to 50 (HTTP 422)",
        "unknown channels ['bogus']; known: purpose, classes, functions, imports, keywords, "
        "paths, glob (HTTP 422)",
        "unknown channels ['bogus']; known: purpose, classes, functions, imports, keywords, "
        "paths, glob (HTTP 422)",
        "no symbol 'nothing' in 'app/models.py' in repository 'app-1' (HTTP 404)",
        "max_hops: Input should be less than or equal to 8 (HTTP 422)",
        "order: Input should be 'bfs' or 'dfs' (HTTP 422)",
        "no neighborhood 'n-none' in 'app-1' (ids survive reclustering) (HTTP 404)",
        "no neighborhoods for 'lib-2' yet: the first recluster is due (HTTP 409)",
        "no churn entry 'working-tree' in 'app-1'; see /churn (HTTP 404)",
        "base 'c1' is not before head 'c1' (HTTP 400)",
        "malformed diff: no file in the diff (expected 'diff --git' or '--- a/… +++ b/…' "
        "lines) (HTTP 400)",
        "paths outside the repository: '../etc/passwd' (HTTP 400)",
        "depth: Input should be less than or equal to 4 (HTTP 422)",
        "give exactly one of diff, files, symbols (HTTP 422)",
    ]


def test_each_tool_is_the_service_method_of_its_name_with_the_route_parameters() -> None:
    api = create_api(ReadModel(), ready=lambda: True)
    for op in operations(api.openapi()):
        declared = arguments_model(op.tool, endpoint_of(api, op))
        method = inspect.signature(getattr(QueryService, op.tool)).parameters
        params = [name for name in method if name != "self"]
        assert params == list(declared.model_fields), op.tool
        for name in params:
            default = method[name].default
            route_default = declared.model_fields[name].default
            if route_default is PydanticUndefined:
                assert default is inspect.Parameter.empty, (op.tool, name)
            else:
                assert default == route_default, (op.tool, name)


def endpoint_of(api: FastAPI, op: Operation) -> Any:
    return next(
        r.endpoint
        for r in iter_route_contexts(api.routes)
        if r.path_format == op.path and op.method in (r.methods or ())
    )


async def test_tools_wait_for_the_slots_the_routes_wait_for_and_look_for_news_first() -> None:
    looked: list[str] = []

    async def before(repo: str) -> None:
        looked.append(repo)

    api = create_api(model(), ready=lambda: True, before_answer=before)
    ops = {op.tool: op for op in operations(api.openapi())}
    in_process = InProcess.of(api, list(ops.values()))
    gate = gate_of(api)
    transport = httpx.ASGITransport(app=api)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        async with gate.admit(None), gate.admit(None):  # both slots taken
            tool = asyncio.create_task(
                call(in_process, ops["search"], {"repo": "app-1", "q": "session"})
            )
            route = asyncio.create_task(client.get("/repositories/lib-2/files"))
            for _ in range(50):
                await asyncio.sleep(0)
            assert not tool.done() and not route.done()
            assert looked == ["app-1", "lib-2"]  # before the wait for a slot
            assert (await call(in_process, ops["health"], {})).is_error is False  # ungated
            assert gate.inside == 2
        assert (await tool).is_error is False
        assert (await route).status_code == 200
    assert (gate.inside, gate.most_inside, looked) == (0, 2, ["app-1", "lib-2"])


async def test_the_navigation_tools_answer_the_service(
    over_http: tuple[OverHttp, InProcess, dict[str, Operation]],
) -> None:
    _, in_process, ops = over_http
    found = await call(in_process, ops["definition"], {"repo": "app-1", "name": "Session.send"})
    assert found.structured_content is not None
    assert [d["id"] for d in found.structured_content["items"]] == [
        "sym:app/sessions.py:Session.send"
    ]
    hops = await call(
        in_process,
        ops["shortest_path"],
        {"repo": "app-1", "source": "tests/test_sessions.py", "target": "app/models.py"},
    )
    assert hops.structured_content is not None
    assert [(h["kind"], h["confidence"]) for h in hops.structured_content["hops"]] == [
        ("TESTS", "structural"),
        ("IMPORTS", "import"),
    ]
    listed = await Tools.of(list(ops.values())).listed()
    assert {"definition", "references", "callers", "callees", "shortest_path", "neighbors"} <= {
        t.name for t in listed.tools
    }


async def test_the_impact_tool_posts_its_arguments_as_the_body(
    over_http: tuple[OverHttp, InProcess, dict[str, Operation]],
) -> None:
    http, in_process, ops = over_http
    op = ops["impact"]
    assert (op.method, op.path_params, op.query_params) == ("POST", ("repo",), ())
    assert op.body_params == ("diff", "files", "symbols", "depth", "budget_tokens", "limit")
    schema = op.input_schema
    assert (schema["required"], schema["properties"]["depth"]) == (
        ["repo"],
        {
            "type": "integer",
            "maximum": 4.0,
            "minimum": 1.0,
            "description": "hops of dependents at most",
            "default": 2,
        },
    )
    arguments = {"repo": "app-1", "symbols": ["Session.send"], "limit": 5}
    for answers in (http, in_process):
        found = await call(answers, op, arguments)
        assert found.structured_content is not None
        answer = found.structured_content
        assert [s["id"] for s in answer["changed_symbols"]] == ["sym:app/sessions.py:Session.send"]
        assert [(t["path"], t["link"], t["hop"]) for t in answer["tests"]] == [
            ("tests/test_sessions.py", "graph", 0)
        ]
        assert answer["freshness"]["indexed_commit"] == "c1"


def test_every_argument_of_every_tool_is_described() -> None:
    openapi = create_api(ReadModel(), ready=lambda: True).openapi()
    found = {
        (op.tool, name): schema.get("description")
        for op in operations(openapi)
        for name, schema in op.input_schema["properties"].items()
    }
    assert len(found) > 100
    assert [key for key, description in found.items() if not description] == []
    assert found[("files", "offset")] == COMMON_ARGUMENTS["offset"]


async def test_a_context_pack_reaches_the_agent_as_its_text_not_escaped_json(
    over_http: tuple[OverHttp, InProcess, dict[str, Operation]],
) -> None:
    _, in_process, ops = over_http
    pack = await call(in_process, ops["context"], {"repo": "app-1", "symbol": "Session.send"})
    answer = pack.structured_content
    assert answer is not None and "\n" in answer["text"]
    first, rest = pack.content
    assert getattr(first, "text", None) == answer["text"]  # as is: no escaping
    assert json.loads(getattr(rest, "text", "")) == {k: v for k, v in answer.items() if k != "text"}
    other = await call(in_process, ops["definition"], {"repo": "app-1", "name": "Session.send"})
    (only,) = other.content  # every other answer: its JSON
    assert json.loads(getattr(only, "text", "")) == other.structured_content
