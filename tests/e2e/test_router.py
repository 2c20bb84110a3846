"""A sharded query tier as its own processes (issue 18): a broker, a worker, a watcher of
three repositories, two replicas each serving one of two partitions, a replica serving
both, and ``gazetteer route`` in front of the two shards (shard 0 listing a dead replica
first). Through the router, org-wide search, context packs, session starts and graph
searches answer what the whole replica answers and each repository's requests reach its
shard; a shard replica SIGKILLed leaves the
router's answers partial, saying so, and its repositories 503.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from producers.repo_id import repository_id
from query.materializer import partition_of
from tests.e2e.cli import Gazetteer, eventually, get
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

BOOTSTRAP = re.compile(r"^(kafka://\S+)$")
ROUTER = re.compile(r"Gazetteer router on (http://\S+)")
NAMES = ("payments", "gateway", "ledger")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def through_mcp(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The tools' answers (structured content, else the error's text), in one session."""

    async def go() -> list[Any]:
        async with Client(streamable_http_client(f"{url}/mcp")) as client:
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
        return [
            " ".join(getattr(c, "text", "") for c in r.content)
            if r.is_error
            else r.structured_content
            for r in results
        ]

    return asyncio.run(go())


def scored(page: dict[str, Any]) -> list[tuple[str, str, float]]:
    return [(h["repo"], h["path"], h["score"]) for h in page["items"]]


def unstamped(answer: Any) -> Any:
    """An org-wide answer without who answered it (the router's shards, a replica's
    partitions) and without freshness (its ages are each process's clock)."""
    if isinstance(answer, dict):
        return {
            k: unstamped(v)
            for k, v in answer.items()
            if k not in ("shards", "missing", "partial", "partitions", "freshness")
        }
    if isinstance(answer, list):
        return [unstamped(v) for v in answer]
    return answer


def test_the_router_answers_for_its_shards_and_says_when_one_is_missing(tmp_path: Path) -> None:
    # Repositories on both partitions by construction: their ids (producers/repo_id.py:
    # from the path, without a remote) all on one partition left shard 1/2 empty in
    # about one run of four.
    root = next(
        tmp_path / f"org{i}"
        for i in itertools.count()
        if {partition_of(repository_id(tmp_path / f"org{i}" / n, None), 2) for n in NAMES} == {0, 1}
    )
    repos = [
        GitRepo.create(
            root / name,
            {
                f"{name}/limits.py": f"def {name}_rate_limit(request):\n    return request\n",
                f"{name}/core.py": f"class {name.title()}Service:\n    pass\n",
            },
        )
        for name in NAMES
    ]
    data = tmp_path / "data"
    broker = Gazetteer(["broker"], data)
    parts: list[Gazetteer] = [broker]
    try:
        bootstrap = broker.wait_for_line(BOOTSTRAP).group(1)
        env = {"GAZETTEER_PARTITIONS": "2"}

        def serve(*more: str) -> Gazetteer:
            part = Gazetteer(["--broker", bootstrap, "serve", "--port", "0", *more], data, **env)
            parts.append(part)
            return part

        worker = Gazetteer(["--broker", bootstrap, "worker"], data, **env)
        watch = Gazetteer(
            ["--broker", bootstrap, "watch", *(str(r.root) for r in repos)], data, **env
        )
        parts += [worker, watch]
        whole, zero, one = serve(), serve("--partitions", "0"), serve("--shard", "1/2")
        urls = {"whole": whole.url(), "0": zero.url(), "1": one.url()}

        def all_fresh() -> bool:
            items = get(urls["whole"], "/repositories")["items"]
            return len(items) == 3 and all(i["freshness"]["status"] == "fresh" for i in items)

        eventually(all_fresh, 90, "three repositories fresh")
        rids = sorted(i["repo"] for i in get(urls["whole"], "/repositories")["items"])
        dead = f"http://127.0.0.1:{free_port()}"
        router = Gazetteer(
            [
                "route",
                "--port",
                "0",
                "--shard",
                f"0={dead},{urls['0']}",
                "--shard",
                f"1/2={urls['1']}",
            ],
            data,
            **env,
        )
        parts.append(router)
        routed = router.wait_for_line(ROUTER).group(1)

        def shards_fresh() -> bool:
            page = get(routed, "/repositories")
            return sorted(i["repo"] for i in page["items"]) == rids and all(
                i["freshness"]["status"] == "fresh" for i in page["items"]
            )

        eventually(shards_fresh, 60, "both shards to hold their repositories")

        questions = ("rate limit of a request", "PaymentsService", "ledger core")

        def settled() -> bool:
            # Fresh is not yet settled: importance (in the scores) comes with each
            # replica's neighborhoods, which a later recluster may still move.
            return all(
                scored(get(routed, "/search", q=q)) == scored(get(urls["whole"], "/search", q=q))
                for q in questions
            )

        eventually(settled, 60, "the shards and the whole replica to rank alike")
        for question in questions:
            through = get(routed, "/search", q=question)
            assert through["items"] and through["partial"] is False
            assert [(h["repo"], h["path"], h["score"]) for h in through["items"]] == [
                (h["repo"], h["path"], h["score"])
                for h in get(urls["whole"], "/search", q=question)["items"]
            ]
        # The org-wide pack, session start and graph search: the whole replica's too.
        org = {"/context": {"seeds": 6}, "/session-start": {}, "/graph-search": {"limit": 5}}
        for path, params in org.items():
            for question in ("rate limit of a request", "rate_limit"):
                through = get(routed, path, q=question, **params)
                assert through["partial"] is False and through["missing"] == [], path
                assert unstamped(through) == unstamped(
                    get(urls["whole"], path, q=question, **params)
                )
        packed = get(routed, "/context", q="rate limit of a request", seeds=6)
        assert len({s["repo"] for s in packed["sections"]}) > 1, "a pack of one repository"
        for rid in rids:
            files = get(routed, f"/repositories/{rid}/files")
            assert sorted(f["path"] for f in files["items"]) == sorted(
                f["path"] for f in get(urls["whole"], f"/repositories/{rid}/files")["items"]
            )
        # The MCP tools through the router answer as its routes do.
        question = "rate limit of a request"
        found, *listed = through_mcp(
            routed,
            [("search_all", {"q": question}), *(("files", {"repo": rid}) for rid in rids)],
        )
        assert [(h["repo"], h["path"]) for h in found["items"]] == [
            (h["repo"], h["path"]) for h in get(urls["whole"], "/search", q=question)["items"]
        ]
        assert found["partial"] is False and found["missing"] == []
        for rid, page in zip(rids, listed, strict=True):
            assert page == get(routed, f"/repositories/{rid}/files")
        health = get(routed, "/health")
        assert health["ready"] is True and [len(s["replicas"]) for s in health["shards"]] == [2, 1]

        assert one.crash() == -9  # shard 1/2's only replica
        on_one = [r for r in rids if partition_of(r, 2) == 1]
        page = get(routed, "/repositories")
        assert page["partial"] is True and page["missing"] == ["1/2"]
        assert sorted(i["repo"] for i in page["items"]) == [r for r in rids if r not in on_one]
        assert get(routed, "/search", q="rate limit")["partial"] is True
        packed = get(routed, "/context", q="rate limit of a request", seeds=6)
        assert packed["partial"] is True and packed["missing"] == ["1/2"]
        assert {s["repo"] for s in packed["sections"]} <= set(rids) - set(on_one)
        for rid in on_one:
            answer = httpx.get(f"{routed}/repositories/{rid}/files", timeout=30)
            assert answer.status_code == 503 and "no replica of shard 1/2" in answer.text
        assert get(routed, "/health")["ready"] is False
        partial, gone = through_mcp(
            routed, [("search_all", {"q": "rate limit"}), ("files", {"repo": on_one[0]})]
        )
        assert partial["partial"] is True and partial["missing"] == ["1/2"]
        assert "no replica of shard 1/2" in gone and "(HTTP 503)" in gone
        for part in (router, watch, worker, zero, whole, broker):
            assert part.interrupt() == 0, part.log_text()[-2000:]
    finally:
        for part in reversed(parts):
            part.kill()
