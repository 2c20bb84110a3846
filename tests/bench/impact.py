"""Impact latency and size (issue 20): `QueryService.impact` on a real corpus indexed in
process, for a one-line diff inside a symbol, a five-file diff, a listed file and a
listed symbol.

``python -m tests.bench.impact --corpus django --samples 100``: symbols are sampled with
a fixed seed; each diff changes the middle line of a sampled symbol (its text, from the
corpus, with `` # changed`` appended), so every hunk is one a real edit would make. Each
answer is timed once per sample (the adjacency built before the first timing, as the
read model keeps it), with the default depth (2), limit (50) and budget (4000)."""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence

from deploy.logging_setup import configure_logging
from query.impact_schemas import ImpactAnswer
from query.service import QueryService
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import package_tree
from tests.bench.query_latency import build_read_model, percentile

NAME = "impact"


def one_line(path: str, text: list[str], line: int) -> str:
    """A git diff changing line ``line`` (1-based) of ``path``."""
    old = text[line - 1]
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n"
        f"@@ -{line} +{line} @@\n-{old}\n+{old} # changed\n"
    )


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="django")
    cli.add_argument("--samples", type=int, default=100)
    args = cli.parse_args()
    configure_logging("warning")
    built = build_read_model(args.corpus, "none", 0)
    tree = package_tree(args.corpus)
    repo = args.corpus
    service = QueryService(built.model)
    view = built.model.repos[repo]
    view.adjacency()
    rng = random.Random(20)
    symbols = sorted(
        (
            (path, s)
            for path, record in view.state.files.items()
            if path.endswith(".py")
            for s in record.symbols
            if s.line_end > s.line_start
        ),
        key=lambda pair: (pair[0], pair[1].qualname),
    )
    picked = rng.sample(symbols, min(args.samples * 5, len(symbols)))
    texts = {path: tree.files[path].decode(errors="replace").splitlines() for path, _ in picked}
    diffs = [one_line(path, texts[path], (s.line_start + s.line_end) // 2) for path, s in picked]
    singles = diffs[: args.samples]
    fives = ["".join(diffs[i : i + 5]) for i in range(0, 5 * args.samples, 5)][: args.samples]
    files = [path for path, _ in picked[: args.samples]]
    names = [f"{path}:{s.qualname}" for path, s in picked[: args.samples]]
    progress(f"{repo}: {len(view.state.files)} files, {len(view.state.edges)} edges")
    rows = []
    for label, samples in (
        ("diff, one line in a symbol", [lambda d=d: service.impact(repo, diff=d) for d in singles]),
        ("diff, five files", [lambda d=d: service.impact(repo, diff=d) for d in fives]),
        ("files, one file", [lambda f=f: service.impact(repo, files=[f]) for f in files]),
        ("symbols, one symbol", [lambda n=n: service.impact(repo, symbols=[n]) for n in names]),
    ):
        rows.append([label, *measured(samples)])
    print(
        harness.markdown_table(
            [
                "question",
                "samples",
                "p50 / p95 / max ms",
                "dependents p50 / max",
                "tests p50",
                "tokens p50 / max",
                "risk low / medium / high",
                "capped",
            ],
            rows,
        )
    )


def measured(samples: Sequence[Callable[[], ImpactAnswer]]) -> list[object]:
    spent, answers = [], []
    for answer in samples:
        started = time.perf_counter()
        answers.append(answer())
        spent.append((time.perf_counter() - started) * 1000)
    dependents = [a.dependents_total for a in answers]
    tokens = [a.tokens for a in answers]
    levels = Counter(a.risk.level for a in answers)
    return [
        len(samples),
        f"{percentile(spent, 0.5):.1f} / {percentile(spent, 0.95):.1f} / {max(spent):.1f}",
        f"{statistics.median(dependents):g} / {max(dependents)}",
        f"{statistics.median(a.tests_total for a in answers):g}",
        f"{statistics.median(tokens):g} / {max(tokens)}",
        f"{levels['low']} / {levels['medium']} / {levels['high']}",
        sum(a.dependents_capped for a in answers),
    ]


if __name__ == "__main__":
    main()
