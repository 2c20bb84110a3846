"""``gazetteer up`` as a user runs it: several repositories, edits, commits, Ctrl-C."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.cli import Gazetteer, eventually, get, pid_alive
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

BROKER_PID = re.compile(r"broker_started.*pid=(\d+)")


def repo_by_root(url: str, root: Path) -> dict | None:
    for item in get(url, "/repositories")["items"]:
        if item["name"] == root.name:
            return item
    return None


def fresh_at(url: str, root: Path, commit: str) -> bool:
    item = repo_by_root(url, root)
    return (
        item is not None
        and item["freshness"]["status"] == "fresh"
        and item["freshness"]["indexed_commit"] == commit
    )


def test_up_indexes_two_repositories_follows_commits_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    a = GitRepo.create(tmp_path / "a", {"svc/api.py": "def handler():\n    return 1\n"})
    b = GitRepo.create(tmp_path / "b", {"lib/index.js": "export function f() {}\n"})
    up = Gazetteer(["up", str(a.root), str(b.root), "--port", "0"], tmp_path / "data")
    try:
        url = up.url()
        eventually(lambda: fresh_at(url, a.root, a.head()), 60, "repository a")
        eventually(lambda: fresh_at(url, b.root, b.head()), 60, "repository b")
        ids = {str(root): (repo_by_root(url, root) or {})["repo"] for root in (a.root, b.root)}
        assert ids[str(a.root)].startswith("a-") and ids[str(b.root)].startswith("b-")

        a.write("svc/api.py", "def handler():\n    return 2\n\ndef health():\n    return 'ok'\n")
        head = a.commit("health endpoint")
        eventually(lambda: fresh_at(url, a.root, head), 30, "the commit")
        detail = get(url, f"/repositories/{ids[str(a.root)]}/files/svc/api.py")
        assert [s["name"] for s in detail["symbols"]] == ["handler", "health"]
        assert detail["commit"] == head

        # The worker reclusters after the commit: one neighborhood, stamped current.
        def clustered() -> bool:
            page = get(url, f"/repositories/{ids[str(a.root)]}/neighborhoods")
            stamp = page["snapshot"]
            return stamp["seq"] is not None and not stamp["stale"] and page["total"] == 1

        eventually(clustered, 30, "the neighborhoods after the commit")
        overview = get(url, f"/repositories/{ids[str(a.root)]}/overview")
        assert overview["sizes"]["source_files"] == 1
        assert overview["languages"][0]["language"] == "python"

        broker_pid = int(BROKER_PID.search(up.log_text()).group(1))  # type: ignore[union-attr]
        assert pid_alive(broker_pid)
        assert up.interrupt() == 0
        assert not pid_alive(broker_pid), "the embedded broker outlived gazetteer up"
        assert "stop_requested" in up.log_text() and "broker_stopped" in up.log_text()
        assert not list((tmp_path / "data" / "runs").glob("*")), "run directories left behind"
    finally:
        up.kill()


def test_a_second_up_on_the_same_machine_does_not_collide(tmp_path: Path) -> None:
    a = GitRepo.create(tmp_path / "a", {"x.py": "X = 1\n"})
    b = GitRepo.create(tmp_path / "b", {"y.py": "Y = 1\n"})
    # Both ask for the same port and share a data directory.
    first = Gazetteer(["up", str(a.root), "--port", "18765"], tmp_path / "data")
    second = Gazetteer(["up", str(b.root), "--port", "18765"], tmp_path / "data")
    try:
        url_a, url_b = first.url(), second.url()
        assert url_a != url_b
        eventually(lambda: fresh_at(url_a, a.root, a.head()), 60, "the first up")
        eventually(lambda: fresh_at(url_b, b.root, b.head()), 60, "the second up")
        assert [r["name"] for r in get(url_a, "/repositories")["items"]] == [a.root.name]
        assert [r["name"] for r in get(url_b, "/repositories")["items"]] == [b.root.name]
        assert first.interrupt() == 0
        assert get(url_b, "/health")["status"] == "ok"
        assert second.interrupt() == 0
    finally:
        first.kill()
        second.kill()


def test_bad_arguments_get_clear_errors(tmp_path: Path) -> None:
    missing = Gazetteer(["up", str(tmp_path / "nope")], tmp_path / "data")
    assert missing.proc.wait(30) != 0
    missing.kill()
    assert "is not a directory" in missing.log_text()
    worker = Gazetteer(["worker"], tmp_path / "data")
    assert worker.proc.wait(30) == 2
    assert "needs --broker" in worker.log_text()
    lone = Gazetteer(
        ["up", str(tmp_path)],
        tmp_path / "data",
        GAZETTEER_EMBED_IN="worker",
        GAZETTEER_EMBEDDER="default",
    )
    assert lone.proc.wait(30) == 2
    assert "GAZETTEER_EMBED_IN=worker needs GAZETTEER_QDRANT_URL" in lone.log_text()
