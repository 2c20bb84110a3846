"""Context pack recall: the share of instances whose gold files are all in the pack.

    python -m tests.bench.pack_recall DATASET.jsonl PREDICTIONS.pack.jsonl

``gazetteer eval localize`` writes, beside its predictions, the files of the context
pack (8,000 tokens) the service builds for each issue; this reads them against the
dataset's ``gold_files``. A file is in the pack when the pack gives its path and lines
to read (``ranked_files``: its file groups, then its map). Each tier is reported
cumulatively too, when the line has them: ``excerpt`` (a file holding a target in
full), ``grouped`` (the file groups: targets, or related code's signatures; what the
pack held before it had a map) and ``all`` (the groups and the map); per ``language``
(``Python`` when a row has none) and overall.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from pathlib import Path

TIERS = {"excerpt": "excerpt_files", "grouped": "grouped_files", "all": "ranked_files"}


def _rows(path: Path) -> Iterable[dict]:
    for line in path.read_text().splitlines():
        if line.strip():
            yield json.loads(line)


def recall(dataset: Path, packs: Path) -> dict[str, dict[str, float]]:
    gold: dict[str, tuple[str, list[str]]] = {}
    for row in _rows(dataset):
        gold[row["instance_id"]] = (row.get("language") or "Python", row["gold_files"])
    held: dict[str, dict[str, set[str]]] = {}
    for row in _rows(packs):
        held[row["instance_id"]] = {t: set(row[f]) for t, f in TIERS.items() if f in row}
    tiers = [t for t in TIERS if any(t in h for h in held.values())]
    out: dict[str, dict[str, float]] = {}
    for language in [*sorted({lang for lang, _ in gold.values()}), "all"]:
        ids = [i for i, (lang, _) in gold.items() if language in ("all", lang)]
        row: dict[str, float] = {"instances": len(ids)}
        for tier in tiers:
            every = sum(all(g in held.get(i, {}).get(tier, ()) for g in gold[i][1]) for i in ids)
            row[f"all_gold_{tier}"] = round(100 * every / len(ids), 1)
        some = sum(any(g in held.get(i, {}).get("all", ()) for g in gold[i][1]) for i in ids)
        row["some_gold_all"] = round(100 * some / len(ids), 1)
        sizes = [len(held.get(i, {}).get("all", ())) for i in ids] or [0]
        row["mean_files_in_pack"] = round(sum(sizes) / len(sizes), 1)
        out[language] = row
    return out


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m tests.bench.pack_recall", description=__doc__)
    cli.add_argument("dataset", type=Path)
    cli.add_argument("packs", type=Path)
    args = cli.parse_args()
    print(json.dumps(recall(args.dataset, args.packs), indent=1))


if __name__ == "__main__":
    main()
