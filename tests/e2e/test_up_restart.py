"""``gazetteer up`` stopped and started again on the same data dir (issue 16): its state
snapshots stand in for the embedded broker's lost topics, so nothing is scanned again;
one file changed meanwhile is reconciled by git diff, and every answer equals a fresh
``up``'s; the churn history served before the stop is served after it (the query side's
ledger, saved beside the snapshots), plus the reconciliation's entry."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.e2e.cli import Gazetteer, answers, eventually, get
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

FILES: dict[str, str | bytes] = {
    "pkg/__init__.py": "",
    "pkg/core.py": "class Engine:\n    def start(self):\n        return 'started'\n",
    "pkg/api.py": "from pkg.core import Engine\n\n\ndef serve():\n    return Engine().start()\n",
    "pkg/util.py": "import json\n\n\ndef dump(value):\n    return json.dumps(value)\n",
    "tests/test_api.py": "from pkg.api import serve\n\n\ndef test_serve():\n    assert serve()\n",
}
CHANGED = (
    "pkg/util.py",
    "import json\n\n\ndef dump(value):\n    return json.dumps(value)\n\n\n"
    "def load(text):\n    return json.loads(text)\n",
)
QUESTIONS = ("engine start", "dump json", "load text", "serve")
HOW_INDEXED = ("freshness", "origin", "commit", "working_tree", "indexed_at")
"""What an answer says about how a file was indexed (scan, reconcile), not about it."""


def the_repo(url: str) -> dict | None:
    items = get(url, "/repositories")["items"]
    return items[0] if len(items) == 1 else None


def fresh_at(url: str, head: str) -> bool:
    item = the_repo(url)
    return (
        item is not None
        and item["freshness"]["status"] == "fresh"
        and item["freshness"]["indexed_commit"] == head
    )


def served(url: str, rid: str) -> dict:
    """Files, file details, counts and search hits, without how each file was indexed."""
    found = answers(url, rid, HOW_INDEXED)
    summary = found.pop("summary")
    found["counts"] = {k: summary[k] for k in ("name", "branch", "files", "symbols", "edges")}
    found["files"] = [{k: v for k, v in f.items() if k not in HOW_INDEXED} for f in found["files"]]
    found["search"] = {
        q: [
            (hit["path"], hit.get("lines"))
            for hit in get(url, f"/repositories/{rid}/search", q=q)["items"]
        ]
        for q in QUESTIONS
    }
    return found


def churn(url: str, rid: str) -> list[dict]:
    """Every churn entry with its detail (without its freshness, which is the moment's)."""
    items = get(url, f"/repositories/{rid}/churn", limit=100, max_tokens=50000)["items"]
    out = []
    for item in items:
        detail = get(url, f"/repositories/{rid}/churn/{item['id']}", max_tokens=50000)
        detail.pop("freshness")
        out.append(detail)
    return out


def settled_churn(url: str, rid: str) -> list[dict]:
    """The churn once the scan's neighborhoods are in it: a scan's entry gains them when
    the recluster lands, a moment after `fresh` (the stop's ledger holds them)."""
    seen: list[list[dict]] = []

    def settled() -> bool:
        hoods = get(url, f"/repositories/{rid}/neighborhoods")["total"]
        seen.append(churn(url, rid))
        return hoods > 0 and len(seen) > 1 and seen[-1] == seen[-2]

    eventually(settled, 60, "the scan's neighborhoods in its churn entry")
    return seen[-1]


def up(root: Path, data: Path, namespace: str) -> Gazetteer:
    env = {
        "GAZETTEER_NAMESPACE": namespace,
        "GAZETTEER_LOG_FORMAT": "json",
        "GAZETTEER_EMBEDDER": "none",
    }
    return Gazetteer(["up", str(root), "--port", "0"], data, **env)


def test_up_restarts_from_its_snapshots_reconciles_one_change_and_answers_as_fresh(
    tmp_path: Path,
) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    data, namespace = tmp_path / "data", f"rs{uuid.uuid4().hex[:8]}"
    first = up(repo.root, data, namespace)
    parts = [first]
    try:
        url = first.url(timeout=120)
        eventually(lambda: fresh_at(url, repo.head()), 90, "the first scan")
        rid = (the_repo(url) or {})["repo"]
        assert first.log_events("scan_started")[0]["full"] is True
        history = settled_churn(url, rid)
        assert [(e["kind"], e["commit"]) for e in history] == [("scan", repo.head())]
        assert first.interrupt() == 0
        snapshot = data / "state" / namespace / f"{rid}.snap"
        assert snapshot.is_file(), "the clean stop wrote no state snapshot"
        assert snapshot.with_suffix(".churn").is_file(), "the clean stop wrote no ledger"

        repo.write(*CHANGED)
        head = repo.commit("load")
        second = up(repo.root, data, namespace)
        parts.append(second)
        url = second.url(timeout=120)
        eventually(lambda: fresh_at(url, head), 60, "the restarted up")
        # Reconciled by git diff from the snapshot's commit: one file read, not a scan.
        scans = second.log_events("scan_started")
        assert [(s["full"], s["files_total"]) for s in scans] == [(False, 1)]
        assert [s["full"] for s in second.log_events("scan_completed")] == [False]
        assert second.log_events("reconcile_fell_back") == []
        assert second.log_events("state_snapshot_rejected") == []
        assert [e["repo"] for e in second.log_events("index_restored_from_snapshot")] == [rid]
        # The churn history as served before the stop, then the reconciliation's entry.
        assert second.log_events("churn_ledger_rejected") == []
        assert [e["repo"] for e in second.log_events("churn_ledger_loaded")] == [rid]
        after = churn(url, rid)
        assert after[: len(history)] == history
        assert [(e["commit"], e["files_changed"]) for e in after[len(history) :]] == [(head, 1)]
        detail = get(url, f"/repositories/{rid}/files/{CHANGED[0]}")
        assert [s["name"] for s in detail["symbols"]] == ["dump", "load"]
        assert detail["commit"] == head
        restarted = served(url, rid)
        assert second.interrupt() == 0

        reference = up(repo.root, tmp_path / "reference", f"rf{uuid.uuid4().hex[:8]}")
        parts.append(reference)
        url = reference.url(timeout=120)
        eventually(lambda: fresh_at(url, head), 90, "the reference up")
        assert served(url, rid) == restarted
    finally:
        for part in parts:
            part.kill()


def test_a_corrupt_snapshot_falls_back_to_a_full_scan(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    data, namespace = tmp_path / "data", f"rs{uuid.uuid4().hex[:8]}"
    first = up(repo.root, data, namespace)
    parts = [first]
    try:
        url = first.url(timeout=120)
        eventually(lambda: fresh_at(url, repo.head()), 90, "the first scan")
        rid = (the_repo(url) or {})["repo"]
        assert first.interrupt() == 0
        snapshot = data / "state" / namespace / f"{rid}.snap"
        raw = snapshot.read_bytes()
        snapshot.write_bytes(raw[: len(raw) // 2])

        second = up(repo.root, data, namespace)
        parts.append(second)
        url = second.url(timeout=120)
        eventually(lambda: fresh_at(url, repo.head()), 90, "the restarted up")
        assert [s["full"] for s in second.log_events("scan_started")] == [True]
        reasons = {e["reason"] for e in second.log_events("state_snapshot_rejected")}
        assert reasons == {"truncated"}
        assert sorted(f["path"] for f in get(url, f"/repositories/{rid}/files")["items"]) == sorted(
            FILES
        )
        assert second.interrupt() == 0
    finally:
        for part in parts:
            part.kill()
