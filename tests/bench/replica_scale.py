"""A query replica's ready time and memory against the number of repositories (issue 16).

    python -m tests.bench.replica_scale [--broker embedded|kafka] [--copies 10 30]
        [--subtree django/db] [--writes 0]

For each count: that many copies of one real subtree of the django corpus
(`tests.bench.corpus`; ``django/db``: 122 files, 2.2 MB), each its own git repository, are
indexed by a worker that publishes its state snapshots on the broker (in process, on a
real broker, a fresh namespace per count), ``--writes`` saves of one file of the first
copy are made on top (a history), and once the topic's snapshot of every copy covers its
last delta, a separate ``gazetteer serve`` process with an empty data dir is started
against the same topics, timed from its start to ``/health`` saying ready, and its
resident memory read then (``VmRSS``). A replica of an empty namespace is measured the
same way first: its RSS is the baseline subtracted, per 1,000 files. Memory per file and
ready time should grow with the code (the copies), not with the history (``--writes``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from deploy.runtime import state_topic
from deploy.settings import Settings
from query.read_model import ReadModel
from tests.bench import harness
from tests.bench.corpus import django_repo, git

NAME = "replica_scale"


def copies_of(subtree: Path, count: int, into: Path) -> list[Path]:
    roots = []
    for i in range(count):
        root = into / f"copy{i:03}"
        shutil.copytree(subtree, root / subtree.name)
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "copy")
        roots.append(root)
    return roots


def file_count(root: Path) -> int:
    return sum(1 for p in root.rglob("*") if p.is_file())


def saves_of(root: Path) -> tuple[Path, str]:
    """The file the history is written to (the first Python file over 2 KB), its text."""
    edited = next(p for p in sorted(root.rglob("*.py")) if p.stat().st_size > 2000)
    return edited, edited.read_text()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def serve_replica(settings: Settings, data_dir: Path) -> dict[str, Any]:
    """A `gazetteer serve` process on the settings' topics: seconds to ready, its RSS."""
    port = free_port()
    env = {
        **os.environ,
        "GAZETTEER_BROKER": settings.broker,
        "GAZETTEER_NAMESPACE": settings.namespace,
        "GAZETTEER_PARTITIONS": str(settings.partitions),
        "GAZETTEER_DATA_DIR": str(data_dir),
        "GAZETTEER_PORT": str(port),
        "GAZETTEER_EMBEDDER": "none",
    }
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = started + 900
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"serve exited {process.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    health = json.load(r)
                if health["ready"]:
                    ready_s = time.monotonic() - started
                    return {
                        "ready_s": round(ready_s, 2),
                        "rss_mb": round(rss_mb(process.pid), 1),
                        "repositories": health["repositories"],
                    }
            except OSError:
                pass
            time.sleep(0.1)
        raise TimeoutError("the replica never said ready")
    finally:
        process.terminate()
        process.wait(30)


async def one_count(
    broker: harness.RunningBroker, subtree: Path, count: int, writes: int, tmp: Path
) -> dict[str, Any]:
    roots = copies_of(subtree, count, tmp / f"repos-{count}")
    files = count * file_count(subtree)
    settings = harness.bench_settings(broker.bootstrap, tmp / f"data-{count}").model_copy(
        update={"snapshots_on_broker": True, "embedder": "none"}
    )
    model = ReadModel()
    stack = await harness.open_bench_stack(settings, model)
    try:
        baseline = await asyncio.to_thread(serve_replica, settings, tmp / f"empty-{count}")
        started = time.monotonic()
        await stack.stack.start_sources(roots)
        await _all_fresh(model, count, started)
        scan_s = time.monotonic() - started
        harness.progress(f"{count} copies ({files} files) fresh in {scan_s:.1f} s")
        if writes:
            edited, base = saves_of(roots[0])
            for i in range(writes):
                edited.write_text(base + f"\n\ndef bench_save():\n    return {i}\n")
                await asyncio.sleep(0.1)
            await _settled(model, started)
        deltas = sum(view.state.seq for view in model.repos.values())
        await _covered(stack, model)
        replica = await asyncio.to_thread(serve_replica, settings, tmp / f"replica-{count}")
    finally:
        await stack.stack.close()
    grown = replica["rss_mb"] - baseline["rss_mb"]
    result = {
        "copies": count,
        "files": files,
        "writes": writes,
        "deltas": deltas,
        "scan_s": round(scan_s, 1),
        "baseline": baseline,
        "replica": replica,
        "rss_growth_mb": round(grown, 1),
        "kb_per_file": round(grown * 1024 / files, 1),
        "mb_per_1000_files": round(grown * 1000 / files, 1),
    }
    harness.progress(f"result: {result}")
    return result


async def _all_fresh(model: ReadModel, count: int, started: float) -> None:
    while time.monotonic() < started + 1800:
        fresh = [rid for rid in model.repos if model.freshness(rid).status == "fresh"]
        if len(fresh) >= count and all(model.repos[rid].state.seq for rid in fresh):
            return
        await asyncio.sleep(0.2)
    raise TimeoutError("the copies never all said fresh")


async def _settled(model: ReadModel, started: float) -> None:
    since = None
    while time.monotonic() < started + 1800:
        quiet = all(
            model.freshness(rid).pending_events == 0 and model.freshness(rid).status == "fresh"
            for rid in model.repos
        )
        since = (since or time.monotonic()) if quiet else None
        if since is not None and time.monotonic() - since >= 2:
            return
        await asyncio.sleep(0.1)
    raise TimeoutError("never settled")


async def _covered(stack: harness.BenchStack, model: ReadModel) -> None:
    """Until the topic's snapshot of every repository covers its last delta."""
    topic = state_topic(stack.settings, stack.stack.cluster)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        offered = await topic.latest(range(stack.settings.partitions))
        behind = [
            rid
            for rid, view in model.repos.items()
            if rid not in offered or offered[rid].header.seq < view.state.seq
        ]
        if not behind:
            return
        await asyncio.sleep(2)
    raise TimeoutError(f"snapshots behind: {behind[:5]}")


async def measure(args: argparse.Namespace, broker: harness.RunningBroker) -> dict[str, Any]:
    corpus = django_repo()
    subtree = corpus.root / args.subtree
    rows = []
    with tempfile.TemporaryDirectory(prefix="gz-replica-scale-") as tmp:
        for count in args.copies:
            rows.append(await one_count(broker, subtree, count, args.writes, Path(tmp)))
    return {
        "broker": harness.BROKERS[broker.kind],
        "corpus": f"django {corpus.version}: {args.subtree}",
        "rows": rows,
        "machine": harness.machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--broker", choices=["embedded", "kafka"], default="embedded")
    parser.add_argument("--copies", type=int, nargs="+", default=[10, 30])
    parser.add_argument("--subtree", default="django/db")
    parser.add_argument("--writes", type=int, default=0)
    args = parser.parse_args()

    async def run() -> dict[str, Any]:
        async with harness.running_broker(args.broker) as broker:
            return await measure(args, broker)

    payload = asyncio.run(run())
    print(
        harness.markdown_table(
            ["copies", "files", "deltas", "ready s", "RSS growth MB", "KB per file"],
            [
                [
                    r["copies"],
                    r["files"],
                    r["deltas"],
                    r["replica"]["ready_s"],
                    r["rss_growth_mb"],
                    r["kb_per_file"],
                ]
                for r in payload["rows"]
            ],
        )
    )
    print(f"wrote {harness.write_json(NAME, payload)}")


if __name__ == "__main__":
    main()
