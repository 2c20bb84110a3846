"""A repository of everything a producer must survive, indexed as a user runs Gazetteer.

The corpus (tests/badrepo.py) holds names that are not UTF-8, unreadable files and
directories, symlinks out of the repository (one to /etc), loops, a FIFO, a socket, a
binary and a file over the cap beside ordinary files; more of the same is made while
the watcher runs. Through `gazetteer up` and through the split layout (`broker`,
`worker`, `watch`, `serve` as their own processes) no process exits, every path has a
record with its reason, the ordinary files are intact, and `fresh` is reached.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.badrepo import BadRepo, make_bad_repo, make_live_bad_changes
from tests.e2e.cli import Gazetteer, eventually, get

pytestmark = pytest.mark.e2e

MAX_BYTES = 1000
BOOTSTRAP = re.compile(r"^(kafka://\S+)$")
ENV = {"GAZETTEER_MAX_FILE_BYTES": str(MAX_BYTES), "GAZETTEER_PARTITIONS": "2"}


def records(url: str, rid: str) -> dict[str, str | None]:
    """Every file the index holds: path -> skip reason (None: indexed)."""
    page = get(url, f"/repositories/{rid}/files", limit=1000)
    assert page["total"] == len(page["items"])
    return {item["path"]: item["skipped"] for item in page["items"]}


def the_repository(url: str) -> dict | None:
    items = get(url, "/repositories")["items"]
    return items[0] if items else None


def check_index(url: str, bad: BadRepo, extra_skipped: dict[str, str], *logs: Gazetteer) -> str:
    """Wait for `fresh` with every expected record; return the repository id. On a
    miss, the failure shows the watcher's and worker's own account (``logs``)."""
    expected = {**bad.expected(), **extra_skipped}
    seen: dict[str, str | None] = {}
    last: dict = {}  # the last freshness answered

    def indexed() -> bool:
        nonlocal seen, last
        repo = the_repository(url)
        last = repo["freshness"] if repo else {}
        if repo is None or repo["freshness"]["status"] != "fresh":
            return False
        seen = records(url, repo["repo"])
        return all(seen.get(path, "missing") == reason for path, reason in expected.items())

    try:
        eventually(indexed, 90, "every path of the bad repository recorded")
    except AssertionError:
        wrong = {p: (seen.get(p, "missing"), r) for p, r in expected.items() if seen.get(p) != r}
        told = "\n".join(line for part in logs for line in watch_story(part))
        raise AssertionError(
            f"records differ (got, wanted): {wrong}\nlast freshness: {last}\n{told}"
        ) from None
    repo = the_repository(url)
    assert repo is not None
    rid = repo["repo"]
    for path, data in bad.indexed.items():
        detail = get(url, f"/repositories/{rid}/files/{quote(path)}")
        assert detail["content_hash"] == hashlib.sha256(data).hexdigest(), path
    # Nothing outside the repository was read: no path leads there.
    assert not [p for p in seen if p.startswith(("ext_link/", "etc_dir_link/", "live_etc/"))]
    return rid


def watch_story(part: Gazetteer) -> list[str]:
    """The log lines of ``part`` that say what its watcher saw and did."""
    return [
        line
        for line in part.log_text().splitlines()
        if any(word in line for word in ("watch", "error", "Error", "Traceback", "part_", "scan"))
    ][-120:]


def edit_shows(url: str, rid: str, bad: BadRepo) -> None:
    """An ordinary edit after all that is still indexed: the watcher carried on."""
    (bad.root / "src" / "app.py").write_text(
        "def main():\n    return 2\n\ndef after():\n    pass\n"
    )

    def seen() -> bool:
        detail = get(url, f"/repositories/{rid}/files/src/app.py")
        return [s["name"] for s in detail["symbols"]] == ["main", "after"]

    eventually(seen, 30, "an edit made after the bad changes")


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_up_survives_a_bad_repository_and_records_every_path(tmp_path: Path, git: bool) -> None:
    bad = make_bad_repo(tmp_path / "bad", git=git, max_bytes=MAX_BYTES)
    up = Gazetteer(
        ["--log-format", "json", "up", str(bad.root), "--port", "0"], tmp_path / "data", **ENV
    )
    try:
        url = up.url()
        rid = check_index(url, bad, {})
        live = make_live_bad_changes(bad.root)
        check_index(url, bad, live, up)
        edit_shows(url, rid, bad)
        assert up.proc.poll() is None, "gazetteer up exited"
        assert [e["role"] for e in up.log_events("part_started")] == ["watch", "worker", "serve"]
        assert not up.log_events("part_exited"), "a part of gazetteer up exited"
        assert up.interrupt() == 0
    finally:
        up.kill()
        bad.cleanup()


def test_the_split_layout_survives_a_bad_repository(tmp_path: Path) -> None:
    bad = make_bad_repo(tmp_path / "bad", git=True, max_bytes=MAX_BYTES)
    data = tmp_path / "data"
    broker = Gazetteer(["broker"], data)
    parts = [broker]
    try:
        address = broker.wait_for_line(BOOTSTRAP).group(1)
        serve = Gazetteer(["--broker", address, "serve", "--port", "0"], data, **ENV)
        worker = Gazetteer(["--broker", address, "worker"], data, **ENV)
        watch = Gazetteer(["--broker", address, "watch", str(bad.root)], data, **ENV)
        parts += [serve, worker, watch]
        url = serve.url()
        rid = check_index(url, bad, {})
        live = make_live_bad_changes(bad.root)
        check_index(url, bad, live, watch, worker)
        edit_shows(url, rid, bad)
        for part in parts:
            assert part.proc.poll() is None, part.log_text()[-2000:]
        for part in (watch, worker, serve, broker):
            assert part.interrupt() == 0, part.log_text()[-2000:]
    finally:
        for part in reversed(parts):
            part.kill()
        bad.cleanup()
