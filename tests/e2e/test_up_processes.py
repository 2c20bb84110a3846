"""``gazetteer up`` as a supervisor (issue 15): one process per part, restarted when
killed, none outliving ``up``, and a Ctrl-C that stops it whenever it comes.

The tests learn the parts' pids from the supervisor's ``part_started`` and
``part_restarted`` log lines (role, pid), and find leftovers by the data directory that
every process started for a test carries in its environment (tests/e2e/cli.py).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.cli import Gazetteer, eventually, get, pid_alive, processes_of
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

ENV = {"GAZETTEER_LOG_FORMAT": "json", "GAZETTEER_EMBEDDER": "none"}
ROLES = {"serve", "worker", "watch"}


def started(up: Gazetteer) -> dict[str, int]:
    """The latest pid of each part, from the supervisor's log."""
    pids: dict[str, int] = {}
    for record in up.log_events("part_started") + up.log_events("part_restarted"):
        pids[record["role"]] = record["pid"]
    return pids


def symbols(url: str, rid: str, path: str) -> list[str] | None:
    """The file's symbols; None while the service does not know the file."""
    response = httpx.get(f"{url}/repositories/{rid}/files/{path}", timeout=10)
    if response.status_code == 404:
        return None
    response.raise_for_status()
    return [s["name"] for s in response.json()["symbols"]]


def test_each_part_runs_in_its_own_process_and_a_killed_worker_is_replaced(
    tmp_path: Path,
) -> None:
    repo = GitRepo.create(tmp_path / "app", {"pkg/core.py": "class Engine:\n    pass\n"})
    data = tmp_path / "data"
    up = Gazetteer(["up", str(repo.root), "--port", "0"], data, **ENV)
    try:
        url = up.url(120)

        def fresh() -> bool:
            items = get(url, "/repositories")["items"]
            return bool(items) and items[0]["freshness"]["status"] == "fresh"

        eventually(fresh, 120, "the first index")
        pids = started(up)
        assert set(pids) == ROLES
        assert len(set(pids.values())) == 3 and up.pid not in pids.values()
        assert all(pid_alive(pid) for pid in pids.values())
        rid = get(url, "/repositories")["items"][0]["repo"]

        repo.write("pkg/core.py", "class Engine:\n    def start(self):\n        pass\n")
        eventually(lambda: symbols(url, rid, "pkg/core.py") == ["Engine", "start"], 60, "edit")

        worker = pids["worker"]
        os.kill(worker, signal.SIGKILL)
        eventually(lambda: started(up)["worker"] != worker, 60, "the worker's restart")
        assert [(e["role"], e["pid"], e["code"]) for e in up.log_events("part_exited")] == [
            ("worker", worker, -9)
        ]
        assert pid_alive(started(up)["worker"]) and not pid_alive(worker)

        repo.write("pkg/later.py", "def boot():\n    pass\n")
        eventually(lambda: fresh() and symbols(url, rid, "pkg/later.py") == ["boot"], 90, "edit")

        # /metrics shows every part: the query service's own series, and the others'
        # with their part label.
        response = httpx.get(url + "/metrics", timeout=10)
        samples = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(response.text)
            for s in family.samples
        }
        file_events = "gazetteer.file-events.v1"
        scraped = {
            p: samples[("gazetteer_part_scraped", (("part", p),))] for p in ("worker", "watch")
        }
        assert scraped == {"worker": 1.0, "watch": 1.0}
        assert (
            samples[
                ("gazetteer_events_produced_total", (("part", "watch"), ("topic", file_events)))
            ]
            >= 3
        )
        assert (
            samples[
                ("gazetteer_events_consumed_total", (("part", "worker"), ("topic", file_events)))
            ]
            >= 1
        )
        assert (
            samples[("gazetteer_events_consumed_total", (("topic", "gazetteer.graph-deltas.v1"),))]
            >= 1
        )

        assert up.interrupt() == 0
        assert processes_of(data) == [], "a part or the broker outlived gazetteer up"
        assert not list((data / "runs").glob("*")), "run directories left behind"
        assert "Traceback" not in up.log_text()
    finally:
        up.kill()


def test_a_dead_broker_comes_back_on_its_port_and_a_killed_up_leaves_nothing(
    tmp_path: Path,
) -> None:
    repo = GitRepo.create(tmp_path / "app", {"x.py": "X = 1\n"})
    data = tmp_path / "data"
    up = Gazetteer(["up", str(repo.root), "--port", "0"], data, **ENV)
    try:
        up.url(120)
        eventually(lambda: set(started(up)) == ROLES, 60, "the parts")
        [broker] = up.log_events("broker_started")
        os.kill(broker["pid"], signal.SIGKILL)
        eventually(lambda: bool(up.log_events("broker_restarted")), 60, "the broker's restart")
        [restarted] = up.log_events("broker_restarted")
        assert restarted["port"] == broker["port"] and restarted["pid"] != broker["pid"]
        assert pid_alive(restarted["pid"])
        assert len(processes_of(data)) == 5  # up, the broker, three parts

        assert up.crash() == -9
        eventually(lambda: processes_of(data) == [], 45, "every child of the killed up to exit")
    finally:
        up.kill()


@pytest.mark.parametrize("after_s", [0.5, 4.0])
def test_ctrl_c_in_the_first_seconds_stops_promptly_and_leaves_nothing(
    tmp_path: Path, after_s: float
) -> None:
    """0.5 s: ``up`` still imports; 4 s: its parts are starting."""
    repo = GitRepo.create(tmp_path / "app", {"x.py": "X = 1\n"})
    data = tmp_path / "data"
    up = Gazetteer(["up", str(repo.root), "--port", "0"], data, **ENV)
    try:
        time.sleep(after_s)
        assert up.interrupt(timeout=20) == 0
        assert processes_of(data) == []
        assert "Traceback" not in up.log_text()
    finally:
        up.kill()
