"""Tuning the ranking weights on localization instances, and how far to trust the tuning.

A case is one question's candidate files with their signals (what `rank` computes
before weighing them, so no signal depends on the weights) and the files a correct
answer must hold. Re-weighing is a dot product per candidate, so a search over
weights costs no re-indexing.

`tune` is coordinate ascent over a grid: each weight in turn takes the grid value that
scores best with the others held, until a full pass changes nothing. ``text`` stays at
1 (only ratios matter). The objective is MRR, ties broken by Acc@5, then Acc@1, then
the smaller change from the start: with few cases many settings tie, and the start
(the defaults) is the prior.

`cross_validate` holds each group (a repository) out in turn, tunes on the others and
scores the held-out cases: the number to report, since weights scored on the cases they
were tuned on flatter themselves.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from query.search.ranking import SCORED, RankWeights

GRID = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0, 1.5, 2.0, 3.0)
TUNED = tuple(name for name in SCORED if name not in ("text", "session"))
"""``text`` anchors the scale; ``session`` has no signal in a benchmark."""


@dataclass(frozen=True, slots=True)
class Case:
    group: str  # cases of one group are held out together
    gold: frozenset[str]
    candidates: tuple[tuple[str, Mapping[str, float]], ...]


@dataclass(frozen=True, slots=True)
class Scores:
    """As the benchmark's scorer computes them, in percent."""

    cases: int
    acc1: float
    acc3: float
    acc5: float
    mrr: float

    def key(self) -> tuple[float, float, float]:
        return (round(self.mrr, 9), round(self.acc5, 9), round(self.acc1, 9))


def ranked(case: Case, weights: RankWeights) -> list[str]:
    """The candidates best first, exactly as `rank` orders them (ties by path)."""
    scored = [
        (-round(sum(getattr(weights, n) * s.get(n, 0.0) for n in SCORED), 9), path)
        for path, s in case.candidates
    ]
    return [path for _, path in sorted(scored)]


def score(cases: Sequence[Case], weights: RankWeights) -> Scores:
    hits = {1: 0, 3: 0, 5: 0}
    reciprocal = 0.0
    for case in cases:
        order = ranked(case, weights)
        for k in hits:
            hits[k] += case.gold <= set(order[:k])
        reciprocal += next((1 / (i + 1) for i, p in enumerate(order) if p in case.gold), 0.0)
    n = len(cases) or 1
    return Scores(
        len(cases),
        100 * hits[1] / n,
        100 * hits[3] / n,
        100 * hits[5] / n,
        100 * reciprocal / n,
    )


def tune(
    cases: Sequence[Case],
    start: RankWeights | None = None,
    *,
    grid: Sequence[float] = GRID,
    names: Sequence[str] = TUNED,
    max_passes: int = 5,
) -> RankWeights:
    start = start or RankWeights()
    return coordinate_search(
        lambda trial: _objective(cases, trial, start), start, grid, names, max_passes
    )


def coordinate_search(
    objective: Callable[[RankWeights], Any],
    start: RankWeights,
    grid: Sequence[float],
    names: Sequence[str],
    max_passes: int,
) -> RankWeights:
    """From ``start``, each weight in turn set to the grid value that raises
    ``objective`` most, pass after pass until none moves (or ``max_passes``)."""
    best = start
    best_key = objective(best)
    for _ in range(max_passes):
        moved = False
        for name in names:
            for value in grid:
                trial = dataclasses.replace(best, **{name: value})
                key = objective(trial)
                if key > best_key:
                    best, best_key, moved = trial, key, True
        if not moved:
            break
    return best


def cross_validate(
    cases: Sequence[Case],
    start: RankWeights | None = None,
    *,
    tuner: Callable[[Sequence[Case]], RankWeights] | None = None,
) -> tuple[Scores, dict[str, RankWeights]]:
    """Scores of the held-out cases, each group ranked by weights tuned without it; and
    the weights each fold chose."""
    fit = tuner or (lambda train: tune(train, start))
    groups = sorted({c.group for c in cases})
    held_out: list[tuple[Case, RankWeights]] = []
    chosen: dict[str, RankWeights] = {}
    for group in groups:
        train = [c for c in cases if c.group != group]
        chosen[group] = weights = fit(train) if train else (start or RankWeights())
        held_out += [(c, weights) for c in cases if c.group == group]
    return _pooled(held_out), chosen


def _pooled(pairs: Sequence[tuple[Case, RankWeights]]) -> Scores:
    parts = [score([case], weights) for case, weights in pairs]
    n = len(parts) or 1
    return Scores(
        len(parts),
        sum(p.acc1 for p in parts) / n,
        sum(p.acc3 for p in parts) / n,
        sum(p.acc5 for p in parts) / n,
        sum(p.mrr for p in parts) / n,
    )


def _objective(
    cases: Sequence[Case], weights: RankWeights, start: RankWeights
) -> tuple[float, float, float, float]:
    moved = sum(abs(getattr(weights, n) - getattr(start, n)) for n in SCORED)
    return (*score(cases, weights).key(), -round(moved, 9))
