"""Neighborhoods on real code bases (sympy, django from their wheels), in process.

    python -m tests.bench.neighborhoods [--corpus sympy|django|both] [--edits 40]

Per corpus, after a full build of the code graph (untimed):

a. cold: `recluster` from scratch: time, neighborhoods, modularity, the share of files in
   one-file neighborhoods, and how well neighborhoods match the top-level packages
   (``django/db/...`` -> ``db``): normalized mutual information (arithmetic mean);
b. one-file edits: ``--edits`` planned edits (graph_edits: body edits, added and renamed
   functions, deletions and re-creations), each folded into the file graph and
   reclustered warm from the previous snapshot: time (the recluster alone), the share of
   files (present before and after) that keep their neighborhood id, and the modularity
   against a from-scratch run on the same graph;
c. a 50-file commit: 50 planned edits applied at once, then one warm recluster, measured
   the same way;
d. the worker's event loop during a cold recluster: a 1 ms ticker runs on the loop while
   the recluster runs as the worker runs it (`Reclusterer.take` on the loop, `compute`
   in a thread), and, for comparison, on the loop itself; the longest gap between ticks.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any

from deploy.logging_setup import configure_logging
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from processors.neighborhoods.reclusterer import Reclusterer
from stores.neighborhoods import NeighborhoodSnapshot
from stores.projections.graph_state import FileGraphState
from tests.bench import harness
from tests.bench.graph_edits import EditPlanner, edit_event, referenced_functions
from tests.bench.harness import progress
from tests.bench.package_tree import CORPORA, build_index, package_tree

NAME = "neighborhoods"
SEED = 20240101
SETTINGS = ReclusterSettings()


def nmi(a: Mapping[str, str], b: Mapping[str, str]) -> float:
    """Normalized mutual information of two labelings of the same items (arithmetic)."""
    items = sorted(a.keys() & b.keys())
    n = len(items)
    if n == 0:
        return math.nan
    pa, pb = Counter(a[i] for i in items), Counter(b[i] for i in items)
    joint = Counter((a[i], b[i]) for i in items)
    mi = sum(c / n * math.log(c * n / (pa[x] * pb[y])) for (x, y), c in joint.items())
    ha = -sum(c / n * math.log(c / n) for c in pa.values())
    hb = -sum(c / n * math.log(c / n) for c in pb.values())
    return 1.0 if ha + hb == 0 else 2 * mi / (ha + hb)


def package_of(path: str) -> str:
    """The top-level package under the distribution's root: django/db/x.py -> db."""
    parts = path.split("/")
    return parts[1] if len(parts) > 2 else "(root)"


def kept_share(before: NeighborhoodSnapshot, after: NeighborhoodSnapshot) -> float:
    old, new = before.membership(), after.membership()
    common = old.keys() & new.keys()
    return sum(old[p] == new[p] for p in common) / len(common) if common else 1.0


def warm_step(graph: FileGraphState, previous: NeighborhoodSnapshot) -> dict[str, Any]:
    started = time.perf_counter()
    snapshot = recluster(graph, previous, SETTINGS, now=0.0)
    seconds = time.perf_counter() - started
    scratch = recluster(graph, None, SETTINGS, now=0.0)
    return {
        "snapshot": snapshot,
        "ms": seconds * 1000,
        "kept": kept_share(previous, snapshot),
        "modularity": snapshot.modularity,
        "scratch_modularity": scratch.modularity,
        "changes": len(snapshot.changes),
    }


def bench_corpus(name: str, edits: int) -> dict[str, Any]:
    tree = package_tree(name)
    progress(f"{name} {tree.version}: {len(tree.files)} files; building the code graph")
    index, stamp = build_index(tree)
    graph = FileGraphState.of(index.state)
    started = time.perf_counter()
    cold = recluster(graph, None, SETTINGS, now=0.0)
    cold_ms = (time.perf_counter() - started) * 1000
    sizes = Counter(n.size for n in cold.neighborhoods)
    packages = {p: package_of(p) for p in graph.files}
    result: dict[str, Any] = {
        "corpus": {"name": name, "version": tree.version, "files": len(tree.files)},
        "cold": {
            "ms": cold_ms,
            "source_files": len(graph.files),
            "arcs": len(graph.graph().arcs),
            "neighborhoods": len(cold.neighborhoods),
            "clusters": sum(n.kind == "cluster" for n in cold.neighborhoods),
            "largest": max(sizes),
            "singleton_share": sizes.get(1, 0) / len(graph.files),
            "modularity": cold.modularity,
            "packages": len(set(packages.values())),
            "nmi_packages": nmi(cold.membership(), packages),
        },
    }
    progress(f"cold recluster {cold_ms:.0f} ms, NMI {result['cold']['nmi_packages']:.3f}")

    planner = EditPlanner(tree.files, referenced_functions(index.state), SEED)
    steps, previous = [], cold
    for edit in planner.plan(edits):
        delta = index.handle(edit_event(stamp, edit), 0.0)
        assert delta is not None
        if graph.apply(delta) and graph.changed_seq == delta.seq:
            step = warm_step(graph, previous)
            previous = step.pop("snapshot")
            steps.append({"kind": edit.kind, **step})
    result["edits"] = summarize(steps, edits)
    progress(f"{len(steps)} of {edits} edits moved the file graph; reclustered warm")

    for edit in planner.plan(50):
        delta = index.handle(edit_event(stamp, edit), 0.0)
        assert delta is not None
        graph.apply(delta)
    commit = warm_step(graph, previous)
    commit.pop("snapshot")
    result["commit_50"] = commit
    progress(f"50-file commit: {commit['ms']:.0f} ms, kept {commit['kept']:.4f}")

    stalls: dict[str, list[dict[str, float]]] = {"thread": [], "loop": []}
    for _ in range(3):
        for way in stalls:
            stalls[way].append(asyncio.run(loop_stall(graph, offload=way == "thread")))
    result["loop_stall"] = {
        way: {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        for way, runs in stalls.items()
    }
    progress(
        "event loop's longest stall during a cold recluster (median of 3): "
        + ", ".join(
            f"{way} {r['longest_stall_ms']:.0f} ms (recluster {r['recluster_ms']:.0f} ms)"
            for way, r in result["loop_stall"].items()
        )
    )
    return result


async def loop_stall(graph: FileGraphState, offload: bool) -> dict[str, float]:
    """The longest the event loop went without running a 1 ms ticker while ``graph`` was
    reclustered cold: in a thread (``offload``) or on the loop."""
    reclusterer = Reclusterer(SETTINGS)
    reclusterer.graphs[graph.repo] = graph
    stop, gaps = asyncio.Event(), [0.0]

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    watching = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    started = time.perf_counter()
    if offload:
        job = reclusterer.take(graph.repo, 0.0)
        await asyncio.to_thread(reclusterer.compute, job)
    else:
        reclusterer.run(graph.repo, 0.0)
    took = time.perf_counter() - started
    stop.set()
    await watching
    return {"recluster_ms": took * 1000, "longest_stall_ms": max(gaps) * 1000}


def summarize(steps: list[dict[str, Any]], edits: int) -> dict[str, Any]:
    if not steps:
        return {"edits": edits, "reclustered": 0}
    ms = sorted(s["ms"] for s in steps)
    return {
        "edits": edits,
        "reclustered": len(steps),
        "p50_ms": statistics.median(ms),
        "p95_ms": ms[max(0, math.ceil(0.95 * len(ms)) - 1)],
        "max_ms": ms[-1],
        "kept_mean": statistics.fmean(s["kept"] for s in steps),
        "kept_min": min(s["kept"] for s in steps),
        "modularity_mean": statistics.fmean(s["modularity"] for s in steps),
        "scratch_modularity_mean": statistics.fmean(s["scratch_modularity"] for s in steps),
    }


def report(results: dict[str, dict[str, Any]]) -> str:
    rows = []
    for r in results.values():
        c, e, m = r["cold"], r["edits"], r["commit_50"]
        rows.append(
            [
                f"{r['corpus']['name']} {r['corpus']['version']}",
                c["source_files"],
                c["neighborhoods"],
                f"{c['singleton_share']:.3f}",
                f"{c['nmi_packages']:.3f} ({c['packages']} packages)",
                f"{c['modularity']:.3f}",
                f"{c['ms']:.0f}",
                f"{e.get('p50_ms', math.nan):.0f} / {e.get('p95_ms', math.nan):.0f}",
                f"{e.get('kept_mean', math.nan):.4f} (min {e.get('kept_min', math.nan):.4f})",
                f"{e.get('modularity_mean', math.nan):.3f} vs "
                f"{e.get('scratch_modularity_mean', math.nan):.3f}",
                f"{m['ms']:.0f} ms, kept {m['kept']:.4f}, "
                f"Q {m['modularity']:.3f} vs {m['scratch_modularity']:.3f}",
                f"{r['loop_stall']['thread']['longest_stall_ms']:.0f} "
                f"(on the loop: {r['loop_stall']['loop']['longest_stall_ms']:.0f})",
            ]
        )
    header = [
        "corpus",
        "source files",
        "neighborhoods",
        "files in 1-file neighborhoods",
        "NMI vs top-level packages",
        "modularity",
        "cold ms",
        "one-file edit: recluster p50 / p95 ms",
        "files keeping their neighborhood",
        "modularity warm vs scratch",
        "50-file commit",
        "event loop's longest stall in a cold recluster, ms",
    ]
    return harness.markdown_table(header, rows)


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", choices=(*CORPORA, "both"), default="both")
    cli.add_argument("--edits", type=int, default=40)
    args = cli.parse_args()
    configure_logging("warning")
    names = CORPORA if args.corpus == "both" else (args.corpus,)
    results = {name: bench_corpus(name, args.edits) for name in names}
    print(report(results))
    payload = {"benchmark": NAME, "machine": harness.machine(), "seed": SEED, "results": results}
    progress(f"wrote {harness.write_json(NAME, payload)}")


if __name__ == "__main__":
    main()
