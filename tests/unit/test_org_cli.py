"""The scope of a query verb (one repository, or several: issue 18) read from its
arguments as deploy/cli.py parses them, and what an org-wide footer says."""

from __future__ import annotations

import pytest

from deploy.cli import _parser
from deploy.org_cli import Scope, Unscoped, repositories, scope_of, statuses, who_answered


def scope(*argv: str) -> Scope:
    args = _parser().parse_args(argv)
    return scope_of(args, text=args.command != "context")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (("search", "app-1", "rate limit"), Scope("app-1", None, "rate limit")),
        (("search", "rate limit", "--all"), Scope(None, None, "rate limit")),
        (("search", "--repos", "svc-*,shared", "q"), Scope(None, "svc-*,shared", "q")),
        (("session-start", "first message", "--all"), Scope(None, None, "first message")),
        (("graph-search", "app-1", "Session"), Scope("app-1", None, "Session")),
        (("graph-search", "Session", "--repos", "lib"), Scope(None, "lib", "Session")),
        (("context", "app-1", "--symbol", "Session.send"), Scope("app-1", None, None)),
        (("context", "--all", "--q", "why"), Scope(None, None, None)),
        (("context", "--repos", "a-*", "--q", "why"), Scope(None, "a-*", None)),
    ],
)
def test_the_scope_is_one_repository_or_the_patterns(
    argv: tuple[str, ...], expected: Scope
) -> None:
    assert scope(*argv) == expected
    assert scope(*argv).org is (expected.repo is None)


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (("search", "app-1", "q", "--all"), "with --all or --repos give the text alone"),
        (("search", "app-1"), "give the repository and the text"),
        (("search", "q", "--repos", ""), "--repos: give ids, names or globs"),
        (("search", "q", "--repos", " , "), "--repos: give ids, names or globs"),
        (("context", "app-1", "--all", "--q", "x"), "name no repository (not 'app-1')"),
        (("context", "--q", "x"), "give the repository, or --all"),
    ],
)
def test_a_missing_or_doubled_scope_is_refused_with_the_reason(
    argv: tuple[str, ...], refusal: str
) -> None:
    with pytest.raises(Unscoped) as caught:
        scope(*argv)
    assert refusal in str(caught.value)


def test_all_and_repos_exclude_each_other() -> None:
    with pytest.raises(SystemExit):
        _parser().parse_args(["search", "q", "--all", "--repos", "a"])


def test_the_footer_names_who_answered_and_says_partial() -> None:
    routed = {"shards": ["0", "1-3"], "missing": [], "partial": False}
    assert who_answered(routed) == "shards 0, 1-3"
    down = {"shards": ["0"], "missing": ["1-3"], "partial": True}
    assert who_answered(down) == (
        "shards 0; missing shards 1-3; "
        "PARTIAL: some repositories were not searched (a shard down or loading)"
    )
    warming = {"partitions": "0-3", "partial": True}
    assert who_answered(warming).startswith("partitions 0-3; PARTIAL: ")
    assert who_answered({"partitions": "all", "partial": False}) == "partitions all"
    assert who_answered({"shards": [], "missing": ["0"], "partial": True}).startswith(
        "shards none; missing shards 0; PARTIAL"
    )


def test_the_footer_counts_the_freshness_of_the_repositories_shown() -> None:
    shown = {"a": {"status": "fresh"}, "b": {"status": "updating"}, "c": {"status": "fresh"}}
    assert statuses(shown) == "2 fresh, 1 updating"
    assert statuses({}) == "none shown"
    assert (repositories(1), repositories(0), repositories(3)) == (
        "1 repository",
        "0 repositories",
        "3 repositories",
    )
