"""Learning the default weights of the files not in Python, on localization cases pooled
across benchmarks and languages (issue 17: one ranking learned on every development
split, repositories held out, instead of weights tuned per split).

The ranking weighs a Python file by one set of weights and any other file by another
(`ranking.OFF_PYTHON`). Here Python's set is held and the other set learned: coordinate
search over a grid, each weight in turn taking the grid value that scores best with the
others held, until a pass changes nothing; ``text`` stays at 1 (only ratios matter). The
objective is Acc@1 + Acc@5 + Acc@10 + MRR (the issue's targets are Acc@1 and Acc@5;
Acc@10 and MRR smooth a small sample), ties broken by the smaller change from the start.

Each case is a matrix (candidates x `SCORED` signals), so a trial is a product and a
count, not a sort: the rank of a gold file is the number of candidates scoring more,
plus those scoring the same with a smaller path (`rank`'s order). An instance counts at
k when all its gold files are in the first k, and never when a gold file is no
candidate (the benchmark's scorer).

`cross_validate` holds each group (a repository) out in turn, learns on the others and
scores the held-out cases: the honest estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from query.search.ranking import SCORED, RankWeights, is_python_path
from query.search.tuning import GRID, Case, coordinate_search

LEARNED = tuple(name for name in SCORED if name not in ("text", "session"))
"""``text`` anchors the scale; ``session`` has no benchmark signal. ``dense_rrf`` is
learned when the signals carry it (`eval localize --embedder`); without it every value
ties and it keeps its default."""
METRICS = ("acc1", "acc3", "acc5", "acc10", "mrr")
_CUTS = np.array([1, 3, 5, 10])


@dataclass(frozen=True, slots=True)
class CaseMatrix:
    """One case as arrays: its signals, which candidates are Python, its gold's rows and
    every candidate's place in path order (the tie-break)."""

    group: str
    signals: npt.NDArray[np.float64]
    python: npt.NDArray[np.bool_]
    gold: npt.NDArray[np.intp]
    path_order: npt.NDArray[np.intp]
    complete: bool  # every gold file is a candidate


def matrix(case: Case) -> CaseMatrix:
    paths = [path for path, _ in case.candidates]
    signals = np.array(
        [[own.get(name, 0.0) for name in SCORED] for _, own in case.candidates], dtype=np.float64
    ).reshape(len(paths), len(SCORED))
    path_order = np.empty(len(paths), dtype=np.intp)
    path_order[sorted(range(len(paths)), key=paths.__getitem__)] = np.arange(len(paths))
    gold = np.array([i for i, path in enumerate(paths) if path in case.gold], dtype=np.intp)
    return CaseMatrix(
        case.group,
        signals,
        np.array([is_python_path(p) for p in paths], dtype=np.bool_),
        gold,
        path_order,
        len(gold) == len(case.gold),
    )


def case_metrics(
    case: CaseMatrix, python: RankWeights, other: RankWeights
) -> npt.NDArray[np.float64]:
    """Acc@1, @3, @5, @10 (0 or 1) and the reciprocal rank of the first gold file."""
    if len(case.gold) == 0:
        return np.zeros(len(METRICS))
    scores = np.round(
        np.where(case.python, case.signals @ _vector(python), case.signals @ _vector(other)), 9
    )
    mine = scores[case.gold][:, None]
    above = (scores[None, :] > mine) | (
        (scores[None, :] == mine) & (case.path_order[None, :] < case.path_order[case.gold][:, None])
    )
    ranks = above.sum(axis=1)
    worst = int(ranks.max()) if case.complete else 1 << 30
    return np.array([*(worst < _CUTS), 1.0 / (1 + int(ranks.min()))], dtype=np.float64)


def mean_metrics(
    cases: Sequence[CaseMatrix], python: RankWeights, other: RankWeights
) -> npt.NDArray[np.float64]:
    """`METRICS` in percent over the cases."""
    if not cases:
        return np.zeros(len(METRICS))
    return 100 * np.mean([case_metrics(c, python, other) for c in cases], axis=0)


def learn(
    cases: Sequence[CaseMatrix],
    python: RankWeights,
    start: RankWeights,
    *,
    grid: Sequence[float] = GRID,
    names: Sequence[str] = LEARNED,
    max_passes: int = 5,
) -> RankWeights:
    """The weights of the files not in Python that score best, Python's held."""
    return coordinate_search(
        lambda trial: _objective(cases, python, trial, start), start, grid, names, max_passes
    )


def learn_pair(
    cases: Sequence[CaseMatrix],
    python: RankWeights,
    start: RankWeights,
    *,
    grid: Sequence[float] = GRID,
    names: Sequence[str] = LEARNED,
    python_names: Sequence[str] = (),
    max_passes: int = 5,
) -> tuple[RankWeights, RankWeights]:
    """Python's weights and the others': the others learned with Python's held, then
    (with ``python_names``) those of Python's weights learned with the others held, and
    the others once more. Without ``python_names``: Python's as given, `learn`'s."""
    other = learn(cases, python, start, grid=grid, names=names, max_passes=max_passes)
    if not python_names:
        return python, other
    held = python
    python = coordinate_search(
        lambda trial: _objective_python(cases, trial, other, held),
        python,
        grid,
        python_names,
        max_passes,
    )
    other = learn(cases, python, other, grid=grid, names=names, max_passes=max_passes)
    return python, other


def cross_validate(
    cases: Sequence[CaseMatrix],
    python: RankWeights,
    start: RankWeights,
    *,
    grid: Sequence[float] = GRID,
    names: Sequence[str] = LEARNED,
    python_names: Sequence[str] = (),
    max_passes: int = 5,
) -> tuple[list[npt.NDArray[np.float64]], dict[str, tuple[RankWeights, RankWeights]]]:
    """Each case's metrics under weights learned without its group, in case order; and
    the weights (Python's, the others') each fold learned."""
    chosen: dict[str, tuple[RankWeights, RankWeights]] = {}
    for group in sorted({c.group for c in cases}):
        train = [c for c in cases if c.group != group]
        chosen[group] = learn_pair(
            train,
            python,
            start,
            grid=grid,
            names=names,
            python_names=python_names,
            max_passes=max_passes,
        )
    return [case_metrics(c, *chosen[c.group]) for c in cases], chosen


def _vector(weights: RankWeights) -> npt.NDArray[np.float64]:
    return np.array([getattr(weights, name) for name in SCORED], dtype=np.float64)


def _objective_python(
    cases: Sequence[CaseMatrix], python: RankWeights, other: RankWeights, start: RankWeights
) -> tuple[float, float]:
    """`_objective` with Python's weights the trial (the tie-break: the smaller move)."""
    return _objective(cases, python, other, other, python_start=start)


def _objective(
    cases: Sequence[CaseMatrix],
    python: RankWeights,
    other: RankWeights,
    start: RankWeights,
    *,
    python_start: RankWeights | None = None,
) -> tuple[float, float]:
    acc1, _, acc5, acc10, mrr = mean_metrics(cases, python, other)
    if python_start is not None:
        moved = sum(abs(getattr(python, n) - getattr(python_start, n)) for n in SCORED)
    else:
        moved = sum(abs(getattr(other, n) - getattr(start, n)) for n in SCORED)
    return (round(float(acc1 + acc5 + acc10 + mrr), 9), -round(moved, 9))
