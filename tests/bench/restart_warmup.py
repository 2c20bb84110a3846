"""The first edit after a restore from a resolved snapshot, cold and after the warm-up.

    python -m tests.bench.restart_warmup [--corpus sympy|django]

A full scan of the package's tree builds a `RepoIndex` (untimed); its state is captured as
a resolved snapshot, encoded and decoded (as the data dir's file). One edit (a function
appended to a core module, as tests.bench.up_restart commits) is then handled by three
indexes: the one that never stopped (an ordinary change), one restored from the snapshot
and edited at once (today's first change after a restart: every file resolved), and one
restored and warmed first by `processors.resolution_warmup.warm_up`, as the worker does
while idle (its total, its time on the loop's thread, its longest slice, and the growth
of the process's resident memory it brings: the answers held, as after a first change).
The three deltas must be equal (their time of application aside). Times are wall clock
and CPU of this process; the machine may be shared: the output says its load.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import time
from typing import Any

from processors.indexer import RepoIndex
from processors.resolution_warmup import warm_up
from stores.deltas import GraphDelta
from stores.state_snapshot import capture, decode, encode
from tests.bench import harness
from tests.bench.graph_build import rss_mb
from tests.bench.package_tree import build_index, package_tree, scan_event

NAME = "restart_warmup"
CHANGED = {"django": "django/utils/text.py", "sympy": "sympy/core/basic.py"}
MARK = b"\n\ndef gazetteer_restart_probe():\n    return 'probe'\n"


def _timed_edit(index: RepoIndex, event: Any) -> tuple[GraphDelta, dict[str, float]]:
    before = index.graph.resolved_files
    wall, cpu = time.perf_counter(), time.process_time()
    delta = index.handle(event, now=0.0)
    took = {
        "edit_s": round(time.perf_counter() - wall, 3),
        "edit_cpu_s": round(time.process_time() - cpu, 3),
        "files_resolved": index.graph.resolved_files - before,
    }
    assert delta is not None
    return delta, took


def _settled() -> None:
    """As the worker's HeapSettler after a large restore: collect, then freeze the heap."""
    gc.collect()
    gc.freeze()


def _restored(raw: bytes) -> RepoIndex:
    """An index restored from the snapshot ``raw``, the previous one's garbage collected
    first and the heap settled after, so that each edit is timed alike."""
    gc.unfreeze()
    gc.collect()
    index = RepoIndex.from_snapshot(decode(raw))
    _settled()
    return index


def run(args: argparse.Namespace) -> dict[str, Any]:
    tree = package_tree(args.corpus)
    path = CHANGED[args.corpus]
    started = time.perf_counter()
    index, stamp = build_index(tree)
    built_s = time.perf_counter() - started
    raw = encode(capture(index.state, resolved=index.graph.state_resolved))
    edit = scan_event(stamp, path, tree.files[path] + MARK, origin="watch")
    harness.progress(f"built in {built_s:.1f} s, snapshot {len(raw) / 1e6:.1f} MB")
    _settled()
    expected, ordinary = _timed_edit(index, edit)
    harness.progress(f"ordinary: {ordinary}")
    del index
    cold_index = _restored(raw)
    cold_delta, cold = _timed_edit(cold_index, edit)
    harness.progress(f"cold: {cold}")
    del cold_index
    warm_index = _restored(raw)
    rss_before = rss_mb()
    done = asyncio.run(warm_up(args.corpus, warm_index))
    gc.collect()
    warmup = {
        "files": done.files,
        "slices": done.slices,
        "seconds": done.seconds,
        "cpu_s": done.cpu_s,
        "max_slice_ms": done.max_slice_ms,
        "max_slice_cpu_ms": done.max_slice_cpu_ms,
        "mean_slice_ms": round(done.cpu_s * 1000 / max(done.slices, 1), 1),
        "completed": done.completed,
        "rss_growth_mb": round(rss_mb() - rss_before),  # the answers now held
    }
    harness.progress(f"warm-up: {warmup}")
    warm_delta, warmed = _timed_edit(warm_index, edit)
    harness.progress(f"warmed: {warmed}")
    bare = lambda d: d.model_copy(update={"applied_at": 0.0})  # noqa: E731
    assert bare(cold_delta) == bare(expected) == bare(warm_delta), "the deltas differ"
    runs = {"never stopped": ordinary, "restored, cold": cold, "restored, warmed": warmed}
    table = harness.markdown_table(
        ["first edit", "wall (s)", "CPU (s)", "files resolved"],
        [[label, r["edit_s"], r["edit_cpu_s"], r["files_resolved"]] for label, r in runs.items()],
    )
    print(table)
    return {
        "benchmark": NAME,
        "machine": harness.machine(),
        "load": os.getloadavg(),
        "corpus": {"name": tree.name, "version": tree.version, "files": len(tree.files)},
        "build_s": round(built_s, 1),
        "snapshot_mb": round(len(raw) / 1e6, 2),
        "ordinary": ordinary,
        "cold": cold,
        "warm_up": warmup,
        "warmed": warmed,
        "delta_changes": expected.changes,
        "table": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--corpus", choices=sorted(CHANGED), default="sympy")
    args = parser.parse_args()
    path = harness.write_json(NAME, run(args))
    harness.progress(f"wrote {path}")


if __name__ == "__main__":
    main()
