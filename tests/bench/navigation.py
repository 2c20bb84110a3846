"""Navigation latency (issue 20): definition, callers, references, neighbors and the
shortest path as `QueryService` methods on a real corpus indexed in process.

``python -m tests.bench.navigation --corpus django --samples 200``: symbols and file
pairs are sampled with a fixed seed; each answer is timed once per sample (the
adjacency is built before the first timing, as the read model keeps it)."""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from deploy.logging_setup import configure_logging
from query.service import QueryService
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.query_latency import build_read_model, percentile

NAME = "navigation"


def timed(samples: list[Callable[[], object]]) -> tuple[float, float, float]:
    spent = []
    for answer in samples:
        started = time.perf_counter()
        answer()
        spent.append((time.perf_counter() - started) * 1000)
    return percentile(spent, 0.5), percentile(spent, 0.95), max(spent)


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="django")
    cli.add_argument("--samples", type=int, default=200)
    args = cli.parse_args()
    configure_logging("warning")
    built = build_read_model(args.corpus, "none", 0)
    repo = args.corpus
    service = QueryService(built.model)
    view = built.model.repos[repo]
    adjacency = view.adjacency()
    rng = random.Random(20)
    symbols = sorted(n.id for n in view.state.nodes.values() if n.id.startswith("sym:"))
    files = sorted(view.state.files)
    picked = rng.sample(symbols, min(args.samples, len(symbols)))
    names = [(adjacency.nodes[s].name, adjacency.nodes[s].path) for s in picked]
    pairs = [(rng.choice(files), rng.choice(files)) for _ in range(args.samples)]
    progress(f"{repo}: {len(symbols)} symbols, {len(files)} files, {len(view.state.edges)} edges")
    rows = []
    for label, samples in (
        ("definition", [lambda n=n: service.definition(repo, n[0]) for n in names]),
        ("callers", [lambda n=n: service.callers(repo, n[0], path=n[1]) for n in names]),
        ("references", [lambda n=n: service.references(repo, n[0], path=n[1]) for n in names]),
        ("neighbors bfs depth 2", [lambda n=n: service.neighbors(repo, n[1]) for n in names]),
        ("path file to file", [lambda p=p: service.shortest_path(repo, *p) for p in pairs]),
    ):
        p50, p95, most = timed(samples)
        rows.append([label, len(samples), f"{p50:.2f} / {p95:.2f} / {most:.2f}"])
    print(harness.markdown_table(["answer", "samples", "p50 / p95 / max ms"], rows))
    found = [service.shortest_path(repo, *p) for p in pairs]
    hops = [len(a.hops) for a in found if a.found]
    progress(f"paths found: {len(hops)} of {len(pairs)}, hops {sum(hops) / max(len(hops), 1):.1f}")


if __name__ == "__main__":
    main()
