"""Context pack recall: the share of instances whose gold files are all in the pack.

    python -m tests.bench.pack_recall DATASET.jsonl PREDICTIONS.pack.jsonl

``gazetteer eval localize`` writes, beside its predictions, the files of the context
pack (8,000 tokens) the service builds for each issue; this reads them against the
dataset's ``gold_files``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def recall(dataset: Path, packs: Path) -> dict[str, float]:
    gold = {}
    for line in dataset.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            gold[row["instance_id"]] = row["gold_files"]
    held = {}
    for line in packs.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            held[row["instance_id"]] = set(row["ranked_files"])
    every = sum(all(g in held.get(i, ()) for g in files) for i, files in gold.items())
    some = sum(any(g in held.get(i, ()) for g in files) for i, files in gold.items())
    sizes = [len(files) for files in held.values()] or [0]
    return {
        "instances": len(gold),
        "all_gold_in_pack": round(100 * every / len(gold), 1),
        "some_gold_in_pack": round(100 * some / len(gold), 1),
        "mean_files_in_pack": round(sum(sizes) / len(sizes), 1),
    }


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m tests.bench.pack_recall", description=__doc__)
    cli.add_argument("dataset", type=Path)
    cli.add_argument("packs", type=Path)
    args = cli.parse_args()
    print(json.dumps(recall(args.dataset, args.packs), indent=1))


if __name__ == "__main__":
    main()
