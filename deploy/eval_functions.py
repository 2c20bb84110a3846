"""``gazetteer eval functions``: score function-level localization (issue 17).

The gold of an instance is its ``gold_functions`` (the Python splits) or, when it has
none, the functions its ``gold_patch`` changes in its gold files at the base commit
(`eval_gold.changed_functions`, the sources read from the checkout ``eval localize``
indexed). A prediction line holds ``ranked_functions`` (``path::qualname``, best
first).

The rule: ``path::<module>`` entries are left out of the gold (a changed import or
constant is no function to rank), and an instance left with no function is left out of
the scores (``scored`` says how many remain). Acc@k counts an instance when **all** its
gold functions are in the top k (the file-level rule, Agentless', LocAgent's and
SweRank's); Recall@k is the share of its gold functions there; MRR from the first gold
function. A missing prediction counts as a miss. Rows per ``language`` (``Python`` when
a row has none), then ``all``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from deploy.eval_gold import MODULE, changed_functions

KS = (1, 5, 10)


@dataclass(frozen=True, slots=True)
class Gold:
    instance_id: str
    language: str
    functions: frozenset[str]


def gold_of(row: Mapping[str, object], repos: Path) -> Gold:
    """One dataset row's gold functions, `<module>` entries left out."""
    given = row.get("gold_functions")
    if isinstance(given, list):
        names = [str(name) for name in given]
    else:
        owner, name = str(row["repo"]).split("/", 1)
        root = repos / f"{owner}__{name}__{str(row['base_commit'])[:12]}"
        gold_files = row.get("gold_files")
        paths = [str(p) for p in gold_files] if isinstance(gold_files, list) else []
        sources = {p: (root / p).read_bytes() for p in paths if (root / p).is_file()}
        names = changed_functions(str(row.get("gold_patch") or ""), sources)
    functions = frozenset(n for n in names if not n.endswith(f"::{MODULE}"))
    return Gold(str(row["instance_id"]), str(row.get("language") or "Python"), functions)


def read_gold(dataset: Path, repos: Path) -> list[Gold]:
    with dataset.open() as lines:
        return [gold_of(json.loads(line), repos) for line in lines if line.strip()]


def read_predictions(path: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    with path.open() as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                found[row["instance_id"]] = list(row.get("ranked_functions") or [])
    return found


def score(
    golds: Iterable[Gold], predicted: Mapping[str, Sequence[str]], ks: Sequence[int] = KS
) -> dict[str, dict[str, float]]:
    """Per language and ``all``: instances, scored, Acc@k, Recall@k, MRR (percent,
    two decimals)."""
    by_language: dict[str, list[Gold]] = {}
    for gold in golds:
        by_language.setdefault(gold.language, []).append(gold)
        by_language.setdefault("all", []).append(gold)
    rows: dict[str, dict[str, float]] = {}
    for language in [*sorted(k for k in by_language if k != "all"), "all"]:
        members = by_language[language]
        scored = [g for g in members if g.functions]
        acc = dict.fromkeys(ks, 0.0)
        recall = dict.fromkeys(ks, 0.0)
        mrr = 0.0
        for gold in scored:
            ranked = list(predicted.get(gold.instance_id, ()))
            for k in ks:
                top = set(ranked[:k])
                acc[k] += gold.functions <= top
                recall[k] += len(gold.functions & top) / len(gold.functions)
            mrr += next((1 / (i + 1) for i, f in enumerate(ranked) if f in gold.functions), 0.0)
        n = len(scored) or 1
        rows[language] = {
            "instances": len(members),
            "scored": len(scored),
            **{f"Acc@{k}": round(100 * acc[k] / n, 2) for k in ks},
            **{f"Recall@{k}": round(100 * recall[k] / n, 2) for k in ks},
            "MRR": round(100 * mrr / n, 2),
        }
    return rows


def run(dataset: Path, repos: Path, predictions: Sequence[Path]) -> dict[str, object]:
    """Each predictions file's scores, by its name."""
    golds = read_gold(dataset, repos)
    return {str(path): score(golds, read_predictions(path)) for path in predictions}
