"""``gazetteer search`` and ``gazetteer context`` as a user runs them against a service."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.e2e.cli import run_cli
from tests.e2e.query_service import indexed_model, query_service

pytestmark = pytest.mark.e2e

HIT = re.compile(r"^(?P<path>\S+):L\d+-\d+  (?P<score>\d+\.\d{4})  (?P<sig>.*)$")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with query_service(indexed_model()) as served:
        yield served


def test_search_prints_ranked_files_with_the_lines_to_read(url: str) -> None:
    done = run_cli("search", "app-1", "resolve_redirects loops forever", "--url", url)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    hits = [HIT.match(line) for line in lines]
    assert lines and all(hits), done.stdout
    assert hits[0] is not None and hits[0]["path"] == "app/sessions.py"
    assert "symbol=1" in hits[0]["sig"]
    scores = [float(h["score"]) for h in hits if h]
    assert scores == sorted(scores, reverse=True)
    assert re.search(r"# \d+ of \d+ files; retrievers: bm25, mentions; index \w+", done.stderr)
    assert "HTTP Request" not in done.stderr

    limited = run_cli("search", "app-1", "response session", "--limit", "1", "--url", url)
    assert limited.returncode == 0 and len(limited.stdout.splitlines()) == 1


def test_context_prints_the_pack_for_a_question_a_symbol_or_a_file(url: str) -> None:
    by_symbol = run_cli("context", "app-1", "--symbol", "Session.send", "--url", url)
    assert by_symbol.returncode == 0, by_symbol.stderr
    assert "[TARGET]" in by_symbol.stdout and "def send(self, request)" in by_symbol.stdout
    by_question = run_cli(
        "context", "app-1", "--q", "iter_content of a response", "--budget", "300", "--url", url
    )
    assert by_question.returncode == 0 and "app/models.py" in by_question.stdout
    assert len(by_question.stdout) <= 300 * 4 + 1
    by_file = run_cli("context", "app-1", "--path", "app/models.py", "--url", url)
    assert by_file.returncode == 0 and "class Response" in by_file.stdout
    narrowed = run_cli(
        "context", "app-1", "--symbol", "Session.send", "--path", "app/sessions.py", "--url", url
    )
    assert narrowed.returncode == 0 and "def send(self, request)" in narrowed.stdout
    elsewhere = run_cli(
        "context", "app-1", "--symbol", "Session.send", "--path", "app/models.py", "--url", url
    )
    assert elsewhere.returncode == 0 and "[TARGET]" not in elsewhere.stdout
    neither = run_cli("context", "app-1", "--url", url)
    assert neither.returncode == 2 and "give exactly one of q, symbol, path" in neither.stderr


def test_refusals_and_an_unreachable_service_exit_2_with_the_reason(url: str) -> None:
    unknown = run_cli("search", "nope", "anything", "--url", url)
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert "gazetteer search: unknown repository 'nope'" in unknown.stderr
    bad = run_cli("context", "app-1", "--path", "missing.py", "--url", url)
    assert bad.returncode == 2 and "no file 'missing.py'" in bad.stderr
    too_many = run_cli("search", "app-1", "x", "--limit", "0", "--url", url)
    assert too_many.returncode == 2 and "limit:" in too_many.stderr
    down = run_cli("search", "app-1", "x", "--url", "http://127.0.0.1:9")
    assert down.returncode == 2
    assert "the query service at http://127.0.0.1:9 did not answer" in down.stderr
    assert "Traceback" not in down.stderr
