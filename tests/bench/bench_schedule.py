"""The arithmetic of a side-by-side benchmark: who runs when, medians, growth (issue 21).

Pure: values in, values out, pinned by tests/unit/test_bench_schedule.py.

- `interleaved`: contenders run in rounds, each round in a rotated order, so that
  no contender always runs first (cold page cache) or last (a warm machine) and a
  burst of load from other work falls on every contender alike;
- `medians`: per contender, the median of each measured number over its rounds;
- `growth_exponent`: k in time ∝ size^k, the least-squares slope of log time on
  log size over every measured point (k = 1 is linear growth; issue 21's target is
  k ≤ 1.05).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any


def interleaved(contenders: Sequence[str], rounds: int) -> list[tuple[int, str]]:
    """(round, contender) in run order: round r starts r places further along."""
    if not contenders:
        return []
    n = len(contenders)
    return [(r, contenders[(r + i) % n]) for r in range(rounds) for i in range(n)]


def medians(runs: Sequence[Mapping[str, Any]], key: str = "contender") -> dict[str, dict[str, Any]]:
    """Per contender (in order of first appearance): the median of every number its
    runs share, and ``runs``, how many there were. Non-numbers (and booleans) are kept
    when every run agrees on them, else dropped."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        grouped.setdefault(str(run[key]), []).append(run)
    summary: dict[str, dict[str, Any]] = {}
    for name, group in grouped.items():
        fields = [f for f in group[0] if f != key and all(f in run for run in group)]
        row: dict[str, Any] = {"runs": len(group)}
        for field in fields:
            values = [run[field] for run in group]
            if all(_is_number(v) for v in values):
                row[field] = statistics.median(values)
            elif all(v == values[0] for v in values):
                row[field] = values[0]
        summary[name] = row
    return summary


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def growth_exponent(sizes: Sequence[float], seconds: Sequence[float]) -> float:
    """The least-squares k of log(seconds) = k·log(size) + c; needs two distinct sizes."""
    if len(sizes) != len(seconds):
        raise ValueError(f"{len(sizes)} sizes against {len(seconds)} times")
    if any(v <= 0 for v in (*sizes, *seconds)):
        raise ValueError("sizes and times must be positive")
    xs, ys = [math.log(s) for s in sizes], [math.log(t) for t in seconds]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    if spread == 0:
        raise ValueError("growth needs at least two distinct sizes")
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator, None where either is missing or the denominator is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator
