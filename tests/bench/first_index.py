"""A first index against the peers, and the graph build against the parse (issue 21).

    python -m tests.bench.first_index [--repeat 3] [--processes N] [--part peers|graph|both]

Side by side in one run, interleaved (`bench_schedule.interleaved`: round r runs the
contenders in an order rotated by r), medians of ``--repeat`` rounds; no number comes
from an earlier run.

1. Peers, on sympy and django (each a private clone of `corpus.package_repo`, from its
   wheel; a contender's clone is its own):
   - ``gazetteer up``: a real process with its embedded broker, an empty data dir and
     a new namespace, from its start to ``fresh`` at the head commit
     (`up_restart.one_run`, ``GAZETTEER_EMBEDDER=none``);
   - vortexa 0.3.7's cold index of the same tree, BM25 only, offline, and Aider's repo
     map (`peers`: each in its own venv under ``~/.cache/gazetteer/peers``, installed
     there by pip when missing), from process start to exit, with peak RSS.
2. Graph build against the raw parse (`graph_growth`), on django, sympy, both, and two
   copies of sympy in one tree: the worker's own build (in process, fresh
   interpreter) against tree-sitter's parse of the same files in a pool of the same
   number of processes (``--processes``, default: the worker's setting where there is
   one, else 1, which is how main's worker builds), and of every core for scale. Build
   time, CPU and peak memory per tree; the exponent k of time ∝ size^k (target ≤ 1.05),
   the size being the source parsed, over the four trees and over sympy -> two sympys.

Writes ``tests/bench/out/first_index.json`` and prints the tables. The machine may be
shared: the load average is recorded at the start and end.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from deploy.settings import Settings
from processors.parse_pool import available_cores
from tests.bench import harness, peers
from tests.bench.bench_schedule import growth_exponent, interleaved, medians, ratio
from tests.bench.corpus import Corpus, clone, package_repo
from tests.bench.graph_growth import TREES, graph_build_run, in_fresh_process, raw_parse_run
from tests.bench.up_restart import CHANGED, one_run

NAME = "first_index"
CORPORA = ("sympy", "django")
TOOLS = ("gazetteer up", "vortexa", "aider")


def default_processes() -> int:
    """The processes a worker's scan parses in: its own and its parse pool's
    (``GAZETTEER_SCAN_WORKERS``; unset, the cores available less one)."""
    workers = Settings().scan_workers
    return 1 + (available_cores() - 1 if workers is None else workers)


def up_run(work: Corpus, data: Path, timeout: float, corpus: str) -> dict[str, Any]:
    env = {
        "GAZETTEER_NAMESPACE": f"fi{uuid.uuid4().hex[:8]}",
        "GAZETTEER_LOG_FORMAT": "json",
        "GAZETTEER_EMBEDDER": "none",
    }
    result = one_run("cold", work.root, data, env, timeout, CHANGED[corpus])
    return {"s": result["fresh_s"], "serving_s": result["url_s"], "scans": result["scans"]}


def peer_runs(args: argparse.Namespace, tmp: Path) -> list[dict[str, Any]]:
    versions = {peer.package: peers.ensure(peer) for peer in (peers.VORTEXA, peers.AIDER)}
    harness.progress(f"peers: {versions}")
    clones = {
        (corpus, tool): clone(package_repo(corpus), tmp / corpus / tool.replace(" ", "-"))
        for corpus in CORPORA
        for tool in TOOLS
    }
    runs = []
    for round_, label in interleaved([f"{c}/{t}" for c in CORPORA for t in TOOLS], args.repeat):
        corpus, tool = label.split("/")
        work = clones[(corpus, tool)]
        scratch = Path(tempfile.mkdtemp(prefix=f"{tool.replace(' ', '-')}-", dir=tmp))
        if tool == "gazetteer up":
            result = up_run(work, scratch / "data", args.timeout, corpus)
        elif tool == "vortexa":
            result = peers.vortexa_index(work.root, scratch)
        else:
            result = peers.aider_repo_map(work.root, scratch, args.aider_tokens)
        run = {"contender": label, "round": round_, "load": os.getloadavg()[0], **result}
        harness.progress(f"{label} (round {round_}): {run['s']:.1f} s")
        runs.append(run)
    return runs


def graph_runs(args: argparse.Namespace) -> list[dict[str, Any]]:
    widths = sorted({args.processes, os.cpu_count() or 1})
    contenders = [f"{tree}/build" for tree in TREES]
    contenders += [f"{tree}/raw parse x{n}" for tree in TREES for n in widths]
    runs = []
    for round_, label in interleaved(contenders, args.repeat):
        tree, what = label.split("/")
        if what == "build":
            result = in_fresh_process(graph_build_run, tree)
        else:
            result = raw_parse_run(tree, int(what.rsplit("x", 1)[1]))
        run = {"contender": label, "round": round_, "load": os.getloadavg()[0], **result}
        harness.progress(f"{label} (round {round_}): {run['s']:.2f} s")
        runs.append(run)
    return runs


def what_was_built(tool: str, row: dict[str, Any]) -> str:
    if tool == "gazetteer up":
        return f"serving at {row['serving_s']:.1f} s, then the scan to fresh"
    if tool == "vortexa":
        return f"{row['indexed_files']:.0f} files, {row['total_chunks']:.0f} chunks"
    return (
        f"{row['files_in_map']:.0f} of {row['files_given']:.0f} files in the map,"
        f" {row['map_tokens']:.0f} tokens"
    )


def peer_table(summary: dict[str, dict[str, Any]]) -> str:
    rows = []
    for corpus in CORPORA:
        vortexa = summary[f"{corpus}/vortexa"]["s"]
        for tool in TOOLS:
            row = summary[f"{corpus}/{tool}"]
            built = what_was_built(tool, row)
            rss = row.get("peak_rss_mb")
            rows.append(
                [
                    corpus,
                    tool,
                    row["s"],
                    f"{ratio(row['s'], vortexa):.2f}x",
                    "-" if rss is None else round(rss),
                    built,
                ]
            )
    header = ["corpus", "contender", "start -> done s", "/ vortexa", "peak RSS MB", "built"]
    return harness.markdown_table(header, rows)


def growth(summary: dict[str, dict[str, Any]], processes: int) -> dict[str, Any]:
    """k of time ∝ size^k, the size being the source the build parses (the raw parse's
    MB: django's tree is mostly other files), wall and CPU, over the four trees and over
    sympy -> two sympys alone (the same mix of files, doubled)."""
    sizes = {tree: summary[f"{tree}/raw parse x{processes}"]["mb"] for tree in TREES}
    result: dict[str, Any] = {"parsed_mb": sizes}
    for name, trees in (("four_trees", TREES), ("sympy_doubled", ("sympy", "sympy-x2"))):
        points = [sizes[tree] for tree in trees]
        for key, of in (("build", "s"), ("build_cpu", "cpu_s")):
            times = [summary[f"{tree}/build"][of] for tree in trees]
            result[f"{key}_k_{name}"] = growth_exponent(points, times)
        raws = [summary[f"{tree}/raw parse x{processes}"]["s"] for tree in trees]
        result[f"raw_parse_k_{name}"] = growth_exponent(points, raws)
    return result


def graph_table(summary: dict[str, dict[str, Any]], processes: int) -> tuple[str, dict[str, Any]]:
    widths = sorted({processes, os.cpu_count() or 1})
    rows = []
    for tree in TREES:
        build = summary[f"{tree}/build"]
        raw = {n: summary[f"{tree}/raw parse x{n}"] for n in widths}
        rows.append(
            [
                tree,
                build["files"],
                round(raw[processes]["mb"], 1),
                build["s"],
                build["cpu_s"],
                build["barrier_s"],
                *(raw[n]["s"] for n in widths),
                f"{ratio(build['s'], raw[processes]['s']):.1f}x",
                f"{ratio(build['cpu_s'], raw[processes]['cpu_s']):.1f}x",
                round(build["peak_rss_mb"]),
                round(build["rss_growth_mb"]),
            ]
        )
    grown = growth(summary, processes)
    header = [
        "tree",
        "files",
        "parsed MB",
        "build s",
        "build CPU s",
        "of which barrier s",
        *(f"raw parse x{n} s" for n in widths),
        f"build / raw x{processes}",
        "CPU: build / raw",
        "peak RSS MB",
        "RSS growth MB",
    ]
    table = harness.markdown_table(header, rows)
    table += (
        "\n\ntime ∝ (parsed MB)^k (target ≤ 1.05), wall / CPU:"
        f" build over the four trees {grown['build_k_four_trees']:.2f}"
        f" / {grown['build_cpu_k_four_trees']:.2f}, sympy -> two sympys"
        f" {grown['build_k_sympy_doubled']:.2f} / {grown['build_cpu_k_sympy_doubled']:.2f};"
        f" raw parse x{processes} {grown['raw_parse_k_four_trees']:.2f}"
        f" and {grown['raw_parse_k_sympy_doubled']:.2f}"
    )
    return table, grown


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--repeat", type=int, default=3, help="rounds; medians are reported")
    cli.add_argument(
        "--processes",
        type=int,
        default=default_processes(),
        help="the worker's processes for a scan (default: its setting, else 1)",
    )
    cli.add_argument("--part", choices=("peers", "graph", "both"), default="both")
    cli.add_argument("--aider-tokens", type=int, default=1024, help="Aider's --map-tokens")
    cli.add_argument("--timeout", type=float, default=900.0)
    args = cli.parse_args()
    harness.progress(f"load average {os.getloadavg()} on {os.cpu_count()} CPUs")
    payload: dict[str, Any] = {
        "benchmark": NAME,
        "machine": harness.machine(),
        "repeat": args.repeat,
        "processes": args.processes,
        "load_average_start": os.getloadavg(),
    }
    tables = []
    if args.part in ("peers", "both"):
        with tempfile.TemporaryDirectory(prefix="gz-first-index-") as tmp:
            runs = peer_runs(args, Path(tmp))
        summary = medians(runs)
        payload["peers"] = {
            "versions": {p.package: p.version for p in (peers.VORTEXA, peers.AIDER)},
            "aider_map_tokens": args.aider_tokens,
            "runs": runs,
            "medians": summary,
        }
        tables.append("First index, start to done (medians):\n\n" + peer_table(summary))
    if args.part in ("graph", "both"):
        runs = graph_runs(args)
        summary = medians(runs)
        table, growth = graph_table(summary, args.processes)
        payload["graph"] = {"runs": runs, "medians": summary, "growth": growth}
        tables.append("Graph build against the raw parse (medians):\n\n" + table)
    payload["load_average_end"] = os.getloadavg()
    payload["tables"] = tables
    print("\n\n".join(tables))
    harness.progress(f"wrote {harness.write_json(NAME, payload)}")


if __name__ == "__main__":
    main()
