"""Git itself as the oracle for the ignore rules: a tree written to disk, git's answer.

The git environment shuts out every configuration but the repository's own: no system
or global config and ``core.excludesFile`` pointed at ``/dev/null``, so the user's
global ignores never decide a test (the scan of a plain directory does not read them
either: producers/ignore.py).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/nonexistent-gazetteer-test-home",
    "XDG_CONFIG_HOME": "/nonexistent-gazetteer-test-home",
}


def git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = {**os.environ, **GIT_ENV}
    command = ["git", "-c", "core.excludesFile=/dev/null", *args]
    done = subprocess.run(command, cwd=root, env=env, input=stdin, capture_output=True)
    if done.returncode not in (0, 1):  # check-ignore says "nothing ignored" with 1
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def write_tree(
    root: Path,
    files: Iterable[str],
    ignore_files: Mapping[str, str],
    exclude: str | None = None,
) -> None:
    """``git init`` at ``root``, then the files (each holding its own path), the
    ``.gitignore`` texts (keyed by directory, "" = top) and ``info/exclude``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "--template=")
    for path in files:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(path)
    for directory, text in ignore_files.items():
        (root / directory).mkdir(parents=True, exist_ok=True)
        (root / directory / ".gitignore").write_bytes(text.encode("utf-8", "surrogateescape"))
    if exclude is not None:
        (root / ".git" / "info").mkdir(exist_ok=True)
        (root / ".git" / "info" / "exclude").write_text(exclude)


def _split(out: bytes) -> list[str]:
    return [os.fsdecode(p) for p in out.split(b"\0") if p]


def git_kept(root: Path) -> list[str]:
    """``git ls-files --cached --others --exclude-standard``, sorted."""
    return sorted(_split(git(root, "ls-files", "-z", "-co", "--exclude-standard")))


def git_ignored(root: Path, paths: Iterable[str]) -> set[str]:
    """The paths ``git check-ignore`` calls ignored (an excluded parent counts)."""
    data = b"".join(os.fsencode(p) + b"\0" for p in paths)
    return set(_split(git(root, "check-ignore", "--no-index", "-z", "--stdin", stdin=data)))
