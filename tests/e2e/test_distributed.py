"""The distributed pieces as their own processes: broker, worker, watcher, query service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.cli import Gazetteer, eventually, get
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

BOOTSTRAP = re.compile(r"^(kafka://\S+)$")


def test_broker_worker_watch_and_serve_run_as_separate_processes(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "app", {"pkg/core.py": "class Engine:\n    pass\n"})
    data = tmp_path / "data"
    broker = Gazetteer(["broker"], data)
    parts: list[Gazetteer] = [broker]
    try:
        url_of_broker = broker.wait_for_line(BOOTSTRAP).group(1)
        env = {"GAZETTEER_PARTITIONS": "2"}
        serve = Gazetteer(["--broker", url_of_broker, "serve", "--port", "0"], data, **env)
        worker = Gazetteer(["--broker", url_of_broker, "worker"], data, **env)
        watch = Gazetteer(["--broker", url_of_broker, "watch", str(repo.root)], data, **env)
        parts += [serve, worker, watch]
        url = serve.url()

        def fresh() -> bool:
            items = get(url, "/repositories")["items"]
            return bool(items) and items[0]["freshness"]["status"] == "fresh"

        eventually(fresh, 60, "the repository to be indexed by the separate worker")
        rid = get(url, "/repositories")["items"][0]["repo"]
        repo.write("pkg/core.py", "class Engine:\n    def start(self):\n        pass\n")

        def edit_seen() -> bool:
            detail = get(url, f"/repositories/{rid}/files/pkg/core.py")
            return [s["name"] for s in detail["symbols"]] == ["Engine", "start"]

        eventually(edit_seen, 30, "the saved edit")

        # Stopping the watcher is visible: the answer says it can no longer vouch.
        assert watch.interrupt() == 0
        eventually(
            lambda: get(url, f"/repositories/{rid}/freshness")["status"] == "stale", 30, "stale"
        )
        for part in (worker, serve, broker):
            assert part.interrupt() == 0, part.log_text()[-2000:]
    finally:
        for part in parts:
            part.kill()
