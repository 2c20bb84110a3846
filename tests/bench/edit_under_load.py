"""How long a saved edit takes to show while clients hammer search, under ``gazetteer up``.

    python -m tests.bench.edit_under_load [--package pydantic] [--clients 20] [--edits 3]

A copy of an installed package becomes a git repository; ``gazetteer up`` indexes it
(GAZETTEER_EMBEDDER=none unless --embedder says otherwise); once it is fresh,
``--clients`` threads ask ``/search`` in a loop while the bench saves ``--edits`` edits,
one at a time, and times each from the save until the file's symbols show the new
function. Reported: the edits' delays, search latency (p50/p95) and ``/health`` latency
during the load. The issue-15 numbers (one event loop for every part, then one process
per part) were measured with this script.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from tests.bench.query_latency import percentile
from tests.e2e.cli import Gazetteer, eventually, get
from tests.gitrepo import GitRepo

SITE = Path(sys.prefix) / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
QUESTIONS = ("validate a model field", "json schema", "serialize", "alias generator", "config")


def hammer(url: str, rid: str, stop: threading.Event, seconds: list[float]) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        i = 0
        while not stop.is_set():
            started = time.perf_counter()
            client.get(f"/repositories/{rid}/search", params={"q": QUESTIONS[i % 5]})
            seconds.append(time.perf_counter() - started)
            i += 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--package", default="pydantic")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--embedder", default="none")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gazetteer-bench-"))
    source = SITE / "site-packages" / args.package
    files = {
        str(p.relative_to(source.parent)): p.read_text(errors="replace")
        for p in sorted(source.rglob("*.py"))
    }
    repo = GitRepo.create(tmp / "repo", files)  # type: ignore[arg-type]
    env = {"GAZETTEER_EMBEDDER": args.embedder}
    up = Gazetteer(["up", str(repo.root), "--port", "0"], tmp / "data", **env)
    try:
        url = up.url(120)
        started = time.monotonic()

        def fresh() -> bool:
            items = get(url, "/repositories")["items"]
            return bool(items) and items[0]["freshness"]["status"] == "fresh"

        eventually(fresh, 600, "the first index")
        print(f"indexed {len(files)} files in {time.monotonic() - started:.1f} s", flush=True)
        rid = get(url, "/repositories")["items"][0]["repo"]
        stop, seconds, health = threading.Event(), [], []
        clients = [
            threading.Thread(target=hammer, args=(url, rid, stop, seconds), daemon=True)
            for _ in range(args.clients)
        ]
        for client in clients:
            client.start()
        time.sleep(5)
        target = sorted(files)[len(files) // 2]
        delays = []
        for n in range(args.edits):
            name = f"bench_marker_{n}"
            repo.write(target, files[target] + f"\n\ndef {name}():\n    return {n}\n")
            saved = time.monotonic()

            def shows(name: str = name) -> bool:
                began = time.perf_counter()
                detail = get(url, f"/repositories/{rid}/files/{target}")
                health.append(time.perf_counter() - began)
                return name in [s["name"] for s in detail["symbols"]]

            eventually(shows, 300, f"edit {n}")
            delays.append(time.monotonic() - saved)
            time.sleep(2)
        stop.set()
        for client in clients:
            client.join(60)
        print(
            f"edits visible after (s): {[round(d, 1) for d in delays]}"
            f" (median {statistics.median(delays):.1f})\n"
            f"search under {args.clients} clients: {len(seconds)} requests,"
            f" p50 {percentile(seconds, 0.5):.3f} s, p95 {percentile(seconds, 0.95):.3f} s\n"
            f"file detail while loaded: p50 {percentile(health, 0.5):.3f} s,"
            f" p95 {percentile(health, 0.95):.3f} s",
            flush=True,
        )
    finally:
        up.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
