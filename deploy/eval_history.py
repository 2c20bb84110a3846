"""``gazetteer eval history``: add the repository's history to the signals `eval
localize` wrote (issue 17: past commit messages -> the files they changed; fix
frequency).

For each instance, the commits of its base commit and its ancestors (never a later one:
the fix and everything after it are out of reach), read with ``git log`` from the
repository's git directory (``MIRRORS/<owner>+<name>/repo``, as `fetch` leaves it), the
newest `COMMITS` of them without merges; `query.search.history.CommitHistory` scores
the issue against their messages and gives each candidate its ``history`` and
``fixes`` signals. Writes the signals file again with them added, for `eval learn`.

Evaluation only: the service computes neither (no history reaches the read side yet);
both weigh 0 by default.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import structlog

from deploy.eval_localize import Instance, read_instances
from query.search.history import Commit, CommitHistory

log = structlog.get_logger(__name__)

COMMITS = 5000
"""The newest commits before the base read per instance (all of most of these
repositories; pytest's 17 k would take the last few years)."""


def git_dir(mirrors: Path, repo: str) -> Path:
    owner, name = repo.split("/", 1)
    return mirrors / f"{owner}+{name}" / "repo"


def commits_before(git: Path, commit: str, limit: int = COMMITS) -> list[Commit]:
    """``commit`` and its ancestors, newest first, merges left out: each commit's
    subject and body, and the paths it changed."""
    out = subprocess.run(
        [
            "git",
            f"--git-dir={git}",
            "log",
            "--no-merges",
            "--no-renames",
            f"-n{limit}",
            "--name-only",
            "--format=%x1e%s%n%b%x1f",
            commit,
        ],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", errors="replace")
    return list(parse_log(out))


def parse_log(out: str) -> Iterator[Commit]:
    """The commits of ``git log --name-only --format=%x1e%s%n%b%x1f``'s output."""
    for block in out.split("\x1e")[1:]:
        message, _, names = block.partition("\x1f")
        files = tuple(line for line in names.splitlines() if line.strip())
        yield Commit(message.strip(), files)


def augment(dataset: Path, signals: Path, mirrors: Path, out: Path) -> int:
    """``signals`` again, each candidate with its ``history`` and ``fixes``; returns the
    instances written."""
    instances: dict[str, Instance] = {i.instance_id: i for i in read_instances(dataset)}
    out.parent.mkdir(parents=True, exist_ok=True)
    done = 0
    with signals.open() as lines, out.open("w") as written:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            instance = instances[row["instance_id"]]
            commits = commits_before(git_dir(mirrors, instance.repo), instance.base_commit)
            history = CommitHistory(commits)
            paths = [path for path, _ in row["candidates"]]
            found = history.signals(instance.problem_statement, paths)
            for path, own in row["candidates"]:
                own.update(found.get(path, {}))
            written.write(json.dumps(row) + "\n")
            done += 1
            log.info(
                "instance_history_added",
                instance=instance.instance_id,
                commits=len(history),
                with_history=sum("history" in s for s in found.values()),
            )
    return done
