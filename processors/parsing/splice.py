"""A large file's facts after an edit, from the top-level statements the edit touched.

An edit of a large file changes one byte range (the old and new contents' common prefix
and suffix aside), most often inside one function, yet a whole-file parse and
extraction of a 150 kB test module costs 50-130 ms. A Python module is a sequence of
top-level statements; those starting a line (column 0) cut the file where the lexer
holds no state (no open bracket, string or indented block). So, when the old contents
parsed without errors, `FactsCache.splice`:

1. widens the changed range to whole statements: from the last such start before it to
   the first one after it, both outside the change, so the new contents are cut at the
   same places with the same text around them;
2. parses only that region of the new contents (`tree.parse_range`: its nodes keep
   their places in the file) and extracts it;
3. keeps the facts before the region as they were, and moves those after it by the
   lines the region gained or lost (their columns stay: the region ends a line).

Two facts reach across statements in Python: the names bound at module level (a bare
read is a reference only when it reads one) and type parameters (`def f[T]` drops the
references named `T` in the whole file). The region is extracted with the module-level
names of the rest of the file; when the names bound in the region change, a name that
came or went must not occur anywhere else in the file, and a file with type parameters
is never spliced (`FileFacts.whole_file`). It also declines, and the caller parses the
whole file, when the new region has a syntax error, the region is half the file or
more, or the references reach their cap. The facts are then those of a whole-file parse:
tests/unit/test_parsing_splice.py compares both over random edits of real files.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tree_sitter import Node

from processors.parsing import python
from processors.parsing.reuse import Shelf, common_prefix, common_suffix
from processors.parsing.tree import MAX_REFERENCES, FileFacts, parse_range
from stores.records import ImportRecord, ReferenceRecord, SymbolRecord, trusted

MIN_BYTES = 8_000
"""Smaller files are parsed whole: a few milliseconds, not worth their kept copy."""
MAX_KEPT_BYTES = 64_000_000
"""The source kept between all files (their facts are shared with the index)."""


@dataclass(frozen=True, slots=True)
class Facts:
    """What one file's extraction found, in source order."""

    symbols: tuple[SymbolRecord, ...]
    imports: tuple[ImportRecord, ...]
    references: tuple[ReferenceRecord, ...]  # the first MAX_REFERENCES
    references_truncated: bool  # more than those


@dataclass(frozen=True, slots=True)
class _Splicer:
    extract: Callable[[Node, FileFacts, frozenset[str]], None]
    bindings: Callable[[Sequence[SymbolRecord], Sequence[ImportRecord]], Counter[str]]
    comment_marks: tuple[bytes, ...]


_LANGUAGES = {"python": _Splicer(python.extract, python.module_bindings, python.COMMENT_MARKS)}
SPLICED = frozenset(_LANGUAGES)


@dataclass(frozen=True, slots=True)
class _Kept:
    language: str
    content: bytes
    facts: Facts
    starts: tuple[int, ...]  # byte offsets of the top-level statements that start a line
    rows: tuple[int, ...]  # and their rows (0-based)
    bindings: Counter[str] | None = None  # of the module-level names, once counted


class FactsCache:
    """The last facts of the files parsed lately, to splice their next version from."""

    def __init__(self, max_bytes: int = MAX_KEPT_BYTES, min_bytes: int = MIN_BYTES) -> None:
        self._shelf: Shelf[_Kept] = Shelf(max_items=1 << 30, max_bytes=max_bytes)
        self.min_bytes = min_bytes
        self.spliced = 0
        self.declined: Counter[str] = Counter()  # why the whole-file parse had to answer

    @property
    def max_bytes(self) -> int:
        return self._shelf.max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._shelf.max_bytes = value

    def __len__(self) -> int:
        return len(self._shelf)

    @property
    def source_bytes(self) -> int:
        """The source kept (what this cache adds to the process: the facts are the index's)."""
        return self._shelf.bytes

    def keep(self, path: str, language: str, content: bytes, root: Node, facts: Facts) -> None:
        """Keep a whole-file parse's facts (of a tree without errors) to splice from."""
        if language not in _LANGUAGES or len(content) < self.min_bytes:
            self._shelf.take(path)
            return
        starts, rows = _line_starts(root)
        self._shelf.put(path, _Kept(language, content, facts, starts, rows), len(content))

    def forget(self, path: str) -> None:
        self._shelf.take(path)

    def splice(self, path: str, language: str, content: bytes) -> Facts | None:
        """The facts of ``content`` spliced from the path's kept facts, or None (then
        the caller parses the whole file and keeps its facts)."""
        kept = self._shelf.take(path)
        if kept is None or kept.language != language or len(content) < self.min_bytes:
            return None
        done = _splice(kept, content)
        if isinstance(done, str):
            self.declined[done] += 1
            return None
        self.spliced += 1
        self._shelf.put(path, done, len(content))
        return done.facts


def _splice(kept: _Kept, content: bytes) -> _Kept | str:
    """The new kept facts, or why the whole file must be parsed."""
    old = kept.content
    same = common_prefix(old, content)
    if same == len(old) == len(content):
        return kept
    suffix = common_suffix(old, content, min(len(old), len(content)) - same)
    changed_end = len(old) - suffix
    # The region: from the last statement start before the change (the first statement
    # may start after some comments or blank lines: then the file's start) to the first
    # one after it (or the end of the file); lines appended as new statements alone.
    if same == len(old) and _appended(old, content):
        first, start, start_row = len(kept.starts), same, old.count(b"\n")
    else:
        first = bisect_left(kept.starts, same) - 1
        start, start_row = (kept.starts[first], kept.rows[first]) if first >= 0 else (0, 0)
    after = bisect_right(kept.starts, changed_end)
    end = kept.starts[after] if after < len(kept.starts) else len(old)
    moved = len(content) - len(old)
    new_end = end + moved
    if 4 * (new_end - start) > 3 * len(content):
        return "region"
    tree = parse_range(kept.language, content, start, new_end)
    root = tree.root_node
    if root.has_error:
        return "syntax"
    splicer = _LANGUAGES[kept.language]
    old_facts = kept.facts
    end_row = kept.rows[after] if after < len(kept.starts) else old.count(b"\n") + 1
    symbols = _cut(old_facts.symbols, _symbol_line, start_row, end_row)
    imports = _cut(old_facts.imports, _import_line, start_row, end_row)
    bound = kept.bindings
    if bound is None:
        bound = splicer.bindings(old_facts.symbols, old_facts.imports)
    region_bound = splicer.bindings(symbols[1], imports[1])
    outside = bound - region_bound
    facts = FileFacts(content, splicer.comment_marks)
    splicer.extract(root, facts, frozenset(outside))
    if facts.whole_file:
        return "whole_file"
    new_symbols, new_imports = facts.symbols(), facts.imports()
    now_bound = splicer.bindings(new_symbols, new_imports)
    gone: set[str] = set()  # names no longer bound at module level, read elsewhere
    for name in region_bound.keys() | now_bound.keys():
        was, now = name in bound, name in outside or name in now_bound
        if was != now and _occurs(name, old, start, end):
            if now:
                return "names"  # a bare read elsewhere may now be a reference
            gone.add(name)
    rows = content.count(b"\n", start, new_end) - old.count(b"\n", start, end)
    references = _cut(old_facts.references, _reference_line, start_row, end_row)
    if gone:  # their bare reads elsewhere are references no more
        references = (_unread(references[0], gone), (), _unread(references[2], gone))
    head = references[0] + facts.references()
    known = head + references[2]
    if old_facts.references_truncated:
        # The kept references are the first of the old file's: those after the region
        # are the first of the new file's there too, then come others never kept.
        if len(known) < MAX_REFERENCES:
            return "references"
        truncated = True
    else:
        truncated = facts.references_truncated or len(known) > MAX_REFERENCES
    known = known[:MAX_REFERENCES]
    cut = min(len(head), len(known))  # where the references after the region start
    spliced = Facts(
        symbols[0] + new_symbols + _moved(symbols[2], rows, _symbol_moved),
        imports[0] + new_imports + _moved(imports[2], rows, _import_moved),
        known[:cut] + _moved(known[cut:], rows, _reference_moved),
        truncated,
    )
    region_starts, region_rows = _line_starts(root)
    return _Kept(
        kept.language,
        content,
        spliced,
        kept.starts[: max(first, 0)]
        + region_starts
        + tuple(s + moved for s in kept.starts[after:]),
        kept.rows[: max(first, 0)] + region_rows + tuple(r + rows for r in kept.rows[after:]),
        outside + now_bound,
    )


def _line_starts(root: Node) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The byte offsets and rows of the top-level statements that start a line. Not a
    comment's: one at column 0 does not close a block (tree-sitter may still hang it on
    the module, between statements indented below it)."""
    children = root.children
    points = [child.start_point for child in children]
    at = [i for i, p in enumerate(points) if p.column == 0 and not children[i].is_extra]
    return tuple(children[i].start_byte for i in at), tuple(points[i].row for i in at)


R = TypeVar("R", SymbolRecord, ImportRecord, ReferenceRecord)


def _cut(
    records: tuple[R, ...], line: Callable[[R], int], start_row: int, end_row: int
) -> tuple[tuple[R, ...], tuple[R, ...], tuple[R, ...]]:
    """``records`` (in source order) before, within and after rows [start_row, end_row)."""
    i = bisect_left(records, start_row + 1, key=line)
    j = bisect_left(records, end_row + 1, lo=i, key=line)
    return records[:i], records[i:j], records[j:]


def _appended(old: bytes, content: bytes) -> bool:
    """Whether ``content`` is ``old`` (whole lines) with lines added whose first one, past
    blank ones, starts a statement at column 0: nothing the old last one can take in (a
    clause such as `else:` would fail to parse on its own)."""
    if not old.endswith(b"\n"):
        return False
    for line in content[len(old) :].split(b"\n"):
        if line.strip():
            return line[:1] not in (b" ", b"\t", b"\f", b"#")
    return True


def _unread(
    references: tuple[ReferenceRecord, ...], names: set[str]
) -> tuple[ReferenceRecord, ...]:
    """``references`` less the bare reads of ``names`` (the uses without a qualifier)."""
    return tuple(
        r for r in references if r.kind != "use" or r.qualifier is not None or r.name not in names
    )


def _occurs(name: str, content: bytes, start: int, end: int) -> bool:
    """Whether ``name`` occurs as a word in ``content`` outside [start, end) (bytes of
    non-ASCII characters count as letters: `café` holds no `caf`)."""
    word = re.compile(rb"(?<![\w\x80-\xff])" + re.escape(name.encode()) + rb"(?![\w\x80-\xff])")
    return word.search(content, 0, start) is not None or word.search(content, end) is not None


def _moved(records: tuple[R, ...], rows: int, move: Callable[[R, int], R]) -> tuple[R, ...]:
    return records if not rows else tuple(move(record, rows) for record in records)


def _symbol_line(record: SymbolRecord) -> int:
    return record.line_start


def _import_line(record: ImportRecord) -> int:
    return record.line


def _reference_line(record: ReferenceRecord) -> int:
    return record.line


def _symbol_moved(record: SymbolRecord, rows: int) -> SymbolRecord:
    values = dict(record.__dict__)
    values["line_start"] += rows
    values["line_end"] += rows
    return trusted(SymbolRecord, values)


def _import_moved(record: ImportRecord, rows: int) -> ImportRecord:
    return record.model_copy(update={"line": record.line + rows})


def _reference_moved(record: ReferenceRecord, rows: int) -> ReferenceRecord:
    return trusted(ReferenceRecord, {**record.__dict__, "line": record.line + rows})
