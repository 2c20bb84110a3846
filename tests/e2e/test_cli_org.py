"""The query verbs across repositories (issue 18) as a user runs them: ``gazetteer
search QUESTION --all`` or ``--repos 'payments-*'``, and ``context``, ``session-start``
and ``graph-search`` alike, against a replica and against ``gazetteer route`` in front
of two shard replicas, each asking a token (issue 19).

A scope that holds no repository exits 2 with the reason; a repository the token may
not read is, to the CLI, a repository that does not exist: the same output byte for
byte as against a service without it. With a shard down the router's answer comes,
marked PARTIAL and naming the missing shard; a replica still loading answers from
what it holds, marked PARTIAL too.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from query.materializer import partition_of
from tests.e2e.cli import Gazetteer, run_cli
from tests.e2e.query_service import query_service
from tests.e2e.test_auth import PAYMENTS, SECRETS, SHARED, model_of

pytestmark = pytest.mark.e2e

ROUTER = re.compile(r"Gazetteer router on (http://\S+)")
ORG_HIT = re.compile(r"^(?P<repo>\S+)  (?P<path>\S+):L\d+-\d+  (?P<score>\d+\.\d{4})  .*$")
QUESTION = "resolve_redirects loops forever"
OPS = ("--token", SECRETS["ops"])


@pytest.fixture(scope="module")
def services() -> Iterator[tuple[str, str]]:
    """Every repository on one replica, and a replica without ``payments-api``."""
    with (
        query_service(model_of((*PAYMENTS, SHARED)), authenticate=True) as whole,
        query_service(model_of((PAYMENTS[1], SHARED)), authenticate=True) as without,
    ):
        yield whole, without


def cli(*args: str) -> tuple[int, str, str]:
    done = run_cli(*args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def hits(stdout: str) -> list[tuple[str, str]]:
    found = [ORG_HIT.match(line) for line in stdout.splitlines()]
    assert found and all(found), stdout
    return [(m["repo"], m["path"]) for m in found if m]


def test_search_across_every_repository_or_those_the_patterns_name(
    services: tuple[str, str],
) -> None:
    whole, _ = services
    code, out, err = cli("search", QUESTION, "--all", "--url", whole, *OPS)
    assert code == 0, err
    assert {repo for repo, _ in hits(out)} == {*PAYMENTS, SHARED}
    assert hits(out)[0][1] == "app/sessions.py"
    assert re.search(r"# \d+ of \d+ files from 3 repositories; index \d+ \w+", err), err
    assert err.rstrip().endswith("; partitions all") and "PARTIAL" not in err
    code, out, err = cli("search", QUESTION, "--repos", "payments-*", "--url", whole, *OPS)
    assert code == 0 and {repo for repo, _ in hits(out)} == set(PAYMENTS), err
    # The token reads payments-* alone: --all is its repositories, not the deployment's.
    payments = ("--token", SECRETS["payments"])
    code, out, err = cli("search", QUESTION, "--all", "--url", whole, *payments)
    assert code == 0 and {repo for repo, _ in hits(out)} == set(PAYMENTS), err
    limited = cli("search", QUESTION, "--all", "--limit", "1", "--url", whole, *OPS)
    assert limited[0] == 0 and len(limited[1].splitlines()) == 1


def test_context_session_start_and_graph_search_across_repositories(
    services: tuple[str, str],
) -> None:
    whole, _ = services
    asked = ("--url", whole, *OPS)
    code, out, err = cli("context", "--all", "--q", "iter_content of a response", *asked)
    assert code == 0, err
    assert out.startswith("=== repository ") and "[TARGET]" in out
    assert re.search(r"# \d+ of 8000 tokens from \d of 3 repositories; confidence", err), err
    code, out, err = cli("session-start", "resolve redirects", "--repos", "shared-*", *asked)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"{SHARED}  ") and "  entry " in out
    assert "neighborhoods from 1 repository; index" in err
    code, out, err = cli("graph-search", "Session", "--all", "--channels", "classes", *asked)
    assert code == 0, err
    assert out.splitlines()[0] == "[classes] 3 of 3"
    assert sorted(line.split()[0] for line in out.splitlines()[1:]) == sorted([*PAYMENTS, SHARED])
    # The verbs of one repository keep their shape: no repository column.
    code, out, err = cli("graph-search", SHARED, "Session", "--channels", "classes", *asked)
    assert code == 0 and out.splitlines()[1].startswith("  app/sessions.py:L"), out
    code, out, err = cli("session-start", SHARED, "resolve redirects", *asked)
    assert code == 0 and not out.startswith(SHARED) and "  entry " in out, out


def test_bad_scopes_exit_2_and_an_unreadable_repository_answers_as_a_missing_one(
    services: tuple[str, str],
) -> None:
    whole, without = services
    code, out, err = cli("search", QUESTION, "--repos", "nothing-*", "--url", whole, *OPS)
    assert (code, out) == (2, "")
    assert "gazetteer search: no repository to ask: none matches --repos 'nothing-*'" in err
    code, out, err = cli("search", QUESTION, "--repos", ",", "--url", whole, *OPS)
    assert (code, out) == (2, "") and "--repos: give ids, names or globs" in err
    code, _, err = cli("search", SHARED, QUESTION, "--all", "--url", whole, *OPS)
    assert code == 2 and "give the text alone" in err
    code, _, err = cli("context", "--all", "--symbol", "Session.send", "--url", whole, *OPS)
    assert code == 2 and "an org-wide pack is asked with --q alone" in err
    code, _, err = cli("search", QUESTION, "--all", "--url", whole)
    assert code == 2 and "authentication required (HTTP 401)" in err
    # payments-api, to the shared-* token, is what a service without it says.
    shared = ("--token", SECRETS["shared"])
    for verb in (
        ("search", QUESTION, "--repos", PAYMENTS[0]),
        ("context", "--repos", PAYMENTS[0], "--q", QUESTION),
        ("session-start", QUESTION, "--repos", PAYMENTS[0]),
        ("graph-search", "Session", "--repos", PAYMENTS[0]),
        ("search", PAYMENTS[0], QUESTION),
        ("graph-search", PAYMENTS[0], "Session"),
    ):
        hidden = cli(*verb, "--url", whole, *shared)
        missing = cli(*verb, "--url", without, *shared)
        assert hidden == missing, verb
        assert hidden[0] == 2 and hidden[1] == "", (verb, hidden)
        assert "no repository to ask" in hidden[2] or "unknown repository" in hidden[2]


def test_a_replica_still_loading_answers_from_what_it_holds_marked_partial() -> None:
    with query_service(model_of((SHARED,)), authenticate=True, ready=lambda: False) as warming:
        code, out, err = cli("search", QUESTION, "--all", "--url", warming, *OPS)
        assert code == 0 and {repo for repo, _ in hits(out)} == {SHARED}, err
        assert err.rstrip().endswith(
            "; partitions all; PARTIAL: some repositories were not "
            "searched (a shard down or loading)"
        ), err
        code, out, err = cli("context", "--all", "--q", QUESTION, "--url", warming, *OPS)
        assert code == 0 and out.startswith(f"=== repository {SHARED} ===") and "PARTIAL" in err
        # A repository it does not hold yet is not called missing: retry (HTTP 503).
        code, out, err = cli("search", PAYMENTS[0], QUESTION, "--url", warming, *OPS)
        assert (code, out) == (1, "") and "still loading; retry (HTTP 503)" in err


def test_through_the_router_the_answers_are_the_replicas_and_partial_with_a_shard_down(
    tmp_path: Path,
) -> None:
    repos = (*PAYMENTS, SHARED)
    on = {p: tuple(r for r in repos if partition_of(r, 2) == p) for p in (0, 1)}
    assert all(on.values()), on  # both shards hold a repository
    with (
        query_service(model_of(repos), authenticate=True) as whole,
        query_service(model_of(on[0]), authenticate=True) as zero,
        contextlib.ExitStack() as stack,
    ):
        shard_one = stack.enter_context(contextlib.ExitStack())
        one = shard_one.enter_context(query_service(model_of(on[1]), authenticate=True))
        shards = ["--shard", f"0={zero}", "--shard", f"1={one}"]
        router = Gazetteer(
            ["route", "--port", "0", *shards], tmp_path / "data", GAZETTEER_PARTITIONS="2"
        )
        stack.callback(router.kill)
        routed = router.wait_for_line(ROUTER).group(1)
        for verb in (
            ("search", QUESTION, "--all"),
            ("context", "--all", "--q", "iter_content of a response", "--seeds", "6"),
            ("session-start", "resolve redirects", "--all"),
            ("graph-search", "Session", "--repos", "payments-*,shared-*"),
        ):
            through = cli(*verb, "--url", routed, *OPS)
            alone = cli(*verb, "--url", whole, *OPS)
            assert through[0] == 0, through[2]
            assert through[1] == alone[1], verb  # the same answer, line for line
            assert through[2].rstrip().endswith("; shards 0, 1"), through[2]
        code, _, err = cli("search", QUESTION, "--all", "--url", routed)
        assert code == 2 and "authentication required (HTTP 401)" in err
        shard_one.close()  # shard 1's only replica stops
        code, out, err = cli("search", QUESTION, "--all", "--url", routed, *OPS)
        assert code == 0, err
        assert {repo for repo, _ in hits(out)} == set(on[0])
        assert err.rstrip().endswith(
            "; shards 0; missing shards 1; "
            "PARTIAL: some repositories were not searched (a shard down or loading)"
        ), err
        only = ",".join(on[1])
        code, out, err = cli("search", QUESTION, "--repos", only, "--url", routed, *OPS)
        assert (code, out) == (1, ""), err  # nothing to say, and not because none matched
        assert "no repository to ask" in err and "PARTIAL" in err
        assert router.interrupt() == 0, router.log_text()[-2000:]
