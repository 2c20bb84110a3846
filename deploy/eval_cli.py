"""``gazetteer eval``: measure retrieval on a benchmark (``localize``) and fit the ranking
weights on what it measured (``tune``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deploy.eval_localize import run as run_localize
from deploy.eval_peer import PEERS
from deploy.eval_tune import run as run_tune


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    evaluate = sub.add_parser("eval", help="measure retrieval on a benchmark")
    tasks = evaluate.add_subparsers(dest="task", required=True)
    localize = tasks.add_parser(
        "localize", help="rank files for real issues; write predictions score.py reads"
    )
    localize.add_argument("--dataset", type=Path, required=True, help="instances, JSON lines")
    localize.add_argument(
        "--repos", type=Path, required=True, help="holds <owner>__<name>__<sha12>/ per instance"
    )
    localize.add_argument("--out", type=Path, required=True, help="predictions, JSON lines")
    localize.add_argument("--limit", type=int, help="only the first N instances")
    localize.add_argument(
        "--embedder", help="add the dense signal: default, hash:256, onnx:..., st:..., openai:..."
    )
    localize.add_argument(
        "--peer",
        choices=PEERS,
        default="bm25",
        help="the same-run peer: whole-file BM25 over code-aware tokens (*.peer-bm25.jsonl)",
    )
    tune = tasks.add_parser(
        "tune", help="fit the ranking weights on the candidates `eval localize` wrote"
    )
    tune.add_argument("--dataset", type=Path, required=True, help="instances with gold_files")
    tune.add_argument(
        "--signals", type=Path, required=True, help="the *.signals.jsonl of `eval localize`"
    )
    tune.add_argument("--out", type=Path, required=True, help="the ranking profile, JSON")


def run(args: argparse.Namespace) -> int:
    if args.task == "tune":
        return tune(args)
    if not args.dataset.is_file():
        print(f"gazetteer eval localize: no dataset at {args.dataset}", file=sys.stderr)
        return 2
    if not args.repos.is_dir():
        print(f"gazetteer eval localize: no directory {args.repos}", file=sys.stderr)
        return 2
    try:
        done = run_localize(
            args.dataset, args.repos, args.out, args.limit, args.embedder, args.peer
        )
    except ValueError as exc:
        print(f"gazetteer eval localize: {exc}", file=sys.stderr)
        return 2
    print(f"{done} instances localized; predictions in {args.out}")
    return 0 if done else 1


def tune(args: argparse.Namespace) -> int:
    for given in (args.dataset, args.signals):
        if not given.is_file():
            print(f"gazetteer eval tune: no file {given}", file=sys.stderr)
            return 2
    try:
        found = run_tune(args.dataset, args.signals, args.out)
    except ValueError as exc:
        print(f"gazetteer eval tune: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(found["scores"], indent=1))
    print(f"weights {found['weights']} in {args.out}")
    return 0
