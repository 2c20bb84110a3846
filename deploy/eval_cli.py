"""``gazetteer eval``: measure retrieval on a benchmark (``localize``), score the functions
it ranked (``functions``), add the repository's history to its signals (``history``), fit
the ranking weights on what it measured (``tune``) and learn the defaults off Python on
every split pooled (``learn``). Its arguments: deploy/cli.py."""

from __future__ import annotations

import argparse
import json
import sys

from deploy.eval_functions import run as run_functions
from deploy.eval_history import augment
from deploy.eval_learn import run as run_learn
from deploy.eval_localize import run as run_localize
from deploy.eval_tune import run as run_tune
from deploy.settings import Settings


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The task ``args`` name; ``settings`` only set the logging up (in deploy/cli.py)."""
    if args.task == "tune":
        return tune(args)
    if args.task == "learn":
        return learn(args)
    if args.task == "functions":
        return functions(args)
    if args.task == "history":
        return history(args)
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


def functions(args: argparse.Namespace) -> int:
    for given in (args.dataset, *args.predictions):
        if not given.is_file():
            print(f"gazetteer eval functions: no file {given}", file=sys.stderr)
            return 2
    if not args.repos.is_dir():
        print(f"gazetteer eval functions: no directory {args.repos}", file=sys.stderr)
        return 2
    print(json.dumps(run_functions(args.dataset, args.repos, args.predictions), indent=1))
    return 0


def history(args: argparse.Namespace) -> int:
    for given in (args.dataset, args.signals):
        if not given.is_file():
            print(f"gazetteer eval history: no file {given}", file=sys.stderr)
            return 2
    if not args.mirrors.is_dir():
        print(f"gazetteer eval history: no directory {args.mirrors}", file=sys.stderr)
        return 2
    done = augment(args.dataset, args.signals, args.mirrors, args.out)
    print(f"{done} instances with history; signals in {args.out}")
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


def learn(args: argparse.Namespace) -> int:
    pairs = [(dataset, signals) for dataset, signals in args.split]
    for given in (path for pair in pairs for path in pair):
        if not given.is_file():
            print(f"gazetteer eval learn: no file {given}", file=sys.stderr)
            return 2
    try:
        found = run_learn(
            pairs, args.out, hold=args.hold or (), python_names=args.learn_python or ()
        )
    except ValueError as exc:
        print(f"gazetteer eval learn: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(found["scores"]["learned_cross_validated"], indent=1))
    print(f"off-Python weights {found['off_python']} in {args.out}")
    return 0
