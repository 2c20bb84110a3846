"""Graph expansion and context packs on django's sources, in process.

    python -m tests.bench.context_pack [--samples 50] [--budget 8000] [--seed 1]

The state is a full scan of django's wheel tree (`package_tree`, `build_index`, untimed);
chunks are one per symbol, cut here from each symbol's lines (the chunker's own rules
do not matter for the walk). Timed: building the `Adjacency` (3 runs), then for
``--samples`` functions and methods picked with a fixed seed: ContextOS expansion,
vortexa BFS, the shortest path to another sampled function, and `build_pack` + `render`
with the adjacency cached, as the query service calls it. Reported: p50 / p95 / max.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable
from functools import partial

from query.search.adjacency import Adjacency
from query.search.context_pack import build_pack, render
from query.search.expansion import expand
from query.search.traversal import bfs, shortest_path
from stores.records import ChunkRecord
from stores.repo_state import RepoState
from tests.bench.package_tree import build_index, package_tree


def symbol_chunks(state: RepoState, files: dict[str, bytes]) -> dict[str, tuple[ChunkRecord, ...]]:
    chunks: dict[str, tuple[ChunkRecord, ...]] = {}
    for path, record in state.files.items():
        lines = files[path].decode("utf-8", "replace").splitlines()
        chunks[path] = tuple(
            ChunkRecord(
                id=f"{path}#{s.qualname}",
                path=path,
                kind=s.kind,
                qualname=s.qualname,
                line_start=s.line_start,
                line_end=s.line_end,
                signature=s.signature,
                doc=s.doc,
                text="\n".join(lines[s.line_start - 1 : min(s.line_end, s.line_start + 149)]),
                content_hash=path + s.qualname,
            )
            for s in record.symbols
        )
    return chunks


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def summary(name: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"{name:<16} p50 {statistics.median(ordered):7.2f} ms  p95 {p95:7.2f} ms  "
        f"max {ordered[-1]:7.2f} ms"
    )


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m tests.bench.context_pack", description=__doc__)
    cli.add_argument("--samples", type=int, default=50)
    cli.add_argument("--budget", type=int, default=8000)
    cli.add_argument("--seed", type=int, default=1)
    args = cli.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    tree = package_tree("django")
    index, _ = build_index(tree)
    state = index.state
    chunks = symbol_chunks(state, tree.files)
    print(f"django {tree.version}: {len(state.files)} files, {len(state.nodes)} nodes, "
          f"{len(state.edges)} edges")  # fmt: skip
    builds = []
    for _ in range(3):
        ms, adj = timed(lambda: Adjacency.of(state))
        builds.append(ms)
    assert isinstance(adj, Adjacency)
    print(f"adjacency build  runs {', '.join(f'{b:.0f}' for b in builds)} ms; "
          f"hub threshold {adj.hub_threshold:.1f}, "
          f"{sum(adj.is_hub(n) for n in adj.degrees)} vortexa hubs, "
          f"{sum(d > 30 for d in adj.degrees.values())} nodes over 30 connections")  # fmt: skip
    functions = sorted(n.id for n in state.nodes.values() if n.kind in ("FUNCTION", "METHOD"))
    sample = random.Random(args.seed).sample(functions, args.samples)
    times: dict[str, list[float]] = {"expand": [], "bfs": [], "shortest_path": [], "pack": []}
    sizes, paths = [], 0

    def pack_text(node: str) -> str:
        return render(build_pack(state, chunks, [(node, 1.0)], budget=args.budget, adjacency=adj))

    for i, node in enumerate(sample):
        times["expand"].append(timed(partial(expand, adj, [node]))[0])
        times["bfs"].append(timed(partial(bfs, adj, node))[0])
        ms, path = timed(partial(shortest_path, adj, node, sample[(i + 1) % len(sample)]))
        times["shortest_path"].append(ms)
        paths += path is not None
        ms, text = timed(partial(pack_text, node))
        times["pack"].append(ms)
        assert isinstance(text, str) and len(text) <= 4 * args.budget
        sizes.append(len(text) // 4)
    for name, runs in times.items():
        print(summary(name, runs))
    print(f"paths found {paths}/{len(sample)}; pack tokens p50 {statistics.median(sizes):.0f}, "
          f"max {max(sizes)} (budget {args.budget})")  # fmt: skip


if __name__ == "__main__":
    main()
