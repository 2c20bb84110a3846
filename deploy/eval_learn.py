"""``gazetteer eval learn``: learn the default weights of the files not in Python on every
split `eval localize` measured, pooled (issue 17).

Reads pairs of a dataset (its ``gold_files``, ``language`` where it has one, else Python)
and the ``*.signals.jsonl`` `eval localize` wrote for it, pools the instances, and learns
`ranking.OFF_PYTHON`'s weights with Python's held at `RankWeights()`
(query/search/family_tuning.py), starting from `RankWeights()` (the weights every file
had before). Writes the weights and their scores per split and language: before (every
file by `RankWeights()`), learned on the very cases (flattering), and cross-validated
with each repository held out (every instance scored by weights that never saw its
repository: the number to report).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from deploy.eval_tune import read_cases
from query.search.family_tuning import (
    LEARNED,
    METRICS,
    CaseMatrix,
    case_metrics,
    cross_validate,
    learn_pair,
    matrix,
)
from query.search.ranking import RankWeights
from query.search.tuning import GRID


@dataclass(frozen=True, slots=True)
class Labeled:
    split: str
    language: str
    case: CaseMatrix


def read_split(dataset: Path, signals: Path) -> list[Labeled]:
    languages: dict[str, str] = {}
    with dataset.open() as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                languages[row["instance_id"]] = str(row.get("language", "Python"))
    with signals.open() as lines:
        ids = [json.loads(line)["instance_id"] for line in lines if line.strip()]
    cases = read_cases(dataset, signals)
    return [Labeled(dataset.stem, languages[i], matrix(c)) for i, c in zip(ids, cases, strict=True)]


def report(
    pairs: Sequence[tuple[Path, Path]],
    *,
    grid: Sequence[float] = GRID,
    max_passes: int = 5,
    hold: Sequence[str] = (),
    python_names: Sequence[str] = (),
) -> dict[str, Any]:
    """``hold``: signals whose weights stay at their defaults (a run without a lever);
    ``python_names``: those of Python's weights learned too (a new signal's), the rest
    of Python's held."""
    unknown = sorted(set(hold) - set(LEARNED)) + sorted(set(python_names) - set(LEARNED))
    if unknown:
        raise ValueError(f"not learned signals {unknown}; learned: {list(LEARNED)}")
    names = tuple(n for n in LEARNED if n not in hold)
    labeled = [one for dataset, signals in pairs for one in read_split(dataset, signals)]
    cases = [one.case for one in labeled]
    python = start = RankWeights()
    options: dict[str, Any] = {
        "grid": grid,
        "names": names,
        "python_names": tuple(python_names),
        "max_passes": max_passes,
    }
    python_learned, learned = learn_pair(cases, python, start, **options)
    held_out, folds = cross_validate(cases, python, start, **options)
    return {
        "off_python": learned.as_dict(),
        "python": python_learned.as_dict(),
        "source": f"learned on {len(cases)} instances of {len(folds)} repositories, "
        f"pooled: {', '.join(sorted({one.split for one in labeled}))}; held: "
        f"{sorted(hold)}; Python's learned: {sorted(python_names)}",
        "scores": {
            "before": _table(labeled, [case_metrics(c, python, start) for c in cases]),
            "learned_in_sample": _table(
                labeled, [case_metrics(c, python_learned, learned) for c in cases]
            ),
            "learned_cross_validated": _table(labeled, held_out),
        },
        "folds": {
            group: {"python": p.as_dict(), "off_python": w.as_dict()}
            for group, (p, w) in folds.items()
        },
    }


def run(
    pairs: Sequence[tuple[Path, Path]],
    out: Path,
    *,
    hold: Sequence[str] = (),
    python_names: Sequence[str] = (),
) -> dict[str, Any]:
    found = report(pairs, hold=hold, python_names=python_names)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(found, indent=1) + "\n")
    return found


def _table(
    labeled: Sequence[Labeled], per_case: Sequence[npt.NDArray[np.float64]]
) -> dict[str, dict[str, float]]:
    """Mean metrics (percent) by ``split/language``, by split, and over every case."""
    groups: dict[str, list[npt.NDArray[np.float64]]] = {}
    for one, metrics in zip(labeled, per_case, strict=True):
        for key in (f"{one.split}/{one.language}", one.split, "pooled"):
            groups.setdefault(key, []).append(metrics)
    return {
        key: {"n": len(rows)}
        | {m: round(float(v), 1) for m, v in zip(METRICS, 100 * np.mean(rows, axis=0), strict=True)}
        for key, rows in sorted(groups.items())
    }
