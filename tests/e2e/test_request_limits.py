"""The request limits and the audit log of ``gazetteer up``'s query service, set as a
deployment sets them (``GAZETTEER_*``): a large body refused 413 (declared or
streamed), a long URL 414, a caller over its rate 429 with ``Retry-After``, and one
``request_handled`` line per request in the service's JSON log, secrets left out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.cli import Gazetteer, eventually
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

SECRET = "gzt_e2e0123456789SECRETVALUE"


def test_up_limits_sizes_and_rates_and_audits_every_request(tmp_path: Path) -> None:
    a = GitRepo.create(tmp_path / "a", {"svc/api.py": "def handler():\n    return 1\n"})
    up = Gazetteer(
        ["up", str(a.root), "--port", "0"],
        tmp_path / "data",
        GAZETTEER_EMBEDDER="none",
        GAZETTEER_LOG_FORMAT="json",
        GAZETTEER_MAX_REQUEST_BYTES="4096",
        GAZETTEER_MAX_URL_BYTES="2048",
        GAZETTEER_RATE_LIMIT_PER_S="0.1",  # a request every 10 s once the burst is spent
        GAZETTEER_RATE_LIMIT_BURST="5",
    )
    try:
        url = up.url()

        def fresh() -> bool:  # from the log: no request is spent on waiting
            return any(e["status"] == "fresh" for e in up.log_events("index_progressed"))

        eventually(fresh, 60, "the repository indexed")
        repo = up.log_events("index_progressed")[-1]["repo"]
        secret = {"authorization": f"Bearer {SECRET}"}
        with httpx.Client(base_url=url, timeout=10, headers=secret) as http:
            # A declared length and a URL are refused before the rate limit and spend none
            # of the burst; a streamed body is cut as it is read, and spends one.
            declared = http.post(f"/repositories/{repo}/impact", content=b"{" + b" " * 8000)

            def chunks() -> Iterator[bytes]:  # no Content-Length: chunked
                yield from (b" " * 1000 for _ in range(8))

            streamed = http.post(
                f"/repositories/{repo}/impact",
                content=chunks(),
                headers={"content-type": "application/json"},
            )
            long_url = http.get(f"/repositories/{repo}/search", params={"q": "x" * 3000})
            answered = [
                http.get(f"/repositories/{repo}/search", params={"q": f"handler {SECRET}"})
                for _ in range(3)
            ]
            arguments = {"repo": repo, "q": f"handler {SECRET}"}
            call = {"name": "search", "arguments": arguments}
            tool = http.post(
                "/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call},
                headers={"accept": "application/json, text/event-stream"},
            )
            limited = http.get(f"/repositories/{repo}/search", params={"q": "handler"})

        assert (declared.status_code, declared.json()) == (
            413,
            {"detail": "the request body is over 4096 bytes"},
        )
        assert (streamed.status_code, streamed.json()) == (
            413,
            {"detail": "the request body is over 4096 bytes"},
        )
        assert (long_url.status_code, long_url.json()) == (
            414,
            {"detail": "the URL is over 2048 bytes"},
        )
        assert [r.status_code for r in answered] == [200, 200, 200]
        assert tool.status_code == 200 and "svc/api.py" in tool.text
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "10"  # 1 token at 0.1/s, minus a few ms
        assert limited.json()["retry_after_s"] == 10

        def audited() -> list[tuple[str, str, list[str], int]]:
            lines = up.log_events("request_handled")
            return [(e["method"], e["route"], e["repositories"], e["status"]) for e in lines]

        search = "/repositories/{repo}/search"
        expected = [
            ("POST", "/repositories/{repo}/impact", [repo], 413),
            ("POST", "/repositories/{repo}/impact", [repo], 413),
            ("GET", search, [repo], 414),
            *[("GET", search, [repo], 200)] * 3,
            ("POST", "/mcp", [repo], 200),
            ("GET", search, [repo], 429),
        ]
        eventually(lambda: len(audited()) >= len(expected), 10, "the audit lines")
        assert audited() == expected
        lines = up.log_events("request_handled")
        assert {(e["token"], e["client"]) for e in lines} == {("anonymous", "127.0.0.1")}
        assert all(isinstance(e["duration_ms"], float) for e in lines)
        assert [e["tools"] for e in lines if e["route"] == "/mcp"] == [["search"]]
        assert SECRET not in up.log_text()
    finally:
        up.kill()
