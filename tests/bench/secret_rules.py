"""Benchmark (issue 19): what the secret rules skip and redact in real repositories.

Walks each tree (``.git`` left out; binary and over-1-MB files skipped, as the producer
skips them) and reports the files ``secret_name`` skips, every redaction ``find`` makes
(rule, ``path:line``, the line as it is sent, cut to 120 characters) and the rules'
throughput. The benchmark repositories are public: every hit in them is a false
positive or a published test fixture. Run on demand:
``python -m tests.bench.secret_rules [ROOT ...]``; with no roots, the first checkout of
each project under /work/benchrepos plus the django and sympy corpora (tests/bench/
corpus.py) when cached.
"""

from __future__ import annotations

import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from producers.file_reader import BINARY_PROBE_BYTES, DEFAULT_MAX_BYTES
from producers.secrets import find, redact, secret_name
from tests.bench.corpus import CACHE_DIR

BENCH_REPOS = Path("/work/benchrepos")
MAX_EXAMPLES = 40


@dataclass
class Tally:
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    by_rule: Counter[str] = field(default_factory=Counter)
    named: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)


def default_roots() -> list[Path]:
    firsts: dict[str, Path] = {}
    for checkout in sorted(BENCH_REPOS.iterdir()) if BENCH_REPOS.is_dir() else []:
        firsts.setdefault(checkout.name.rsplit("__", 1)[0], checkout)
    corpora = sorted(CACHE_DIR.glob("django-*-tree")) + sorted(CACHE_DIR.glob("sympy-*-tree"))
    return [*firsts.values(), *corpora]


def scan(root: Path, tally: Tally) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            full = Path(dirpath, name)
            rel = full.relative_to(root).as_posix()
            if secret_name(rel):
                tally.named.append(f"{root.name}/{rel}")
                continue
            try:
                data = full.read_bytes() if full.is_file() else b""
            except OSError:
                continue
            if len(data) > DEFAULT_MAX_BYTES or b"\0" in data[:BINARY_PROBE_BYTES]:
                continue
            tally.files += 1
            tally.bytes += len(data)
            started = time.perf_counter()
            spans = find(data)
            tally.seconds += time.perf_counter() - started
            for start, end, rule in spans:
                tally.by_rule[rule] += 1
                line_start = data.rfind(b"\n", 0, start) + 1
                line_end = data.find(b"\n", end)
                line = data[line_start : line_end if line_end >= 0 else len(data)]
                shown = redact(line).content.decode("utf-8", "replace").strip()[:120]
                lineno = data.count(b"\n", 0, start) + 1
                tally.examples.append(f"{rule}  {root.name}/{rel}:{lineno}  {shown}")


def main(argv: list[str]) -> None:
    roots = [Path(a) for a in argv] or default_roots()
    total = Tally()
    for root in roots:
        tally = Tally()
        scan(root, tally)
        print(
            f"{root.name}: files={tally.files} MB={tally.bytes / 1e6:.1f} "
            f"skipped_by_name={len(tally.named)} redactions={sum(tally.by_rule.values())} "
            f"{dict(sorted(tally.by_rule.items()))}"
        )
        total.files += tally.files
        total.bytes += tally.bytes
        total.seconds += tally.seconds
        total.by_rule.update(tally.by_rule)
        total.named += tally.named
        total.examples += tally.examples
    print(
        f"TOTAL: repositories={len(roots)} files={total.files} MB={total.bytes / 1e6:.1f} "
        f"skipped_by_name={len(total.named)} redactions={sum(total.by_rule.values())} "
        f"rules_MB_per_s={total.bytes / 1e6 / max(total.seconds, 1e-9):.1f}"
    )
    print("by rule:", dict(sorted(total.by_rule.items())))
    print("skipped by name:")
    for named in total.named:
        print("  ", named)
    print(f"redactions (first {MAX_EXAMPLES}):")
    for example in total.examples[:MAX_EXAMPLES]:
        print("  ", example)


if __name__ == "__main__":
    main(sys.argv[1:])
