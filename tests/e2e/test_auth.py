"""The attacker's suite of issue 19, over real HTTP, MCP (streamable HTTP and stdio) and
the ``token`` CLI: two tenants' tokens over three repositories, an operator's and a
revoked one.

Every route of the API document (and /metrics, /mcp, the dashboard's data) is asked
with no token, a wrong one, a revoked one and the other tenant's; an unreadable
repository must answer byte for byte as a missing one does (a second service, over the
same repositories but that one, says what missing looks like); and no answer to a
tenant names a repository of the other. The counts are printed.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from structlog.testing import capture_logs

from query.api import create_api
from query.limits import RequestLimits
from query.read_model import ReadModel
from stores.tokens import TokenRecord, hash_secret, token_id
from tests.e2e.cli import Gazetteer, eventually, run_cli
from tests.e2e.query_service import feed, query_service
from tests.gitrepo import GitRepo
from tests.unit.test_retrieval_api import FILES

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PAYMENTS = ("payments-api", "payments-web")
SHARED = "shared-lib"
SECRETS = {"payments": "gzt_e2e_payments", "shared": "gzt_e2e_shared", "ops": "gzt_e2e_ops"}
REVOKED = "gzt_e2e_revoked"
FILLED = {
    "repo": PAYMENTS[0],
    "path": "app/sessions.py",
    "nid": "n-none",
    "entry_id": "e-none",
    "q": "resolve redirects",
    "symbol": "send",
    "name": "send",
    "source": "app/sessions.py",
    "target": "app/models.py",
}
"""A value for each parameter a route requires (most answer 200 with them)."""


def record(name: str, secret: str, scopes: tuple[str, ...], repos: tuple[str, ...]) -> TokenRecord:
    return TokenRecord(
        id=token_id(name),
        name=name,
        hash=hash_secret(secret),
        scopes=scopes,  # type: ignore[arg-type]
        repos=repos,
        created_at=1.0,
    )


def model_of(repos: tuple[str, ...]) -> ReadModel:
    model = ReadModel(clock=lambda: 1002.0)
    for repo in repos:
        feed(model, repo, FILES, clustered=True)
    book = model.tokens
    book.apply(record("payments", SECRETS["payments"], ("read",), ("payments-*",)))
    book.apply(record("shared", SECRETS["shared"], ("read",), ("shared-*",)))
    book.apply(record("ops", SECRETS["ops"], ("read", "admin", "metrics"), ("*",)))
    gone = record("gone", REVOKED, ("read", "admin", "metrics"), ("*",))
    book.apply(gone)
    book.apply(gone.model_copy(update={"revoked": True}))
    return model


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[str, str]]:
    """The deployment, and one without ``payments-api`` (what a missing one answers)."""
    with (
        query_service(model_of((*PAYMENTS, SHARED)), authenticate=True) as whole,
        query_service(model_of((PAYMENTS[1], SHARED)), authenticate=True) as without,
    ):
        yield whole, without


def routes() -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, query or body) of every operation of the API document, filled."""
    document = create_api(ReadModel(), ready=lambda: True).openapi()
    found = []
    for template, item in sorted(document["paths"].items()):
        for method, op in sorted(item.items()):
            params = {
                p["name"]: FILLED.get(p["name"], "x")
                for p in op.get("parameters", [])
                if p.get("required") and p["in"] == "query"
            }
            path = re.sub(r"\{(\w+)(:path)?\}", lambda m: FILLED[m.group(1)], template)
            found.append((method.upper(), path, params))
    found += [("GET", "/metrics", {}), ("GET", "/dashboard/data/payments-api", {})]
    return found + SHARD_ROUTES


SHARD_ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/shard/search/statistics", {"q": "resolve redirects"}),
    ("POST", "/shard/search/top", {"q": "resolve redirects"}),
    ("POST", "/shard/search", {"q": "resolve redirects"}),
    ("POST", "/shard/session-start", {"q": "resolve redirects"}),
    (
        "POST",
        "/shard/context",
        {
            "q": "resolve redirects",
            "sections": [{"repo": PAYMENTS[0], "seeds": [["file:app/sessions.py", 1.0]]}],
        },
    ),
    ("POST", "/shard/graph-search/statistics", {"q": "session"}),
    ("POST", "/shard/graph-search", {"q": "session"}),
]
"""A router's protocol (query/router.py): not in the API document, asked of a token all
the same (query/auth/routes.py: every path not named asks ``read``)."""


def ask(
    url: str, method: str, path: str, params: dict[str, Any], secret: str | None
) -> httpx.Response:
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    if method == "POST":
        body = {"symbols": ["Session.send"], **params}
        return httpx.post(url + path, json=body, headers=headers, timeout=30)
    return httpx.get(url + path, params=params, headers=headers, timeout=30)


OPEN = {"/health", "/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"}


def test_every_route_refuses_strangers_and_hides_the_other_tenant(
    services: tuple[str, str],
) -> None:
    whole, without = services
    tried = refused = leaked = 0
    for method, path, params in routes():
        if path in OPEN:
            continue
        for secret in (None, "gzt_wrong", REVOKED):
            answer = ask(whole, method, path, params, secret)
            tried += 1
            assert answer.status_code == 401, (method, path, secret, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer")
            refused += 1
            leaked += PAYMENTS[0].encode() in answer.content
        own = ask(whole, method, path, params, SECRETS["payments"])
        tried += 1
        admin_only = path in ("/dead-letters", "/metrics") or path.endswith("/ranking")
        assert own.status_code == (403 if admin_only else own.status_code), (path, own.text)
        assert own.status_code not in (401, 500), (method, path, own.text)
        refused += own.status_code == 403
        leaked += SHARED.encode() in own.content
        if not path.startswith(("/repositories/", "/dashboard/data/")):
            continue
        # The other tenant: payments-api is, to it, a repository that does not exist.
        hidden = ask(whole, method, path, params, SECRETS["shared"])
        missing = ask(without, method, path, params, SECRETS["shared"])
        tried += 1
        refused += hidden.status_code in (403, 404)
        same = (hidden.status_code, hidden.content, _headers(hidden)) == (
            missing.status_code,
            missing.content,
            _headers(missing),
        )
        assert same, (method, path, hidden.status_code, hidden.text, missing.text)
        assert hidden.status_code in (403, 404, 422), (path, hidden.text)
        leaked += b"app/sessions.py" in hidden.content and hidden.status_code != 422
    print(f"\nauth attack suite: requests tried {tried}, refused {refused}, leaked {leaked}")
    assert leaked == 0
    assert tried > 150


NAME_GUESSES = (
    "payments-api",
    "PAYMENTS-API",
    "payments-api/",
    "payments-*",
    "*",
    "payments-api%00",
    "shared-lib/../payments-api",
    "%2e%2e",
    "payments",
    "payments-api.git",
)
PATH_GUESSES = (
    "../../etc/passwd",
    "%2e%2e/%2e%2e/etc/passwd",
    "/etc/passwd",
    "app/../../../../etc/passwd",
    "app/sessions.py/../../../etc/hostname",
    "app/%00sessions.py",
)


def test_guessed_names_paths_and_rebound_hosts_reveal_nothing(
    services: tuple[str, str],
) -> None:
    """The other tenant guessing a repository's name (cases, globs, traversal, encodings)
    gets what it gets where the repository does not exist; a tenant guessing paths out
    of its own repository reads nothing of the server; a page that rebinds a name to
    the service (its own name in ``Host``, or its ``Origin``) is refused on every route,
    the operator's token in hand."""
    whole, without = services
    tried = refused = leaked = 0
    for guess in NAME_GUESSES:
        for suffix in ("", "/files", "/search?q=send", "/neighborhoods", "/churn"):
            path = f"/repositories/{guess}{suffix}"
            hidden = httpx.get(whole + path, headers=bearer("shared"), timeout=30)
            missing = httpx.get(without + path, headers=bearer("shared"), timeout=30)
            tried += 1
            assert (hidden.status_code, hidden.content) == (missing.status_code, missing.content)
            refused += hidden.status_code >= 400
            leaked += b"sessions.py" in hidden.content
    for guess in PATH_GUESSES:
        for route in ("files", "context?path="):
            sep = "/" if route == "files" else ""
            path = f"/repositories/{PAYMENTS[0]}/{route}{sep}{guess}"
            answer = httpx.get(whole + path, headers=bearer("payments"), timeout=30)
            tried += 1
            assert answer.status_code in (400, 404, 422), (path, answer.text)
            refused += 1
            leaked += b"root:" in answer.content or str(ROOT).encode() in answer.content
    for method, path, params in routes():
        for header in ({"Host": "attacker.example"}, {"Origin": "http://attacker.example"}):
            secret = SECRETS["ops"]
            answer = httpx.request(
                method,
                whole + path,
                params=params if method == "GET" else None,
                json={"symbols": ["Session.send"], **params} if method == "POST" else None,
                headers={**header, "Authorization": f"Bearer {secret}"},
                timeout=30,
            )
            tried += 1
            assert answer.status_code == (421 if "Host" in header else 403), (path, header)
            refused += 1
            leaked += PAYMENTS[0].encode() in answer.content or SHARED.encode() in answer.content
    print(f"\nguessing and rebinding: requests tried {tried}, refused {refused}, leaked {leaked}")
    assert leaked == 0


def _headers(answer: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in answer.headers.items() if k not in ("date", "server")}


def test_listings_totals_and_org_search_hold_only_the_token_s_repositories(
    services: tuple[str, str],
) -> None:
    whole, _ = services

    def get(path: str, who: str, **params: Any) -> Any:
        answer = httpx.get(whole + path, params=params, headers=bearer(who), timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()

    listed = get("/repositories", "payments")
    assert (listed["total"], [r["repo"] for r in listed["items"]]) == (2, list(PAYMENTS))
    assert get("/repositories", "shared", name="payments")["total"] == 0
    assert get("/health", "shared")["repositories"] == 1
    assert httpx.get(whole + "/health").json()["repositories"] == 0
    searched = get("/search", "shared", q="resolve redirects session", limit=50)
    assert searched["repositories"] == 1
    assert {h["repo"] for h in searched["items"]} == {SHARED}
    assert get("/search", "ops", q="resolve redirects session", limit=50)["repositories"] == 3
    # The org-wide context, session start and graph search alike (issue 18).
    question = "resolve redirects session"
    context = get("/context", "shared", q=question, budget=4000, seeds=6)
    assert context["repositories"] == 1 and context["sections"]
    assert {s["repo"] for s in context["sections"]} == {t["repo"] for t in context["targets"]}
    assert {s["repo"] for s in context["sections"]} == {SHARED}
    graph = get("/graph-search", "shared", q="session")
    assert graph["repositories"] == 1 and set(graph["freshness"]) == {SHARED}
    assert {h["repo"] for c in graph["channels"] for h in c["items"]} == {SHARED}
    start = get("/session-start", "shared", q=question)
    assert start["repositories"] == 1
    assert {n["repo"] for n in start["neighborhoods"]} <= {SHARED}
    wide = get("/context", "ops", q=question, budget=4000, seeds=6)
    assert wide["repositories"] == 3 and len(wide["sections"]) > 1


def bearer(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRETS[who]}"}


def _bearer_of(secret: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def mcp_over_http(url: str, secret: str | None) -> Client:
    client = create_mcp_http_client(headers=_bearer_of(secret))
    return Client(streamable_http_client(f"{url}/mcp", http_client=client))


def text_of(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def test_mcp_over_http_asks_a_token_and_filters_as_http(services: tuple[str, str]) -> None:
    whole, _ = services
    for secret in (None, "gzt_wrong", REVOKED):
        async with httpx.AsyncClient(timeout=10) as http:
            answer = await http.post(whole + "/mcp", json={}, headers=_bearer_of(secret))
        assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
        with pytest.raises(ExceptionGroup) as caught:  # the SDK's, around its MCPError
            async with mcp_over_http(whole, secret) as client:
                await client.list_tools()
        assert "Server returned an error response" in repr(caught.value)
    async with mcp_over_http(whole, SECRETS["shared"]) as client:
        listed = await client.call_tool("repositories", {})
        assert listed.structured_content is not None
        assert [r["repo"] for r in listed.structured_content["items"]] == [SHARED]
        hidden = await client.call_tool("repository", {"repo": PAYMENTS[0]})
        assert hidden.is_error
        assert (
            text_of(hidden) == f"unknown repository {PAYMENTS[0]!r}; see /repositories (HTTP 404)"
        )
        letters = await client.call_tool("dead_letters", {})
        assert (
            letters.is_error and text_of(letters) == "this token lacks the 'admin' scope (HTTP 403)"
        )
        everywhere = await client.call_tool("search_all", {"q": "resolve redirects"})
        assert everywhere.structured_content is not None
        assert {h["repo"] for h in everywhere.structured_content["items"]} == {SHARED}


async def test_every_mcp_tool_answers_the_other_tenant_as_for_a_missing_repository(
    services: tuple[str, str],
) -> None:
    """Each tool that names a repository, called by the other tenant on payments-api,
    answers what the same call answers where payments-api does not exist."""
    whole, without = services
    tried = 0
    async with (
        mcp_over_http(whole, SECRETS["shared"]) as hidden_side,
        mcp_over_http(without, SECRETS["shared"]) as missing_side,
    ):
        tools = (await hidden_side.list_tools()).tools
        for tool in tools:
            schema = tool.input_schema
            if "repo" not in schema.get("properties", {}):
                continue
            arguments: dict[str, Any] = {
                name: FILLED.get(name, "x") for name in schema.get("required", [])
            }
            arguments["repo"] = PAYMENTS[0]
            if tool.name == "impact":
                arguments.setdefault("symbols", ["Session.send"])
            hidden = await hidden_side.call_tool(tool.name, arguments)
            missing = await missing_side.call_tool(tool.name, arguments)
            tried += 1
            assert hidden.is_error, (tool.name, text_of(hidden))
            assert text_of(hidden) == text_of(missing), tool.name
            assert "sessions.py" not in text_of(hidden)
    print(f"\nMCP tools tried by the other tenant: {tried}, leaked 0")
    assert tried >= 10


async def test_mcp_over_stdio_sends_the_token_of_its_environment(
    services: tuple[str, str],
) -> None:
    whole, _ = services

    def stdio(**env: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=sys.executable,
            args=["-m", "deploy.cli", "mcp", "--url", whole],
            cwd=str(ROOT),
            env={**os.environ, **env},
        )

    async with Client(stdio(GAZETTEER_TOKEN=SECRETS["payments"])) as client:
        listed = await client.call_tool("repositories", {})
        assert listed.structured_content is not None
        assert [r["repo"] for r in listed.structured_content["items"]] == list(PAYMENTS)
    async with Client(stdio()) as client:
        refused = await client.call_tool("repositories", {})
        assert refused.is_error and "(HTTP 401)" in text_of(refused)


def up_with_auth(tmp_path: Path, repos: list[GitRepo]) -> Gazetteer:
    """``gazetteer up --auth`` over ``repos``, logging JSON (its events are read)."""
    return Gazetteer(
        ["up", *(str(r.root) for r in repos), "--port", "0", "--auth"],
        tmp_path / "data",
        GAZETTEER_LOG_FORMAT="json",
    )


def broker_of(up: Gazetteer) -> str:
    return "kafka://" + up.log_events("broker_connected")[0]["bootstrap"]


def test_tokens_made_listed_and_revoked_by_the_cli_hold_on_a_live_stack(tmp_path: Path) -> None:
    repos = [
        GitRepo.create(tmp_path / name, {f"{name}/core.py": f"def {name}_core():\n    return 1\n"})
        for name in ("payments", "shared")
    ]
    up = up_with_auth(tmp_path, repos)
    try:
        url = up.url()
        assert httpx.get(url + "/repositories", timeout=10).status_code == 401
        broker = broker_of(up)
        hint = f"Authentication is on: make a token with `gazetteer --broker {broker} token"
        up.wait_for_line(re.compile(re.escape(hint)))
        made = run_cli(
            "--broker",
            broker,
            "token",
            "create",
            "--name",
            "ci-agent",
            "--repos",
            "payments*",
            "--scope",
            "read",
        )
        assert made.returncode == 0, made.stderr
        secret = made.stdout.strip()
        assert secret.startswith("gzt_") and "shown only now" in made.stderr
        headers = {"Authorization": f"Bearer {secret}"}

        def names() -> list[str]:
            answer = httpx.get(url + "/repositories", headers=headers, timeout=10)
            if answer.status_code != 200:
                return []
            return [r["name"] for r in answer.json()["items"]]

        eventually(lambda: names() == ["payments"], 60, "the token folded, payments indexed")
        listed = run_cli("--broker", broker, "token", "list")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.startswith("ci-agent\tactive\tscopes=read\trepos=payments*\t")
        assert secret not in listed.stdout and hash_secret(secret) not in listed.stdout
        gone = run_cli("--broker", broker, "token", "revoke", "ci-agent")
        revoked_at = time.monotonic()
        assert (gone.returncode, gone.stdout) == (0, "token ci-agent revoked\n"), gone.stderr

        def refused() -> bool:
            return httpx.get(url + "/repositories", headers=headers, timeout=10).status_code == 401

        eventually(refused, 10, "the revocation folded")
        print(f"\nrevocation refused {time.monotonic() - revoked_at:.2f} s after token revoke")
        again = run_cli("--broker", broker, "token", "revoke", "ci-agent")
        assert again.returncode == 1 and "no active token named 'ci-agent'" in again.stderr
        assert up.interrupt() == 0
    finally:
        up.kill()


def _token(broker: str, name: str, repos: str, *scopes: str) -> str:
    args = ["--broker", broker, "token", "create", "--name", name, "--repos", repos]
    for scope in scopes:
        args += ["--scope", scope]
    made = run_cli(*args)
    assert made.returncode == 0, made.stderr
    return made.stdout.strip()


NOWHERE = "payments-zz"
"""A repository name no deployment holds."""


def test_the_attack_matrix_holds_on_a_live_stack(tmp_path: Path) -> None:
    """A real ``up --auth`` (embedded broker, worker, watcher, query service) over three
    repositories, its tokens made and revoked by the CLI: every route with no, a wrong, a
    revoked and the other tenant's token; the other tenant's answers about a payments
    repository are those about a repository that does not exist (its name aside)."""
    names = (*PAYMENTS, SHARED)
    repos = [GitRepo.create(tmp_path / name, FILES) for name in names]
    up = up_with_auth(tmp_path, repos)
    try:
        url = up.url()
        broker = broker_of(up)
        tokens = {
            "payments": _token(broker, "payments", "payments-*", "read"),
            "shared": _token(broker, "shared", "shared-*", "read"),
            "ops": _token(broker, "ops", "*", "read", "admin", "metrics"),
            "gone": _token(broker, "gone", "*", "read", "admin", "metrics"),
        }
        assert run_cli("--broker", broker, "token", "revoke", "gone").returncode == 0

        def listed(who: str) -> list[dict[str, Any]]:
            head = {"Authorization": f"Bearer {tokens[who]}"}
            answer = httpx.get(url + "/repositories", headers=head, timeout=10)
            if answer.status_code != 200:
                return []
            items: list[dict[str, Any]] = answer.json()["items"]
            return items if all(i["freshness"]["status"] == "fresh" for i in items) else []

        eventually(lambda: len(listed("ops")) == 3, 90, "three repositories fresh")
        ids = {r["name"]: r["repo"] for r in listed("ops")}
        payments_id, shared_id = ids[PAYMENTS[0]], ids[SHARED]
        assert [r["name"] for r in listed("shared")] == [SHARED]
        eventually(
            lambda: (
                httpx.get(
                    url + "/health", headers={"Authorization": f"Bearer {tokens['gone']}"}
                ).json()["repositories"]
                == 0
            ),
            10,
            "the revocation folded",
        )
        tried = refused = leaked = 0
        for method, path, params in routes():
            if path in OPEN:
                continue
            live = path.replace(PAYMENTS[0], payments_id)
            for secret in (None, "gzt_wrong", tokens["gone"]):
                answer = ask(url, method, live, params, secret)
                tried += 1
                assert answer.status_code == 401, (method, live, answer.text)
                refused += 1
                leaked += payments_id.encode() in answer.content
            own = ask(url, method, live, params, tokens["payments"])
            tried += 1
            assert own.status_code not in (401, 500), (method, live, own.text)
            refused += own.status_code == 403
            leaked += shared_id.encode() in own.content
            if payments_id not in live:
                continue
            hidden = ask(url, method, live, params, tokens["shared"])
            nowhere = ask(url, method, live.replace(payments_id, NOWHERE), params, tokens["shared"])
            tried += 1
            refused += hidden.status_code in (403, 404)
            assert hidden.status_code == nowhere.status_code, (method, live, hidden.text)
            assert hidden.content.replace(payments_id.encode(), NOWHERE.encode()) == nowhere.content
            leaked += b"sessions.py" in hidden.content
        print(f"\nlive attack matrix: requests tried {tried}, refused {refused}, leaked {leaked}")
        assert leaked == 0 and tried > 150
        assert up.interrupt() == 0
    finally:
        up.kill()


def test_the_query_verbs_send_their_token(services: tuple[str, str]) -> None:
    whole, _ = services
    found = run_cli(
        "search", PAYMENTS[0], "resolve redirects", "--url", whole, "--token", SECRETS["payments"]
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("app/")
    hidden = run_cli(
        "search", PAYMENTS[0], "resolve redirects", "--url", whole, "--token", SECRETS["shared"]
    )
    assert hidden.returncode == 2
    assert (
        hidden.stderr
        == f"gazetteer search: unknown repository {PAYMENTS[0]!r}; see /repositories (HTTP 404)\n"
    )
    none = run_cli("search", PAYMENTS[0], "resolve redirects", "--url", whole)
    assert (none.returncode, none.stderr) == (
        2,
        "gazetteer search: authentication required (HTTP 401)\n",
    )
    impact = run_cli(
        "impact",
        PAYMENTS[0],
        "--symbol",
        "Session.send",
        "--url",
        whole,
        "--token",
        SECRETS["payments"],
    )
    assert impact.returncode == 0, impact.stderr


async def test_an_mcp_org_wide_search_is_audited_with_the_repositories_it_drew_from() -> None:
    model = model_of((*PAYMENTS, SHARED))
    with (
        query_service(model, RequestLimits(rate=None), authenticate=True) as url,
        capture_logs() as logs,
    ):
        async with mcp_over_http(url, SECRETS["payments"]) as client:
            found = await client.call_tool("search_all", {"q": "resolve redirects session"})
    assert found.structured_content is not None
    hits = sorted({h["repo"] for h in found.structured_content["items"]})
    assert hits == list(PAYMENTS)
    lines = [e for e in logs if e["event"] == "request_handled" and e.get("tools")]
    assert [(e["tools"], e["repositories"], e["token"]) for e in lines] == [
        (["search_all"], hits, "payments")
    ]
