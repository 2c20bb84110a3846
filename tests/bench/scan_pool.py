"""A full scan's build in one process against one with a parse pool (issue 21).

    python -m tests.bench.scan_pool [--corpus sympy] [--copies 1 2] [--workers 1 2]

No broker: the events of a full scan of the package tree (``--copies`` N: N copies of it
in one tree, under ``copyK/``) are built first (untimed), then handled by a fresh
`RepoIndex` in batches of 200 events (the worker's ``batch_max``); with the pool, each
batch is first `RepoIndex.prepare`-d in a `ParsePool` of ``--workers`` processes (each
count given is a run; default: the cores less one, as the worker's default),
started before the clock (the worker keeps its pool). Per run: wall seconds, this
process's CPU seconds (the pool's workers not included), the barrier's seconds, the
time in the cyclic collector, and a digest of every delta encoded as the worker
publishes it: the runs with and without the pool must agree, byte for byte. Each run
is a fresh interpreter; runs are interleaved; the exponent k compares the largest
copies against one (time ∝ size^k).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from deploy.cli import GC_THRESHOLDS
from deploy.logging_setup import configure_logging
from processors.indexer import RepoIndex
from processors.parse_pool import ParsePool, available_cores
from stores.deltas import encode_delta
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import CORPORA, GcMeter, package_tree, scan_events
from tests.factories import Stamp

NAME = "scan_pool"
BATCH = 200


def build(name: str, copies: int, workers: int) -> dict[str, Any]:
    configure_logging("warning")
    gc.set_threshold(*GC_THRESHOLDS)
    tree = package_tree(name)
    files = {
        (f"copy{c}/" if copies > 1 else "") + path: data
        for c in range(copies)
        for path, data in tree.files.items()
    }
    events = scan_events(files, Stamp(repo=name))
    pool = ParsePool(workers) if workers > 0 else None
    if pool is not None:  # started untimed: a worker starts its pool once
        pool.ahead("warm", [(f"w{i}.py", b"x = 1\n") for i in range(pool.min_files)]).cancel()
        time.sleep(3)
    index = RepoIndex(name)
    digest = hashlib.sha256()
    gc.collect()
    load = os.getloadavg()[0]
    with GcMeter() as collector:
        started, cpu = time.perf_counter(), time.process_time()
        body = events[:-1]
        for at in range(0, len(body), BATCH):
            batch = body[at : at + BATCH]
            if pool is not None:
                index.prepare(batch, pool)
            for event in batch:
                delta = index.handle(event, 0.0)
                assert delta is not None
                digest.update(encode_delta(delta))
        barrier_at = time.perf_counter()
        delta = index.handle(events[-1], 0.0)
        assert delta is not None
        ended, cpu_s = time.perf_counter(), time.process_time() - cpu
    digest.update(encode_delta(delta))
    if pool is not None:
        pool.close()
    return {
        "corpus": name,
        "version": tree.version,
        "copies": copies,
        "workers": workers,
        "files": len(files),
        "mb": sum(map(len, files.values())) / 1e6,
        "s": ended - started,
        "cpu_s": cpu_s,
        "barrier_s": ended - barrier_at,
        "gc_s": collector.seconds,
        "nodes": len(index.state.nodes),
        "edges": len(index.state.edges),
        "deltas_sha256": digest.hexdigest(),
        "load_average": [load, os.getloadavg()[0]],
    }


def isolated(name: str, copies: int, workers: int) -> dict[str, Any]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as runner:
        return runner.submit(build, name, copies, workers).result()


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", choices=CORPORA, default="sympy")
    cli.add_argument("--copies", type=int, nargs="+", default=[1, 2])
    cli.add_argument("--workers", type=int, nargs="+", default=[max(1, available_cores() - 1)])
    args = cli.parse_args()
    runs: list[dict[str, Any]] = []
    for copies in args.copies:
        for workers in (0, *args.workers):
            run = isolated(args.corpus, copies, workers)
            progress(
                f"{copies}x {args.corpus}, workers {workers}: {run['s']:.1f} s"
                f" (CPU {run['cpu_s']:.1f}, barrier {run['barrier_s']:.1f},"
                f" gc {run['gc_s']:.1f}), load {run['load_average'][0]:.2f}"
            )
            runs.append(run)
    rows = []
    for run in runs:
        one = next(
            r for r in runs if r["copies"] == min(args.copies) and r["workers"] == run["workers"]
        )
        alike = next(r for r in runs if r["copies"] == run["copies"] and r["workers"] == 0)
        ratio = run["copies"] / one["copies"]
        k = math.log(run["s"] / one["s"]) / math.log(ratio) if ratio > 1 else None
        rows.append(
            [
                f"{run['copies']}x {run['corpus']} {run['version']}",
                run["workers"] or "in process",
                run["files"],
                round(run["s"], 1),
                round(run["cpu_s"], 1),
                round(run["barrier_s"], 1),
                round(run["gc_s"], 1),
                "" if k is None else f"{k:.2f}",
                "yes" if run["deltas_sha256"] == alike["deltas_sha256"] else "NO",
                f"{run['load_average'][0]:.1f}",
            ]
        )
    header = [
        "tree",
        "workers",
        "files",
        "build s",
        "CPU s (this process)",
        "barrier s",
        "gc s",
        "k (time ∝ size^k)",
        "deltas = in process",
        "load",
    ]
    print(harness.markdown_table(header, rows))
    payload = {"benchmark": NAME, "machine": harness.machine(), "runs": runs}
    progress(f"wrote {harness.write_json(NAME, payload)}")


if __name__ == "__main__":
    main()
