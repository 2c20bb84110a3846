"""``gazetteer eval tune``: fit the ranking weights on `eval localize`'s candidates.

Reads the instances (their ``gold_files``) and the ``*.signals.jsonl`` that
``gazetteer eval localize`` wrote beside its predictions, tunes the weights
(query/search/tuning.py), and writes a ranking profile: the weights, where they
come from, and their scores -- with the defaults, with the tuned weights on the cases
they were tuned on, and cross-validated by repository (each repository ranked by
weights tuned on the others: the honest number). ``gazetteer ranking set`` stores the
profile with the index.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from query.search.ranking import RankWeights
from query.search.tuning import Case, Scores, cross_validate, score, tune


def read_cases(dataset: Path, signals: Path) -> list[Case]:
    gold: dict[str, tuple[str, frozenset[str]]] = {}
    with dataset.open() as lines:
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    row = json.loads(line)
                    gold[row["instance_id"]] = (row["repo"], frozenset(row["gold_files"]))
                except (ValueError, KeyError, TypeError) as exc:
                    raise ValueError(f"{dataset}:{number}: not an instance ({exc})") from exc
    cases = []
    with signals.open() as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                repo, files = gold[row["instance_id"]]
                candidates = tuple((str(p), dict(s)) for p, s in row["candidates"])
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{signals}:{number}: not a signals line ({exc})") from exc
            cases.append(Case(repo, files, candidates))
    if not cases:
        raise ValueError(f"{signals}: no instance of {dataset} in it")
    return cases


def profile(dataset: Path, signals: Path) -> dict[str, Any]:
    """The ranking profile tuned on the cases, with its scores."""
    cases = read_cases(dataset, signals)
    default = RankWeights()
    tuned = tune(cases, default)
    held_out, per_fold = cross_validate(cases, default)
    return {
        "weights": tuned.as_dict(),
        "source": f"tuned on {dataset.name} ({len(cases)} instances)",
        "scores": {
            "default": _scores(score(cases, default)),
            "tuned_in_sample": _scores(score(cases, tuned)),
            "tuned_cross_validated": _scores(held_out),
        },
        "folds": {group: w.as_dict() for group, w in per_fold.items()},
    }


def run(dataset: Path, signals: Path, out: Path) -> dict[str, Any]:
    found = profile(dataset, signals)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(found, indent=1) + "\n")
    return found


def _scores(scores: Scores) -> dict[str, float]:
    return {k: round(v, 2) for k, v in dataclasses.asdict(scores).items()}
