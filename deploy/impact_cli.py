"""``gazetteer impact REPO``: what a change touches, asked of a running query service
(issue 20). The change is a diff this checkout's git makes (``--diff-range A..B``,
``--branch B`` against the merge base with HEAD, or by default the uncommitted changes
against HEAD), a diff file (``--diff-file PATH|-``), or a list of files or symbols; the
verb sends it to ``POST /repositories/{repo}/impact`` and prints the answer, one line
an item. Like the other query verbs it needs httpx and nothing else of ours (issue 20:
a CLI query in under 0.5 s)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from deploy.query_cli import bearer
from query.service_client import QueryError, expand, post_json_now


class ChangeError(Exception):
    """The change could not be read here (git failed, no such diff file)."""


def git_diff(root: Path, revisions: list[str]) -> str:
    """``git diff`` in ``root`` with the a/ b/ prefixes and rename detection, whatever
    the user's git configuration says (diff.noprefix, external diff tools, colour)."""
    for rev in revisions:
        if rev.startswith("-"):
            raise ChangeError(f"not a revision: {rev!r}")
    command = [
        "git",
        "-C",
        str(root),
        "diff",
        "--no-color",
        "--no-ext-diff",
        "-M",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        *revisions,
        "--",
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except FileNotFoundError as exc:
        raise ChangeError("git is not installed (needed for --diff-range and --branch)") from exc
    if done.returncode != 0:
        raise ChangeError(f"git diff {' '.join(revisions)} in {root}: {done.stderr.strip()}")
    return done.stdout


def change_of(args: argparse.Namespace) -> dict[str, Any]:
    """The request body's change: one of files, symbols or diff."""
    root = Path(args.root)
    if args.files:
        return {"files": [_relative(p, root) for p in args.files]}
    if args.symbols:
        return {"symbols": list(args.symbols)}
    if args.diff_file == "-":
        return {"diff": sys.stdin.read()}
    if args.diff_file:
        try:
            return {"diff": Path(args.diff_file).read_text(encoding="utf-8", errors="replace")}
        except OSError as exc:
            raise ChangeError(f"cannot read {args.diff_file}: {exc.strerror}") from exc
    if args.diff_range:
        return {"diff": git_diff(root, [args.diff_range])}
    if args.branch:
        return {"diff": git_diff(root, [f"HEAD...{args.branch}"])}
    return {"diff": git_diff(root, ["HEAD"])}


def _relative(path: str, root: Path) -> str:
    """A path as the repository names it: an absolute one made relative to ``root``."""
    if not os.path.isabs(path):
        return path
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path  # outside: the service says so


def impact(args: argparse.Namespace) -> int:
    try:
        change = change_of(args)
    except ChangeError as exc:
        print(f"gazetteer impact: {exc}", file=sys.stderr)
        return 2
    if "diff" in change and not change["diff"].strip():
        print("gazetteer impact: the diff is empty: nothing changed", file=sys.stderr)
        return 0
    body = {**change, "depth": args.depth, "budget_tokens": args.budget, "limit": args.limit}
    path = expand("/repositories/{repo}/impact", {"repo": args.repo})
    try:
        with httpx.Client(base_url=args.url, timeout=60, headers=bearer(args.token)) as client:
            answer = post_json_now(client, path, body)
    except QueryError as exc:
        hint = "; is `gazetteer up` running there? (see --url)" if exc.status is None else ""
        print(f"gazetteer impact: {exc.message}{hint}", file=sys.stderr)
        return 2 if exc.status is None or exc.status < 500 else 1
    print_answer(answer)
    return 0


def _where(node: dict[str, Any]) -> str:
    lines = f":L{node['line_start']}-{node['line_end']}" if node["line_start"] else ""
    return f"{node['path'] or node['id']}{lines}"


def print_answer(answer: dict[str, Any]) -> None:
    """Changed, dependents, tests, neighborhoods, risk: a heading and a line an item."""
    print("# changed")
    for f in answer["changed_files"]:
        moved = f" -> {f['new_path']}" if f["new_path"] else ""
        lines = "whole" if f["whole"] else " ".join(f["lines"])
        note = f"  {f['note']}" if f["note"] else ""
        print(f"{f['status']}  {f['path']}{moved}  {lines}{note}")
    for s in answer["changed_symbols"]:
        print(f"  {_where(s)}  {s['qualname']}  {s['kind']}")
    print("# dependents")
    for d in answer["dependents"]:
        hub = "  hub" if d["hub"] else ""
        print(f"{d['hop']}  {_where(d)}  {d['name']}  {d['edge_kind']} {d['confidence']}{hub}")
    print("# tests")
    for t in answer["tests"]:
        print(f"{t['path']}  {t['link']}  hop {t['hop']}  ({t['of']})")
    print("# neighborhoods")
    for n in answer["neighborhoods"]:
        entry = ", ".join(
            p + ("*" if p in n["entry_points_touched"] else "") for p in n["entry_points"]
        )
        print(f"{n['label']}  {n['changed']} changed, {n['dependents']} dependent; entry {entry}")
    risk = answer["risk"]
    print(f"# risk {risk['level']}")
    for reason in risk["reasons"]:
        print(f"  {reason}")
    left = ", ".join(f"{n} {name}" for name, n in answer["left_out"].items())
    print(
        f"# {len(answer['dependents'])} of {answer['dependents_total']} dependents,"
        f" {len(answer['tests'])} of {answer['tests_total']} tests;"
        f" {answer['tokens']} of {answer['budget_tokens']} tokens"
        f"{'; left out ' + left if left else ''}; index {answer['freshness']['status']}",
        file=sys.stderr,
    )
