"""``gazetteer up`` restarted on its data dir, against a cold ``up`` (issue 16).

    python -m tests.bench.up_restart [--corpus django|sympy] [--embedder none]

On a private clone of the django or sympy corpus (`tests.bench.corpus`, from its wheel), three
runs of a real ``gazetteer up`` process with its embedded broker, one after the other,
on one data dir and topic namespace:

- ``cold``: an empty data dir: a full scan;
- ``unchanged``: started again after a Ctrl-C, nothing changed; once fresh, it waits
  for the worker's background resolution of the restored repository
  (``resolution_warmed``: ``warmed_s``, its CPU and longest slice), then the changed
  file is edited once in the working tree (no commit) and ``edit_visible_s`` is the time
  from that write until its details show the new symbol (issue 16: what an agent's
  first edit after a restart waits for); the edit is undone before the stop;
- ``one_changed``: started again after one file was edited and committed.

Measured per run, from the process's start: ``url_s`` (the "Gazetteer is serving"
line), ``fresh_s`` (``/repositories`` says ``fresh`` at the head commit) and, for the
changed file, ``visible_s`` (its details show the new symbol); ``stop_s`` (Ctrl-C to
exit, which writes the last snapshots), the scans the log shows (``full``, files read)
and the snapshot's size on disk. The machine may be shared: the numbers say which.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.bench import harness
from tests.bench.corpus import clone, git, package_repo
from tests.e2e.cli import Gazetteer

NAME = "up_restart"
CHANGED = {"django": "django/utils/text.py", "sympy": "sympy/core/basic.py"}
MARK = "\n\ndef gazetteer_restart_probe():\n    return 'probe'\n"
EDIT = "\n\ndef gazetteer_edit_probe():\n    return 'edit'\n"


def _repository(url: str) -> dict[str, Any] | None:
    try:
        items = httpx.get(f"{url}/repositories", timeout=10).json().get("items", [])
    except httpx.HTTPError:
        return None
    return items[0] if len(items) == 1 else None


def _wait(check: Any, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return time.monotonic()
        time.sleep(0.1)
    raise TimeoutError(f"not reached within {timeout} s")


def one_run(
    label: str, root: Path, data: Path, env: dict[str, str], timeout: float, changed: str
) -> dict:
    head = git(root, "rev-parse", "HEAD")
    started = time.monotonic()
    up = Gazetteer(["up", str(root), "--port", "0"], data, **env)
    try:
        url = up.url(timeout=timeout)
        url_at = time.monotonic()

        def fresh() -> bool:
            item = _repository(url)
            return bool(
                item
                and item["freshness"]["status"] == "fresh"
                and item["freshness"]["indexed_commit"] == head
            )

        fresh_at = _wait(fresh, timeout)
        rid = (_repository(url) or {})["repo"]

        def symbols() -> list[str]:
            detail = httpx.get(f"{url}/repositories/{rid}/files/{changed}", timeout=10).json()
            return [s["name"] for s in detail.get("symbols", [])]

        def visible() -> bool:
            return "gazetteer_restart_probe" in symbols()

        visible_at = _wait(visible, timeout) if label == "one_changed" else None
        warmed: dict[str, Any] = {}
        if label == "unchanged":
            warmed = _edit_after_warm_up(up, root / changed, symbols, started, timeout)
        stopping = time.monotonic()
        code = up.interrupt(timeout=120)
        stopped = time.monotonic()
    finally:
        up.kill()
    scans = [(s["full"], s["files_total"]) for s in up.log_events("scan_started")]
    written = up.log_events("state_snapshot_written")
    loaded = up.log_events("state_snapshot_loaded")
    snap = data / "state" / env["GAZETTEER_NAMESPACE"] / f"{rid}.snap"
    result = {
        "run": label,
        "url_s": round(url_at - started, 2),
        "fresh_s": round(fresh_at - started, 2),
        "visible_s": None if visible_at is None else round(visible_at - started, 2),
        "stop_s": round(stopped - stopping, 2),
        "exit": code,
        "scans": scans,
        "snapshot_mb": round(snap.stat().st_size / 1e6, 2) if snap.exists() else None,
        "snapshot_load_s": [e.get("seconds") for e in loaded],
        "snapshot_writes": [(e.get("seq"), e.get("capture_s"), e.get("seconds")) for e in written],
        "rejected": [e.get("reason") for e in up.log_events("state_snapshot_rejected")],
        **warmed,
    }
    harness.progress(f"{label}: {result}")
    return result


def _edit_after_warm_up(
    up: Gazetteer, path: Path, symbols: Any, started: float, timeout: float
) -> dict[str, Any]:
    """Wait for the restored repository's warm-up, edit ``path`` once, time until the
    edit shows, then undo it (and wait until that shows too)."""
    warmed_at = _wait(lambda: up.log_events("resolution_warmed"), timeout)
    warm = up.log_events("resolution_warmed")[0]
    original = path.read_text()
    wrote = time.monotonic()
    path.write_text(original + EDIT)
    shown = _wait(lambda: "gazetteer_edit_probe" in symbols(), timeout)
    path.write_text(original)
    _wait(lambda: "gazetteer_edit_probe" not in symbols(), timeout)
    return {
        "warmed_s": round(warmed_at - started, 2),
        "warm_up": {
            k: warm.get(k)
            for k in ("files", "slices", "seconds", "cpu_s", "max_slice_ms", "max_slice_cpu_ms")
        },
        "edit_visible_s": round(shown - wrote, 2),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus, changed = package_repo(args.corpus), CHANGED[args.corpus]
    env = {
        "GAZETTEER_NAMESPACE": f"ur{uuid.uuid4().hex[:8]}",
        "GAZETTEER_LOG_FORMAT": "json",
        "GAZETTEER_EMBEDDER": args.embedder,
    }
    with tempfile.TemporaryDirectory(prefix="gz-up-restart-") as tmp:
        work = clone(corpus, Path(tmp) / args.corpus)
        data = Path(tmp) / "data"
        runs = [one_run("cold", work.root, data, env, args.timeout, changed)]
        runs.append(one_run("unchanged", work.root, data, env, args.timeout, changed))
        path = work.root / changed
        path.write_text(path.read_text() + MARK)
        git(work.root, "commit", "-qam", "restart probe")
        runs.append(one_run("one_changed", work.root, data, env, args.timeout, changed))
    table = harness.markdown_table(
        [
            "run",
            "serving (s)",
            "fresh (s)",
            "change visible (s)",
            "edit after warm-up visible (s)",
            "stop (s)",
            "scans",
            "snapshot MB",
        ],
        [
            [
                r["run"],
                r["url_s"],
                r["fresh_s"],
                r["visible_s"] if r["visible_s"] is not None else "-",
                r.get("edit_visible_s", "-"),
                r["stop_s"],
                " ".join(f"{'full' if f else 'diff'}:{n}" for f, n in r["scans"]),
                r["snapshot_mb"],
            ]
            for r in runs
        ],
    )
    print(table)
    return {
        "benchmark": NAME,
        "machine": harness.machine(),
        "corpus": {"name": args.corpus, "version": corpus.version, "files": corpus.files},
        "embedder": args.embedder,
        "runs": runs,
        "table": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--corpus", choices=sorted(CHANGED), default="django")
    parser.add_argument("--embedder", default="none", help="GAZETTEER_EMBEDDER of the runs")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    path = harness.write_json(NAME, run(args))
    harness.progress(f"wrote {path}")


if __name__ == "__main__":
    main()
