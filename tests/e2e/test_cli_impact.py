"""``gazetteer impact REPO`` as a user runs it (issue 20): git diff run in a real
checkout of the repository the service indexed, the diff sent, the answer printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.cli import run_cli
from tests.e2e.query_service import indexed_model, query_service
from tests.gitrepo import GitRepo
from tests.unit.test_retrieval_api import FILES

pytestmark = pytest.mark.e2e

CHANGED = (
    "# changed\n"
    "modified  app/models.py  L4\n"
    "  app/models.py:L2-4  Response.iter_content  METHOD\n"
    "# dependents\n"
    "1  app/sessions.py:L8-9  resolve_redirects  CALLS name_match\n"
    "# tests\n"
    "tests/test_sessions.py  graph  hop 1  (app/sessions.py)\n"
    "# neighborhoods\n"
    "app  1 changed, 1 dependent; entry app/models.py*, app/sessions.py*\n"
    "# risk medium\n"
    "  1 direct and 0 transitive dependents\n"
    "  1 public change no test reaches: sym:app/models.py:Response.iter_content\n"
)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with query_service(indexed_model()) as served:
        yield served


@pytest.fixture
def checkout(tmp_path: Path) -> GitRepo:
    """The indexed files committed (c1), and a commit changing iter_content's body."""
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    repo.write("app/models.py", FILES["app/models.py"].replace("[chunk_size]", "[chunk_size, 1]"))
    repo.commit("iter_content returns two")
    return repo


def test_a_commit_range_is_diffed_here_and_its_impact_printed(url: str, checkout: GitRepo) -> None:
    root = str(checkout.root)
    done = run_cli("impact", "app-1", "--diff-range", "HEAD~1..HEAD", "--root", root, "--url", url)
    assert (done.returncode, done.stdout) == (0, CHANGED), done.stderr
    # Stale: no producer has reported for the repository (the model is fed directly).
    assert done.stderr == "# 1 of 1 dependents, 1 of 1 tests; 491 of 4000 tokens; index stale\n"
    # The same change on a branch, uncommitted, and piped in.
    checkout.git("branch", "feature")
    checkout.git("reset", "-q", "--hard", "HEAD~1")
    branch = run_cli("impact", "app-1", "--branch", "feature", "--root", root, "--url", url)
    assert (branch.returncode, branch.stdout) == (0, CHANGED), branch.stderr
    checkout.git("merge", "-q", "--ff-only", "feature")
    checkout.git("reset", "-q", "--soft", "HEAD~1")
    uncommitted = run_cli("impact", "app-1", "--root", root, "--url", url)
    assert (uncommitted.returncode, uncommitted.stdout) == (0, CHANGED), uncommitted.stderr
    diff = checkout.git("diff", "HEAD") + "\n"
    piped = run_cli("impact", "app-1", "--diff-file", "-", "--url", url, stdin=diff)
    assert (piped.returncode, piped.stdout) == (0, CHANGED), piped.stderr


def test_files_and_symbols_without_git(url: str) -> None:
    files = run_cli("impact", "app-1", "--files", "app/models.py", "--depth", "1", "--url", url)
    assert files.returncode == 0, files.stderr
    assert files.stdout.splitlines()[:2] == ["# changed", "modified  app/models.py  whole"]
    symbols = run_cli("impact", "app-1", "--symbols", "Session.send", "--url", url)
    assert symbols.stdout.splitlines()[:3] == [
        "# changed",
        "modified  app/sessions.py  ",
        "  app/sessions.py:L4-6  Session.send  METHOD",
    ]
    assert "# risk low\n" in symbols.stdout


def test_what_cannot_be_answered_exits_2_with_the_reason(url: str, checkout: GitRepo) -> None:
    root = str(checkout.root)
    bad = run_cli("impact", "app-1", "--diff-range", "nope..HEAD", "--root", root, "--url", url)
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.startswith("gazetteer impact: git diff nope..HEAD in ")
    outside = run_cli("impact", "app-1", "--files", "../x.py", "--url", url)
    assert (outside.returncode, outside.stderr) == (
        2,
        "gazetteer impact: paths outside the repository: '../x.py' (HTTP 400)\n",
    )
    empty = run_cli("impact", "app-1", "--root", root, "--url", url)
    assert (empty.returncode, empty.stderr) == (
        0,
        "gazetteer impact: the diff is empty: nothing changed\n",
    )
