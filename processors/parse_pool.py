"""Parsing a scan's files ahead, in a pool of processes: every core for a first index.

A full scan brings its files in batches of events; parsing and extracting them took
46% of a sympy build in one process (issue 21). `ParsePool.ahead` sends the files of a
batch to worker processes in chunks, in order, and returns at once; the indexer then
takes each file's result as its event comes up (`Ahead.take`), while the workers parse
the next ones. A file's facts are a pure function of its path and bytes
(`parse_file`, whatever its caches hold), so the graph is the same, byte for byte, as
the one-process build (tests/unit/test_parse_pool.py).

Facts come back as compact values (`pack`: every fact a tuple of its field values, in
declaration order), not as pickled pydantic records: they are rebuilt unvalidated,
each value set in its slot as stores.records.trusted builds a fact. Below
``min_files`` files (a small repository, an edit, a commit's few files) nothing leaves
the process: the pool is started on the first scan large enough, spawned (never
forked: the worker holds an event loop, a broker client and threads), and kept.

Workers keep no trees and no facts of their own (a kept tree serves the re-save of a
file, in the process that indexes it): the first edit of a file the pool parsed is
parsed whole, as after a restart.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import structlog

from processors.parsing import ParseResult, parse_file
from processors.parsing.reuse import TreeCache
from processors.parsing.splice import FactsCache
from stores.records import (
    Alias,
    Fact,
    ImportRecord,
    Keyword,
    ReferenceRecord,
    Section,
    SymbolRecord,
    fields_of,
)

__all__ = ["Ahead", "ParsePool", "available_cores", "pack", "unpack"]

log = structlog.get_logger(__name__)

MIN_FILES = 64
"""Files a scan must have brought before they are parsed in the pool: below, the round trips
and a first start of the workers (about a second each to import the parsers) cost more
than the parse."""
CHUNK_BYTES = 256 * 1024
"""Source a chunk of files sent to one worker holds at most (a file larger goes alone):
large enough to amortize a round trip, small enough that the first results come early
and the workers stay evenly busy."""

_FACTS: tuple[tuple[int, type[Fact]], ...] = (
    (2, SymbolRecord),
    (3, ImportRecord),
    (6, ReferenceRecord),
    (9, Section),
    (10, Keyword),
    (11, Alias),
)
"""The fields of a ParseResult that hold facts, by position, and their record class."""
_NAMES: dict[type[Fact], tuple[str, ...]] = {cls: tuple(fields_of(cls)) for _, cls in _FACTS}
_SLOTS: dict[type[Fact], tuple[Callable[[Fact, Any], None], ...]] = {
    cls: tuple(cls.__dict__[name].__set__ for name in names) for cls, names in _NAMES.items()
}
"""Each fact's slots, in field order: setting one bypasses the frozen ``__setattr__``."""

Packed = tuple[Any, ...]


def available_cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def pack(result: ParseResult) -> Packed:
    """The result as plain values: its fields in order, each fact a tuple of its
    fields' values (`unpack` rebuilds an equal result)."""
    values: list[Any] = [
        result.language,
        result.lines,
        result.symbols,
        result.imports,
        result.parse_errors,
        result.problems,
        result.references,
        result.package,
        result.purpose,
        result.sections,
        result.keywords,
        result.aliases,
    ]
    for at, cls in _FACTS:
        names = _NAMES[cls]
        values[at] = tuple(tuple([getattr(f, n) for n in names]) for f in values[at])
    return tuple(values)


def unpack(packed: Packed) -> ParseResult:
    """The ParseResult `pack` made ``packed`` of, its facts rebuilt without validation
    (their values come from this code's own extractors, in another process), as
    stores.records.trusted builds a fact: each value set in its slot. Faster than
    ``trusted`` (no dict per fact) and than pickling the facts (13.6 against 3.6 us a
    reference, measured on this machine under load; the trusted way took 8.4)."""
    values = list(packed)
    new = object.__new__
    for at, cls in _FACTS:
        slots = _SLOTS[cls]
        facts = []
        for fields in values[at]:
            fact = new(cls)
            for put, value in zip(slots, fields, strict=True):
                put(fact, value)
            facts.append(fact)
        values[at] = tuple(facts)
    return ParseResult(*values)


def parse_chunk(files: Sequence[tuple[str, bytes]], scope: str) -> list[Packed]:
    """In a worker: each file parsed from scratch (no trees nor facts kept), packed."""
    trees, kept = TreeCache(max_trees=0), FactsCache(max_bytes=0)
    return [pack(parse_file(p, c, trees=trees, kept=kept, scope=scope)) for p, c in files]


@dataclass(slots=True)
class Ahead:
    """The files of one batch being parsed in the pool: each one's content, its chunk's
    future and its place in the chunk. `take` hands a file's result over once."""

    pending: dict[str, tuple[bytes, Future[list[Packed]], int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.pending)

    def take(self, path: str, content: bytes) -> ParseResult | None:
        """The pool's result for ``path`` parsed from ``content`` (waiting for it), or
        None when it was not sent, was sent with other bytes, or its worker failed (the
        caller parses it then: the result is the same)."""
        entry = self.pending.pop(path, None)
        if entry is None:
            return None
        sent, future, at = entry
        if sent is not content and sent != content:
            return None
        try:
            return unpack(future.result()[at])
        except Exception:  # a worker died (BrokenProcessPool) or a bug: parse here
            log.exception("parse_ahead_failed", path=path)
            return None

    def cancel(self) -> None:
        """Drop what was not taken (the batch ended without it: a replay, a rejection)."""
        for _, future, _ in self.pending.values():
            future.cancel()
        self.pending.clear()


class ParsePool:
    """Worker processes that parse a scan's files ahead of its events (see the module).

    ``workers``: processes to start beside the indexing process, which keeps a core
    busy with the rest of the build (default: the cores available less that one); 0
    keeps every parse in process. The pool starts on the first `ahead` of a scan of
    ``min_files`` files or more; `close` stops it."""

    def __init__(
        self,
        workers: int | None = None,
        *,
        min_files: int = MIN_FILES,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> None:
        self.workers = available_cores() - 1 if workers is None else workers
        self.min_files = min_files
        self.chunk_bytes = chunk_bytes
        self._executor: ProcessPoolExecutor | None = None

    @property
    def started(self) -> bool:
        return self._executor is not None

    def ahead(self, scope: str, files: Sequence[tuple[str, bytes]], before: int = 0) -> Ahead:
        """Send ``files`` (path, content) to the workers, in order, in chunks, and return
        at once; nothing is sent without workers, nor while the scan is smaller than
        ``min_files`` files: ``before`` of it came in earlier batches (a broker hands a
        scan over in batches of any size). ``scope``: the repository, as `parse_file`
        takes it."""
        ahead = Ahead()
        if self.workers < 1 or not files or before + len(files) < self.min_files:
            return ahead
        executor = self._start()
        for chunk in _chunks(files, self.chunk_bytes):
            future = executor.submit(parse_chunk, chunk, scope)
            for at, (path, content) in enumerate(chunk):
                ahead.pending[path] = (content, future, at)
        return ahead

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None

    def _start(self) -> ProcessPoolExecutor:
        if self._executor is None:
            context = multiprocessing.get_context("spawn")
            self._executor = ProcessPoolExecutor(self.workers, mp_context=context)
            log.info("parse_pool_started", workers=self.workers)
        return self._executor


def _chunks(files: Sequence[tuple[str, bytes]], max_bytes: int) -> list[list[tuple[str, bytes]]]:
    """Consecutive files in chunks of at most ``max_bytes`` of source (at least one file
    each); a path given twice goes once, its last content. The first chunks are smaller
    (an eighth of ``max_bytes``, then doubling): the indexing process waits for the
    first result of every batch, the workers then keep ahead of it."""
    last = {path: content for path, content in files}
    chunks: list[list[tuple[str, bytes]]] = []
    size, limit = 0, max(1, max_bytes // 8)
    for path, content in last.items():
        if not chunks or (size + len(content) > limit and chunks[-1]):
            if chunks:
                limit = min(limit * 2, max_bytes)
            chunks.append([])
            size = 0
        chunks[-1].append((path, content))
        size += len(content)
    return chunks
