"""``gazetteer definition|references|callers|callees|path|neighbors`` as a user runs them
against a service (issue 20)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.cli import run_cli
from tests.e2e.query_service import indexed_model, query_service

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with query_service(indexed_model()) as served:
        yield served


def test_the_navigation_verbs_print_one_line_per_item(url: str) -> None:
    found = run_cli("definition", "app-1", "Session.send", "--url", url)
    assert (found.returncode, found.stdout) == (
        0,
        "app/sessions.py:L4-6  Session.send  METHOD  exact\n",
    )
    assert found.stderr.startswith("# 1 of 1; index ")
    callers = run_cli("callers", "app-1", "send", "--path", "app/sessions.py", "--url", url)
    assert callers.returncode == 0, callers.stderr
    assert callers.stdout == (
        "tests/test_sessions.py:L3-4  test_send  CALLS name_match  1  at tests/test_sessions.py:4\n"
    )
    hops = run_cli("path", "app-1", "tests/test_sessions.py", "app/models.py", "--url", url)
    assert hops.stdout == (
        "tests/test_sessions.py:L1-4  test_sessions.py\n"
        "  -> TESTS structural  app/sessions.py:L1-9  sessions.py\n"
        "  -> IMPORTS import  app/models.py:L1-4  models.py\n"
    )
    near = run_cli("neighbors", "app-1", "app/models.py", "--limit", "2", "--url", url)
    assert near.stdout == (
        "app/models.py:L1-4  models.py\n  app/sessions.py:L1-9  sessions.py  IMPORTS import\n"
    )
    assert near.stderr.startswith("# 2 of 3; next --offset 2; index ")


def test_an_unknown_symbol_exits_2_with_the_reason(url: str) -> None:
    done = run_cli("references", "app-1", "Nothing", "--url", url)
    assert (done.returncode, done.stdout) == (2, "")
    assert "gazetteer references: no symbol 'Nothing' in repository 'app-1'" in done.stderr
