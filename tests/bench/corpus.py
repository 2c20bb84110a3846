"""The benchmarks' corpus: django's package tree from its PyPI wheel, as a git repository.

A real code base, fetched the ordinary way (``pip download --only-binary=:all:`` with
this interpreter's pip) and cached under ``~/.cache/gazetteer/bench``: the wheel once,
then one git repository of its ``django/`` tree, committed with a fixed author and
date so that its head commit is the same on every machine. Which django pip picks
depends on the interpreter (5.2.x on Python 3.11); the results name the version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE_DIR = Path.home() / ".cache" / "gazetteer" / "bench"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Gazetteer Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_NAME": "Gazetteer Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@dataclass(frozen=True, slots=True)
class Corpus:
    """A committed repository and what it holds."""

    root: Path
    version: str
    files: int
    py_files: int
    bytes: int

    @property
    def mb(self) -> float:
        return self.bytes / 1e6


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def package_wheel(name: str, cache: Path = CACHE_DIR) -> Path:
    """The cached wheel of a pure-Python package, downloaded by pip on first use."""
    wheels = cache / "wheels"
    found = sorted(wheels.glob(f"{name}-*-py3-none-any.whl"))
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
        subprocess.run([*pip, "--only-binary=:all:", name, "-d", str(wheels)], check=True)
        found = sorted(wheels.glob(f"{name}-*-py3-none-any.whl"))
    if not found:
        raise RuntimeError(f"pip downloaded no {name} wheel into {wheels}")
    return found[-1]


def django_wheel(cache: Path = CACHE_DIR) -> Path:
    """The cached django wheel, downloaded by pip on first use."""
    return package_wheel("django", cache)


def package_repo(name: str, cache: Path = CACHE_DIR) -> Corpus:
    """The ``name/`` tree of the package's wheel as a committed git repository (built
    once, then reused)."""
    wheel = package_wheel(name, cache)
    version = wheel.name.split("-")[1]
    root = cache / f"{name}-{version}-repo"
    if not root.is_dir():
        # Built aside and renamed into place: a half-built repository is never reused.
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.startswith(f"{name}/")]
            archive.extractall(partial, members)
        git(partial, "init", "-q", "-b", "main")
        git(partial, "add", "-A")
        git(partial, "commit", "-q", "-m", f"{name} {version} from its wheel")
        partial.rename(root)
    return describe(root, version)


def django_repo(cache: Path = CACHE_DIR) -> Corpus:
    """The django tree as a committed git repository (built once, then reused)."""
    return package_repo("django", cache)


def describe(root: Path, version: str) -> Corpus:
    """Counts of what git lists in ``root`` (what the scan will emit)."""
    paths = git(root, "ls-files", "-z").split("\0")
    paths = [p for p in paths if p]
    size = sum((root / p).stat().st_size for p in paths)
    py = sum(1 for p in paths if p.endswith(".py"))
    return Corpus(root, version, len(paths), py, size)


def clone(corpus: Corpus, dest: Path) -> Corpus:
    """A private copy to edit (local clone: objects hard-linked, work tree written)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    git(dest.parent, "clone", "-q", str(corpus.root), str(dest))
    return Corpus(dest, corpus.version, corpus.files, corpus.py_files, corpus.bytes)
