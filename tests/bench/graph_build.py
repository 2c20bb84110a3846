"""The code graph on real code bases (sympy, django from their wheels), in process.

    python -m tests.bench.graph_build [--corpus sympy|django|both] [--edits 200]

No broker: the events a full scan would send are built first (untimed), then fed to a
`RepoIndex` as the worker feeds them. Per corpus:

a. raw parse: `tree.parser(language).parse(bytes)` over every file whose language we
   parse (configuration files aside): the physical limit;
b. full build: a fresh RepoIndex handles a FileChanged(origin="scan") per file, then
   ScanCompleted. Broken down: `parse_file` (timed through the index's injectable
   parser), the barrier (the ScanCompleted handle, where the scan's files resolve),
   the rest (per-file structure, folders, delta diffs, state), and of the whole, the
   time in Python's cyclic garbage collector. Target: within 3x of (a). Then, untimed:
   the barrier's delta encoded as the worker sends it (its size, its messages: parts of
   at most 1 MB, the seconds to encode them), and the heap settled as the worker settles
   it after a barrier (stores/heap.py; ``--no-settle`` to compare);
c. incremental: ``--edits`` single-file watch edits planned by `graph_edits` (seeded),
   each `RepoIndex.handle` timed; p50/p95/max per kind. Target: p95 under 50 ms.
   Then the 10 largest files saved 5 times each, as an editor saves: the first save
   re-parsed from scratch, the later ones from the file's previous tree. Afterwards one
   full collection is timed (the pause a settled heap avoids), and a fresh build of the
   final contents must hold the same nodes and edges;
d. memory: RSS growth over the timed build, and tracemalloc current/peak over that
   fresh build (the events built before tracing starts); counts of nodes and edges.

Each corpus runs in a fresh interpreter. The machine may be shared: wall times come
with CPU times (this process) and the load average at the start.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from typing import Any

from deploy.cli import GC_THRESHOLDS
from deploy.logging_setup import configure_logging
from processors.indexer import RepoIndex
from processors.parsing import (
    RECENT_FACTS,
    RECENT_TREES,
    language_for,
    parse_file,
)
from processors.parsing.reuse import TreeCache
from processors.parsing.splice import FactsCache
from processors.parsing.tree import parser
from stores.deltas import encode_delta, encode_parts
from stores.heap import settle
from stores.records import CONFIG_LANGUAGES
from stores.repo_state import RepoState
from tests.bench import harness
from tests.bench.graph_edits import repeated_saves, timed_edits
from tests.bench.harness import progress
from tests.bench.package_tree import (
    CORPORA,
    GcMeter,
    PackageTree,
    TimedParser,
    package_tree,
    scan_events,
)
from tests.factories import Stamp

NAME = "graph_build"
SEED = 20240101
CONFIDENCES = ("import", "same_file", "same_folder", "name_match", "structural")


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def raw_parse(tree: PackageTree) -> dict[str, Any]:
    languages = {p: language_for(p) for p in tree.files}
    files = [
        (lang, data)
        for path, data in sorted(tree.files.items())
        if (lang := languages[path]) is not None and lang not in CONFIG_LANGUAGES
    ]
    started, cpu = time.perf_counter(), time.process_time()
    for lang, data in files:
        parser(lang).parse(data)
    seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    return {
        "files": len(files),
        "mb": sum(len(d) for _, d in files) / 1e6,
        "s": seconds,
        "cpu_s": cpu_s,
    }


def full_build(
    tree: PackageTree, settle_heap: bool = True
) -> tuple[RepoIndex, Stamp, dict[str, Any]]:
    stamp = Stamp(repo=tree.name)
    events = scan_events(tree.files, stamp)
    timed = TimedParser()
    index = RepoIndex(tree.name, parse=timed)
    gc.collect()
    rss_before = rss_mb()
    with GcMeter() as collector:
        started, cpu = time.perf_counter(), time.process_time()
        for event in events[:-1]:
            index.handle(event, 0.0)
        barrier_at = time.perf_counter()
        barrier = index.handle(events[-1], 0.0)
        ended, cpu_s = time.perf_counter(), time.process_time() - cpu
    del events
    assert barrier is not None
    encoding = time.perf_counter()
    messages = encode_parts(barrier)
    encoded_s = time.perf_counter() - encoding
    # As the worker does after a scan's barrier (stores/heap.py): the edits that
    # follow see a collector that walks only what they allocate.
    settle_s, frozen = settle() if settle_heap else (0.0, 0)
    gc.collect()
    total = ended - started
    return (
        index,
        stamp,
        {
            "s": total,
            "cpu_s": cpu_s,
            "files_per_s": len(tree.files) / total,
            "mb_per_s": tree.bytes / 1e6 / total,
            "parse_file_s": timed.seconds,
            "parse_file_calls": timed.calls,
            "barrier_s": ended - barrier_at,
            "rest_s": total - timed.seconds - (ended - barrier_at),
            "gc_s": collector.seconds,
            "gc_collections": collector.collections,
            "rss_growth_mb": rss_mb() - rss_before,
            "barrier_delta_mb": len(encode_delta(barrier)) / 1e6,
            "barrier_messages": len(messages),
            "barrier_largest_message_mb": max(map(len, messages)) / 1e6,
            "barrier_encode_s": encoded_s,
            "settle_s": settle_s,
            "frozen_objects": frozen,
        },
    )


def traced_build_and_compare(files: dict[str, bytes], built: RepoState) -> dict[str, Any]:
    """A fresh build of ``files`` under tracemalloc; is it the incremental graph?"""
    stamp = Stamp(repo=built.repo)
    events = scan_events(files, stamp)
    # Caches of its own, empty: every file parsed afresh, and what the worker keeps of
    # them (the trees of the last files, the facts of the large ones) in the memory.
    index = RepoIndex(built.repo, parse=partial(parse_file, trees=TreeCache(), kept=FactsCache()))
    gc.collect()
    tracemalloc.start()
    for event in events:
        index.handle(event, 0.0)
    del events
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    fresh = index.state
    node_diff = sorted(set(fresh.nodes) ^ set(built.nodes))
    node_diff += sorted(
        i for i in fresh.nodes.keys() & built.nodes.keys() if fresh.nodes[i] != built.nodes[i]
    )
    edge_only_fresh = sorted(set(fresh.edges) - set(built.edges))
    edge_only_built = sorted(set(built.edges) - set(fresh.edges))
    edge_changed = sorted(
        k for k in fresh.edges.keys() & built.edges.keys() if fresh.edges[k] != built.edges[k]
    )
    return {
        "tracemalloc_current_mb": current / 1e6,
        "tracemalloc_peak_mb": peak / 1e6,
        "equal": not (node_diff or edge_only_fresh or edge_only_built or edge_changed),
        "nodes_differing": len(node_diff),
        "edges_only_in_fresh": len(edge_only_fresh),
        "edges_only_in_incremental": len(edge_only_built),
        "edges_differing": len(edge_changed),
        "examples": {
            "nodes": node_diff[:10],
            "only_in_fresh": edge_only_fresh[:10],
            "only_in_incremental": edge_only_built[:10],
            "differing": [(k, fresh.edges[k], built.edges[k]) for k in edge_changed[:10]],
        },
    }


def graph_counts(state: RepoState) -> dict[str, Any]:
    by_kind_confidence = Counter((e.kind, e.confidence) for e in state.edges.values())
    return {
        "nodes": len(state.nodes),
        "edges": len(state.edges),
        "nodes_by_kind": dict(sorted(Counter(n.kind for n in state.nodes.values()).items())),
        "edges_by_kind": dict(sorted(Counter(e.kind for e in state.edges.values()).items())),
        "edges_by_confidence": dict(
            sorted(Counter(e.confidence for e in state.edges.values()).items())
        ),
        "edges_by_kind_and_confidence": {
            f"{k}/{c}": n for (k, c), n in sorted(by_kind_confidence.items())
        },
    }


def isolated(
    name: str, edits: int, reuse: bool = True, settle_heap: bool = True, splice: bool = True
) -> dict[str, Any]:
    """`bench_corpus` in a fresh interpreter: RSS and the collector's work are its own."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(bench_corpus, name, edits, reuse, settle_heap, splice).result()


def bench_corpus(
    name: str, edits: int, reuse: bool = True, settle_heap: bool = True, splice: bool = True
) -> dict[str, Any]:
    configure_logging("warning")
    if not reuse:  # every parse from scratch, as before trees were kept
        RECENT_TREES.max_trees = 0
    if not splice:  # every edit parsed whole, as before facts were kept
        RECENT_FACTS.max_bytes = 0
    gc.set_threshold(*GC_THRESHOLDS)  # as every gazetteer process sets it
    tree = package_tree(name)
    load = os.getloadavg()[0]
    progress(f"{name} {tree.version}: {len(tree.files)} files, {tree.bytes / 1e6:.1f} MB")
    progress(f"load average {load:.2f} on {os.cpu_count()} CPUs (other work skews wall times)")
    raw = raw_parse(tree)
    progress(f"raw parse: {raw['files']} files in {raw['s']:.2f} s")
    index, stamp, build = full_build(tree, settle_heap)
    build["x_raw_parse"] = build["s"] / raw["s"]
    build["x_raw_parse_cpu"] = build["cpu_s"] / raw["cpu_s"]
    progress(f"full build: {build['s']:.2f} s ({build['x_raw_parse']:.1f}x raw parse)")
    counts = graph_counts(index.state)
    build["facts_kept_files"], build["facts_kept_source_mb"] = (
        len(RECENT_FACTS),
        RECENT_FACTS.source_bytes / 1e6,
    )
    spliced, declined = RECENT_FACTS.spliced, RECENT_FACTS.declined.copy()
    inc, final = timed_edits(tree.files, index, stamp, edits, SEED)
    inc["spliced"] = RECENT_FACTS.spliced - spliced  # edits re-extracted in part
    inc["splices_declined"] = dict(RECENT_FACTS.declined - declined)
    progress(
        f"incremental: {edits} edits, p95 {inc['summary']['all']['p95_ms']:.1f} ms"
        f" ({inc['spliced']} spliced, declined: {inc['splices_declined']})"
    )
    saves = repeated_saves(final, index, stamp)
    progress(
        f"repeated saves of the 10 largest files: first p50 {saves['first_save']['p50_ms']:.1f}"
        f" ms, later p50/p95 {saves['saves_after']['p50_ms']:.1f}"
        f"/{saves['saves_after']['p95_ms']:.1f} ms"
    )
    collecting = time.perf_counter()
    gc.collect()  # what a full collection costs after the edits: the pause settling avoids
    build["full_collection_after_edits_ms"] = (time.perf_counter() - collecting) * 1000
    progress(f"a full collection after the edits: {build['full_collection_after_edits_ms']:.0f} ms")
    check = traced_build_and_compare(final, index.state)
    progress(f"fresh build of the final contents equal to the incremental graph: {check['equal']}")
    return {
        "corpus": {
            "name": name,
            "version": tree.version,
            "files": len(tree.files),
            "py_files": len(tree.py_files),
            "mb": tree.bytes / 1e6,
        },
        "load_average": [load, os.getloadavg()[0]],
        "raw_parse": raw,
        "build": build,
        "counts": counts,
        "incremental": inc,
        "repeated_saves": saves,
        "fresh_check": check,
    }


Column = tuple[str, Callable[[dict[str, Any]], object]]
BUILD_COLUMNS: tuple[Column, ...] = (
    ("files", lambda r: r["corpus"]["files"]),
    ("MB", lambda r: round(r["corpus"]["mb"], 1)),
    ("raw parse s", lambda r: r["raw_parse"]["s"]),
    ("build s", lambda r: r["build"]["s"]),
    ("files/s", lambda r: round(r["build"]["files_per_s"])),
    ("MB/s", lambda r: r["build"]["mb_per_s"]),
    ("build / raw parse", lambda r: f"{r['build']['x_raw_parse']:.1f}x"),
    ("build CPU s", lambda r: r["build"]["cpu_s"]),
    ("CPU: build / raw", lambda r: f"{r['build']['x_raw_parse_cpu']:.1f}x"),
    ("parse_file s", lambda r: r["build"]["parse_file_s"]),
    ("barrier s", lambda r: r["build"]["barrier_s"]),
    ("rest s", lambda r: r["build"]["rest_s"]),
    ("of which gc s", lambda r: r["build"]["gc_s"]),
    ("barrier delta MB", lambda r: r["build"]["barrier_delta_mb"]),
    ("sent as messages", lambda r: r["build"]["barrier_messages"]),
    ("largest MB", lambda r: r["build"]["barrier_largest_message_mb"]),
    ("encoded in s", lambda r: r["build"]["barrier_encode_s"]),
    ("heap settled in s", lambda r: r["build"]["settle_s"]),
    ("full collection after the edits ms", lambda r: r["build"]["full_collection_after_edits_ms"]),
)
EDIT_COLUMNS: tuple[Column, ...] = (
    ("kind", lambda s: s["kind"]),
    ("n", lambda s: s["n"]),
    ("p50 ms", lambda s: s["p50_ms"]),
    ("p95 ms", lambda s: s["p95_ms"]),
    ("max ms", lambda s: s["max_ms"]),
    ("p95 CPU ms", lambda s: s["p95_cpu_ms"]),
    ("max gc ms", lambda s: s["max_gc_ms"]),
    ("mean edges changed", lambda s: round(s["mean_edges_changed"])),
    ("max files re-edged", lambda s: s["max_files_with_edge_changes"]),
)
SAVE_COLUMNS: tuple[Column, ...] = (
    ("first save p50 ms", lambda r: r["repeated_saves"]["first_save"]["p50_ms"]),
    ("first save max ms", lambda r: r["repeated_saves"]["first_save"]["max_ms"]),
    ("later saves p50 ms", lambda r: r["repeated_saves"]["saves_after"]["p50_ms"]),
    ("later saves p95 ms", lambda r: r["repeated_saves"]["saves_after"]["p95_ms"]),
    ("later saves max ms", lambda r: r["repeated_saves"]["saves_after"]["max_ms"]),
)
MEMORY_COLUMNS: tuple[Column, ...] = (
    ("RSS growth MB", lambda r: r["build"]["rss_growth_mb"]),
    ("source kept to splice MB", lambda r: r["build"]["facts_kept_source_mb"]),
    ("tracemalloc current MB", lambda r: r["fresh_check"]["tracemalloc_current_mb"]),
    ("tracemalloc peak MB", lambda r: r["fresh_check"]["tracemalloc_peak_mb"]),
    ("nodes", lambda r: r["counts"]["nodes"]),
    ("edges", lambda r: r["counts"]["edges"]),
    ("incremental = fresh", lambda r: "yes" if r["fresh_check"]["equal"] else "NO"),
    *((c, lambda r, c=c: r["counts"]["edges_by_confidence"].get(c, 0)) for c in CONFIDENCES),
)


def table(columns: tuple[Column, ...], rows: list[tuple[str, dict[str, Any]]]) -> str:
    header = ["corpus", *(name for name, _ in columns)]
    return harness.markdown_table(
        header, [[label, *(f(r) for _, f in columns)] for label, r in rows]
    )


def report(results: dict[str, dict[str, Any]]) -> str:
    labelled = [(f"{name} {r['corpus']['version']}", r) for name, r in results.items()]
    edits = [
        (label, {"kind": kind, **s})
        for label, r in labelled
        for kind, s in r["incremental"]["summary"].items()
    ]
    return "\n\n".join(
        [
            "Full build (a fresh RepoIndex over a full scan's events):",
            table(BUILD_COLUMNS, labelled),
            "Incremental single-file edits (one RepoIndex.handle each):",
            table(EDIT_COLUMNS, edits),
            "Saving one file again and again (the 10 largest, 5 saves each):",
            table(SAVE_COLUMNS, labelled),
            "The built graph: memory, size, edges by confidence:",
            table(MEMORY_COLUMNS, labelled),
        ]
    )


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", choices=(*CORPORA, "both"), default="both")
    cli.add_argument("--edits", type=int, default=200)
    cli.add_argument(
        "--no-tree-reuse",
        action="store_true",
        help="parse every file from scratch (no previous trees kept), for comparison",
    )
    cli.add_argument(
        "--no-splice",
        action="store_true",
        help="parse every edited file whole (no facts kept to splice from), for comparison",
    )
    cli.add_argument(
        "--no-settle",
        action="store_true",
        help="leave the heap to the collector after the build (no gc.freeze), for comparison",
    )
    args = cli.parse_args()
    configure_logging("warning")
    names = CORPORA if args.corpus == "both" else (args.corpus,)
    results = {
        name: isolated(
            name, args.edits, not args.no_tree_reuse, not args.no_settle, not args.no_splice
        )
        for name in names
    }
    print(report(results))
    payload = {"benchmark": NAME, "machine": harness.machine(), "seed": SEED, "results": results}
    progress(f"wrote {harness.write_json(NAME, payload)}")


if __name__ == "__main__":
    main()
