"""The worker's graph build against the raw parse, and its growth with size (issue 21).

Part of `tests.bench.first_index`. Trees, from the wheels (`package_tree`):
``django``, ``sympy``, ``django+sympy`` (both packages in one tree) and ``sympy-x2``
(two copies of sympy in one tree, under ``a/`` and ``b/``).

- `graph_build_run`: `graph_build.full_build` (the worker's own build: a fresh
  `RepoIndex` fed a full scan's events, in process, one process today) in a fresh
  interpreter; its seconds, CPU, the parse/barrier split, its RSS growth and the
  process's peak RSS (``ru_maxrss``, events and tree included).
- `raw_parse_run`: tree-sitter's parse of the same files (the ones the build
  parses: configuration files aside) in a pool of ``processes`` fresh processes, timed
  from the first file handed out to the last one parsed, the pool started and its
  parsers built beforehand; each process reads its files itself (page cache warm).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

from deploy.cli import GC_THRESHOLDS
from deploy.logging_setup import configure_logging
from processors.parsing import language_for
from processors.parsing.tree import parser
from stores.records import CONFIG_LANGUAGES
from tests.bench.graph_build import full_build
from tests.bench.package_tree import PackageTree, package_tree

TREES = ("django", "sympy", "django+sympy", "sympy-x2")
CHUNK_FILES = 16  # files per task handed to a parsing process

T = TypeVar("T")


def compose(spec: str) -> tuple[PackageTree, list[tuple[str, str]]]:
    """The tree named ``spec`` and its parse jobs: (language, file on disk) per file
    the build parses."""
    if spec == "sympy-x2":
        sympy = package_tree("sympy")
        files = {f"{copy}/{p}": d for copy in ("a", "b") for p, d in sympy.files.items()}
        jobs = parse_jobs(sympy) * 2
        return PackageTree(spec, sympy.version, sympy.root, files), jobs
    parts = [package_tree(name) for name in spec.split("+")]
    if len(parts) == 1:
        return parts[0], parse_jobs(parts[0])
    files = {p: d for part in parts for p, d in part.files.items()}
    version = "+".join(part.version for part in parts)
    jobs = [job for part in parts for job in parse_jobs(part)]
    return PackageTree(spec, version, parts[0].root, files), jobs


def parse_jobs(tree: PackageTree) -> list[tuple[str, str]]:
    """What `graph_build.raw_parse` parses: every file in a language we parse."""
    jobs = []
    for path in sorted(tree.files):
        language = language_for(path)
        if language is not None and language not in CONFIG_LANGUAGES:
            jobs.append((language, str(tree.root / path)))
    return jobs


def in_fresh_process(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a spawned interpreter: its memory and collector are its own."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(fn, *args).result()


def graph_build_run(spec: str) -> dict[str, Any]:
    """The worker's build of the tree ``spec`` (run it through `in_fresh_process`)."""
    configure_logging("warning")
    gc.set_threshold(*GC_THRESHOLDS)  # as every gazetteer process sets it
    tree, _ = compose(spec)
    _, _, build = full_build(tree)
    keep = ("s", "cpu_s", "parse_file_s", "barrier_s", "rest_s", "gc_s", "rss_growth_mb")
    return {
        "files": len(tree.files),
        "mb": tree.bytes / 1e6,
        **{key: build[key] for key in keep},
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _warm(languages: list[str]) -> float:
    for language in languages:
        parser(language)
    time.sleep(0.2)  # so that every process of the pool takes one warm-up task
    return time.process_time()


def _parse_chunk(jobs: list[tuple[str, str]]) -> tuple[int, int, float]:
    cpu, size = time.process_time(), 0
    for language, path in jobs:
        with open(path, "rb") as source:
            data = source.read()
        parser(language).parse(data)
        size += len(data)
    return len(jobs), size, time.process_time() - cpu


def raw_parse_run(spec: str, processes: int) -> dict[str, Any]:
    """Tree-sitter's parse of the tree's files in a pool of ``processes``."""
    _, jobs = compose(spec)
    languages = sorted({language for language, _ in jobs})
    # Largest files first, dealt out in chunks: no process is left with the big tail.
    ordered = sorted(jobs, key=lambda job: (-os.path.getsize(job[1]), job))
    chunks = [ordered[i : i + CHUNK_FILES] for i in range(0, len(ordered), CHUNK_FILES)]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=processes, mp_context=context) as pool:
        list(pool.map(_warm, [languages] * processes))
        started = time.perf_counter()
        done = list(pool.map(_parse_chunk, chunks))
        seconds = time.perf_counter() - started
    return {
        "processes": processes,
        "files": sum(n for n, _, _ in done),
        "mb": sum(b for _, b, _ in done) / 1e6,
        "s": seconds,
        "cpu_s": sum(c for _, _, c in done),
    }
