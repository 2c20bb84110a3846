"""The distributed pieces as their own processes: broker, workers, watcher, query services.

The second test runs the layout of a deployment on loopback (one broker, two workers,
two query replicas, one watcher following two repositories), crashes a worker and a
replica with SIGKILL, and checks that the survivors index every later commit, that no
answer says ``fresh`` before its edit is in, and that the state equals a fresh build.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.cli import Gazetteer, answers, eventually, fresh_at, get, pid_alive
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
        for part in reversed(parts):
            part.kill()


ALPHA = {
    "pkg/__init__.py": "",
    "pkg/core.py": "class Engine:\n    def start(self):\n        pass\n",
    "pkg/old.py": "OLD = 1\n",
}
BETA = {"lib/index.js": "export function run() {}\n", "lib/math.js": "export const PI = 3;\n"}
BEFORE = {"alpha": ("pkg/core.py", ["Engine", "start"]), "beta": ("lib/index.js", ["run"])}
CRASH_EDITS = {
    "alpha": ("pkg/core.py", ["Engine", "start", "stop"]),
    "beta": ("lib/index.js", ["run", "halt"]),
}
LATER_EDITS = {
    "alpha": ("pkg/new.py", ["boot", "shutdown"]),
    "beta": ("lib/math.js", ["PI", "square"]),
}
TANSU_PID = re.compile(r"broker_started.*pid=(\d+)")
SCAN_OR_COMMIT = ("freshness", "origin", "commit", "working_tree")
"""What a file's answer says about how it was indexed, not about the file."""


def edit_after_the_crash(repos: dict[str, GitRepo]) -> dict[str, str]:
    alpha, beta = repos["alpha"], repos["beta"]
    alpha.write(
        "pkg/core.py",
        "class Engine:\n    def start(self):\n        pass\n\n    def stop(self):\n        pass\n",
    )
    alpha.write("pkg/new.py", "from pkg.core import Engine\n\n\ndef boot():\n    return Engine()\n")
    (alpha.root / "pkg/old.py").unlink()
    beta.write("lib/index.js", "export function run() {}\n\nexport function halt() {}\n")
    return {name: repo.commit("after the crash") for name, repo in repos.items()}


def edit_after_the_takeover(repos: dict[str, GitRepo]) -> dict[str, str]:
    alpha, beta = repos["alpha"], repos["beta"]
    alpha.write(
        "pkg/new.py",
        "from pkg.core import Engine\n\n\ndef boot():\n    return Engine()\n\n\n"
        "def shutdown():\n    return None\n",
    )
    beta.write(
        "lib/math.js", "export const PI = 3;\n\nexport function square(x) {\n  return x * x;\n}\n"
    )
    return {name: repo.commit("after the takeover") for name, repo in repos.items()}


def tracked(repo: GitRepo) -> list[str]:
    return sorted(repo.git("ls-files").split())


def built_fresh(url: str, rid: str) -> dict:
    """The answers that do not depend on how the state was reached (scan or edits)."""
    found = answers(url, rid, SCAN_OR_COMMIT)
    summary = found.pop("summary")
    found["counts"] = {k: summary[k] for k in ("name", "branch", "files", "symbols", "edges")}
    return found


def dirty_and_fresh(url: str, rid: str, head: str) -> bool:
    freshness = get(url, f"/repositories/{rid}/freshness")
    return freshness["working_tree_dirty"] and fresh_at(url, rid, head)


def owners(workers: list[Gazetteer]) -> dict[str, tuple[int, int]]:
    """repo -> (the worker that indexed its last event, the partition); from debug logs."""
    last: dict[str, tuple[str, int, int]] = {}
    for i, worker in enumerate(workers):
        for record in worker.log_events("event_indexed"):
            seen = last.get(record["repo"])
            if seen is None or record["timestamp"] > seen[0]:
                last[record["repo"]] = (record["timestamp"], i, record["partition"])
    return {repo: (i, partition) for repo, (_, i, partition) in last.items()}


def never_fresh_early(
    url: str, rid: str, repo: GitRepo, edit: tuple[str, list[str]], head: str, statuses: set[str]
) -> bool:
    """Poll once; whenever an answer is fresh for the new head, it shows the new content.

    Each answer carries the freshness of the state it was read from. Before the watcher
    reports the commit, an old answer may rightly say fresh; once the answer knows the new
    head, fresh must mean the edit is in. Returns whether the edit is in and fresh."""
    path, symbols = edit
    detail = get(url, f"/repositories/{rid}/files/{path}")
    page = get(url, f"/repositories/{rid}/files", limit=1000)
    seen = [
        (detail["freshness"], [s["name"] for s in detail["symbols"]], symbols),
        (page["freshness"], [f["path"] for f in page["items"]], tracked(repo)),
    ]
    for freshness, content, expected in seen:
        statuses.add(freshness["status"])
        if freshness["status"] == "fresh":
            assert freshness["indexed_commit"] == freshness["head_commit"], freshness
            if freshness["head_commit"] == head:
                assert content == expected, (rid, freshness, content)
    return all(f["status"] == "fresh" and f["indexed_commit"] == head for f, _, _ in seen)


def test_a_crashed_worker_and_replica_lose_nothing_and_never_claim_fresh_early(
    tmp_path: Path,
) -> None:
    repos = {
        "alpha": GitRepo.create(tmp_path / "alpha", ALPHA),
        "beta": GitRepo.create(tmp_path / "beta", BETA),
    }
    data = tmp_path / "data"
    # The takeover waits out the session timeout: 6 s, the least Kafka accepts by default
    # (group.min.session.timeout.ms) and the settings' default (faust's own is 60 s).
    env = {
        "GAZETTEER_PARTITIONS": "4",
        "GAZETTEER_SESSION_TIMEOUT_S": "6",
        "GAZETTEER_EMBEDDER": "none",
    }
    # Debug logs say which worker indexed which repository's events, on which partition.
    worker_env = {**env, "GAZETTEER_LOG_FORMAT": "json", "GAZETTEER_LOG_LEVEL": "debug"}
    broker = Gazetteer(["broker"], data)
    parts: list[Gazetteer] = [broker]
    try:
        bootstrap = broker.wait_for_line(BOOTSTRAP).group(1)
        workers = [Gazetteer(["--broker", bootstrap, "worker"], data, **worker_env) for _ in "ab"]
        replicas = [
            Gazetteer(["--broker", bootstrap, "serve", "--port", "0"], data, **env) for _ in "ab"
        ]
        parts += [*workers, *replicas]
        urls = [r.url() for r in replicas]
        for worker in workers:
            eventually(lambda w=worker: bool(w.log_events("worker_started")), 60, "the workers")
        roots = [str(r.root) for r in repos.values()]
        watch = Gazetteer(["--broker", bootstrap, "watch", *roots], data, **env)
        parts.append(watch)

        eventually(
            lambda: all(get(url, "/repositories")["total"] == 2 for url in urls), 60, "both repos"
        )
        ids = {r["name"]: r["repo"] for r in get(urls[0], "/repositories")["items"]}
        eventually(
            lambda: all(
                fresh_at(url, ids[name], repo.head())
                for url in urls
                for name, repo in repos.items()
            ),
            60,
            "both replicas fresh on both repositories",
        )
        # A saved edit in each repository, indexed: the latest evidence of who owns which.
        repos["alpha"].write("pkg/__init__.py", "# probe\n")
        repos["beta"].write("lib/math.js", BETA["lib/math.js"] + "// probe\n")
        eventually(
            lambda: all(
                dirty_and_fresh(url, rid, repos[name].head())
                for url in urls
                for name, rid in ids.items()
            ),
            30,
            "the saved edits",
        )
        before = {name: answers(urls[0], rid) for name, rid in ids.items()}
        assert {name: answers(urls[1], rid) for name, rid in ids.items()} == before
        for name, repo in repos.items():
            assert [f["path"] for f in before[name]["files"]] == tracked(repo)
            path, symbols = BEFORE[name]
            assert [s["name"] for s in before[name]["details"][path]["symbols"]] == symbols

        # Crash the worker that indexes alpha (beta too, if it is on the same one), and a
        # replica; then commit in both repositories.
        owned = owners(workers)
        assert set(owned) == set(ids.values()), owned
        victim_index = owned[ids["alpha"]][0]
        victim, survivor = workers[victim_index], workers[1 - victim_index]
        orphans = {p for i, p in owned.values() if i == victim_index}
        orphaned_repos = [name for name, rid in ids.items() if owned[rid][0] == victim_index]
        restores_before = len(survivor.log_events("partition_restored"))
        assert victim.crash() == -9
        assert replicas[1].crash() == -9
        heads = edit_after_the_crash(repos)

        url = urls[0]
        statuses: dict[str, set[str]] = {name: set() for name in repos}

        def indexed(edits: dict[str, tuple[str, list[str]]], heads: dict[str, str]) -> bool:
            return all(
                [
                    never_fresh_early(
                        url, rid, repos[name], edits[name], heads[name], statuses[name]
                    )
                    for name, rid in ids.items()
                ]
            )

        eventually(lambda: indexed(CRASH_EDITS, heads), 60, "the survivors to index both commits")
        # The crashed worker's repositories waited for the takeover, and said so.
        assert all("updating" in statuses[name] for name in orphaned_repos), statuses
        restored = survivor.log_events("partition_restored")[restores_before:]
        assert orphans <= {r["partition"] for r in restored if r["deltas"] > 0}, restored

        new_file = get(url, f"/repositories/{ids['alpha']}/files/pkg/new.py")
        assert [s["name"] for s in new_file["symbols"]] == ["boot"]
        assert new_file["depends_on"] == ["pkg/core.py"]

        # Commits after the takeover: the survivor now indexes every partition.
        heads = edit_after_the_takeover(repos)
        eventually(lambda: indexed(LATER_EDITS, heads), 30, "the commits after the takeover")
        after = {name: answers(url, rid) for name, rid in ids.items()}
        assert after["alpha"]["details"]["pkg/core.py"]["imported_by"] == ["pkg/new.py"]

        # A new replica, rebuilt from the log, answers exactly as the survivor does; and
        # what the log went through equals one process scanning the files afresh.
        third = Gazetteer(["--broker", bootstrap, "serve", "--port", "0"], data, **env)
        reference = Gazetteer(["up", *roots, "--port", "0"], tmp_path / "reference", **env)
        parts += [third, reference]
        url_3 = third.url()
        eventually(
            lambda: all(fresh_at(url_3, rid, heads[name]) for name, rid in ids.items()),
            60,
            "the new replica",
        )
        assert {name: answers(url_3, rid) for name, rid in ids.items()} == after

        url_ref = reference.url()
        eventually(
            lambda: all(fresh_at(url_ref, rid, heads[name]) for name, rid in ids.items()),
            60,
            "the reference `up`",
        )
        for rid in ids.values():
            assert built_fresh(url, rid) == built_fresh(url_ref, rid)

        running = [watch, survivor, replicas[0], third, reference, broker]
        pids = [p.pid for p in running] + [
            int(m.group(1)) for p in (broker, reference) if (m := TANSU_PID.search(p.log_text()))
        ]
        assert len(pids) == len(running) + 2, "no broker_started line with the broker's pid"
        for part in running:
            assert part.interrupt() == 0, part.log_text()[-2000:]
        assert [pid for pid in pids if pid_alive(pid)] == []
        # Only the crashed worker left its run directory behind.
        assert [d.name for d in (data / "runs").iterdir()] == [f"worker-{victim.pid}"]
    finally:
        for part in reversed(parts):
            part.kill()


def test_parts_whose_broker_is_gone_stop_on_a_second_ctrl_c(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "app", {"pkg/core.py": "class Engine:\n    pass\n"})
    data = tmp_path / "data"
    broker = Gazetteer(["broker"], data)
    parts: list[Gazetteer] = [broker]
    try:
        bootstrap = broker.wait_for_line(BOOTSTRAP).group(1)
        env = {"GAZETTEER_PARTITIONS": "2", "GAZETTEER_EMBEDDER": "none"}
        worker = Gazetteer(["--broker", bootstrap, "worker"], data, **env)
        watch = Gazetteer(["--broker", bootstrap, "watch", str(repo.root)], data, **env)
        parts += [worker, watch]
        eventually(lambda: "worker_started" in worker.log_text(), 60, "the worker")
        eventually(lambda: "scan_completed" in watch.log_text(), 60, "the scan")
        assert broker.interrupt() == 0

        # Without a broker a stopping watcher cannot send its last status, and a worker
        # cannot leave its group; a second Ctrl-C ends them anyway, at once.
        for part in (watch, worker):
            code = part.interrupt_twice()
            assert code == 130 or (code == 0 and "stop_forced" not in part.log_text())
    finally:
        for part in reversed(parts):
            part.kill()
