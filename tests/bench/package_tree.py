"""Real code bases for the in-process graph benchmarks: a package's tree from its wheel.

The wheel is fetched the way `corpus.py` fetches django's (this interpreter's pip,
``--no-deps --only-binary=:all:``) and cached under ``~/.cache/gazetteer/bench``; its
``NAME/`` tree is extracted once beside it. No git here: these benchmarks feed the
events to a `RepoIndex` themselves, built like a full scan builds them (the file
reader's rules: inline up to 1 MB, binary files recorded as skipped).
"""

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from processors.indexer import RepoIndex
from processors.parsing import ParseResult, parse_file
from producers.events import EventBase, FileChanged
from producers.file_reader import DEFAULT_MAX_BYTES, classify
from tests.bench.corpus import CACHE_DIR
from tests.factories import Stamp

CORPORA = ("sympy", "django")


@dataclass(frozen=True, slots=True)
class PackageTree:
    """A package's source tree: every file's bytes by repository path ('django/...')."""

    name: str
    version: str
    root: Path
    files: dict[str, bytes]

    @property
    def bytes(self) -> int:
        return sum(map(len, self.files.values()))

    @property
    def py_files(self) -> list[str]:
        return sorted(p for p in self.files if p.endswith(".py"))


def wheel(name: str, cache: Path = CACHE_DIR) -> Path:
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


def package_tree(name: str, cache: Path = CACHE_DIR) -> PackageTree:
    """The ``name/`` tree of the package's wheel, extracted once, read into memory."""
    archive_path = wheel(name, cache)
    version = archive_path.name.split("-")[1]
    root = cache / f"{name}-{version}-tree"
    if not root.is_dir():
        # Extracted aside and renamed into place: a half-extracted tree is never reused.
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        with zipfile.ZipFile(archive_path) as archive:
            members = [n for n in archive.namelist() if n.startswith(f"{name}/")]
            archive.extractall(partial, members)
        partial.rename(root)
    files = {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }
    return PackageTree(name, version, root, files)


def scan_event(stamp: Stamp, path: str, data: bytes, origin: str = "scan") -> FileChanged:
    """A FileChanged as the producer sends it: the file reader's rules, stamped."""
    read = classify(data, max_bytes=DEFAULT_MAX_BYTES)
    return stamp.make(
        FileChanged,
        path=path,
        content=read.content,
        content_hash=read.content_hash,
        size=read.size,
        skipped=read.skipped,
        origin=origin,  # type: ignore[arg-type]
        commit=None,
        working_tree=True,
    )


def scan_events(files: dict[str, bytes], stamp: Stamp) -> list[EventBase]:
    """A full scan of these files: the session's claim, one FileChanged per file, then
    ScanCompleted."""
    events: list[EventBase] = [stamp.claim()]
    events += [scan_event(stamp, p, d) for p, d in sorted(files.items())]
    events.append(stamp.scan_completed(commit=None, files=len(files)))
    return events


class GcMeter:
    """Seconds spent in the cyclic garbage collector while installed."""

    def __init__(self) -> None:
        self.seconds, self.collections, self._started = 0.0, 0, 0.0

    def __enter__(self) -> GcMeter:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1


class TimedParser:
    """`parse_file`, with the seconds spent in it summed (RepoIndex's injectable parser)."""

    def __init__(self, parse: Callable[[str, bytes], ParseResult] = parse_file) -> None:
        self._parse = parse
        self.seconds = 0.0
        self.calls = 0

    def __call__(self, path: str, content: bytes) -> ParseResult:
        started = time.perf_counter()
        try:
            return self._parse(path, content)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


def build_index(tree: PackageTree, stamp: Stamp | None = None) -> tuple[RepoIndex, Stamp]:
    """A RepoIndex after a full scan of the tree (untimed: for the oracle and samples)."""
    stamp = stamp or Stamp(repo=tree.name)
    index = RepoIndex(tree.name)
    for event in scan_events(tree.files, stamp):
        index.handle(event, 0.0)
    return index, stamp
