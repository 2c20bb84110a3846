"""A large file's facts after an edit, from the statements the edit touched.

An edit of a large file changes one byte range (the old and new contents' common prefix
and suffix aside), most often inside one function, yet a whole-file parse and
extraction of a 150 kB test module costs 50-130 ms. When the old contents parsed without
errors, `FactsCache.splice`:

1. takes the region around the changed range: whole statements, of the module or of the
   body of the class the change lies in (processors/parsing/regions.py says where the
   file can be cut, and why those cuts hold);
2. parses only that region of the new contents, with the class header when the region
   lies in a class body (`tree.parse_ranges`: its nodes keep their places in the file),
   and extracts it;
3. keeps the facts before the region as they were (a class's own record brought up to
   date: its end, its docstring), and moves those after it by the lines the region
   gained or lost (their columns stay: the region ends a line).

Two facts reach across statements in Python: the names bound at module level (a bare
read is a reference only when it reads one) and type parameters (`def f[T]` drops the
references named `T` in the whole file). The region is extracted with the module-level
names of the rest of the file; a name bound there no more drops its bare reads elsewhere,
a new one read elsewhere makes the whole file parse, and a file with type parameters is
never spliced (`FileFacts.whole_file`). The whole file is parsed too when the new region
has a syntax error or is most of the file, or when references past the cap would be
needed that were never kept. The facts are then those of a whole-file parse:
tests/unit/test_parsing_splice.py and test_parsing_regions.py compare both over random
and adversarial edits of real files.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from tree_sitter import Node, Tree

from processors.parsing import python
from processors.parsing.literals import literal_span
from processors.parsing.regions import Region, Starts, choose, holds_region, starts_of
from processors.parsing.reuse import Previous, Shelf, common_prefix, common_suffix
from processors.parsing.tree import MAX_REFERENCES, FileFacts, parse_ranges
from stores.records import ImportRecord, ReferenceRecord, SymbolRecord, trusted

MIN_BYTES = 8_000
"""Smaller files are parsed whole: a few milliseconds, not worth their kept copy."""
MAX_KEPT_BYTES = 64_000_000
"""The source kept between all files (their facts are shared with the index)."""


R = TypeVar("R", SymbolRecord, ImportRecord, ReferenceRecord)


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
    starts: Starts
    bindings: Counter[str] | None = None  # of the module-level names, once counted
    in_class: bool = False  # spliced from a region in a class body


class FactsCache:
    """The last facts of the files parsed lately, to splice their next version from."""

    def __init__(self, max_bytes: int = MAX_KEPT_BYTES, min_bytes: int = MIN_BYTES) -> None:
        self._shelf: Shelf[_Kept] = Shelf(max_items=1 << 30, max_bytes=max_bytes)
        self.min_bytes = min_bytes
        self.spliced = 0
        self.in_class = 0  # of them, from a region in a class body
        self.literals = 0  # edits of a number or comment in a function body, carried over
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
        self._shelf.put(path, _Kept(language, content, facts, starts_of(root)), len(content))

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
        self.in_class += done.in_class
        self._shelf.put(path, done, len(content))
        return done.facts

    def literal(self, path: str, content: bytes, tree: Tree, previous: Previous) -> Facts | None:
        """The kept facts of the path carried over to ``content``, when the edit from
        them is a literal one (processors/parsing/literals.py: ``tree`` is the new
        contents' tree, re-parsed from ``previous``); else None, the facts still kept
        for `splice`."""
        kept = self._shelf.take(path)
        if kept is None:
            return None
        done = None
        if kept.content == previous.content and len(content) >= self.min_bytes:
            done = _literal(kept, content, previous, tree)
        if done is None:
            self._shelf.put(path, kept, len(kept.content))
            return None
        self.literals += 1
        self._shelf.put(path, done, len(content))
        return done.facts


def _splice(kept: _Kept, content: bytes) -> _Kept | str:
    """The new kept facts, or why the whole file must be parsed."""
    old, old_facts = kept.content, kept.facts
    same = common_prefix(old, content)
    if same == len(old) == len(content):
        return kept
    suffix = common_suffix(old, content, min(len(old), len(content)) - same)
    changed_end = len(old) - suffix
    region = choose(old, content, same, changed_end, kept.starts, old_facts.symbols)
    if isinstance(region, str):
        return region
    moved = len(content) - len(old)
    if region.header is None:
        root = parse_ranges(kept.language, content, [(region.start, region.end + moved)])
    else:
        ranges = [region.header, (region.start, region.end + moved)]
        root = parse_ranges(kept.language, content, ranges)
        if root.has_error or not holds_region(root, region, content, moved):
            region = choose(old, content, same, changed_end, kept.starts, old_facts.symbols, False)
            if isinstance(region, str):
                return region
            root = parse_ranges(kept.language, content, [(region.start, region.end + moved)])
    if root.has_error:
        return "syntax"
    splicer = _LANGUAGES[kept.language]
    lines = (region.start_row, region.end_row)
    symbols = _cut(old_facts.symbols, _symbol_line, *lines)
    imports = _cut(old_facts.imports, _import_line, *lines)
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
    new_references = facts.references()
    if region.header is not None:  # the class header's facts are kept as they were
        new_symbols, owner = _class_members(new_symbols, region.owner_row + 1)
        new_imports = _from_row(new_imports, _import_line, region.start_row)
        new_references = _from_row(new_references, _reference_line, region.start_row)
    now_bound = splicer.bindings(new_symbols, new_imports)
    gone: set[str] = set()  # names no longer bound at module level, read elsewhere
    for name in region_bound.keys() | now_bound.keys():
        was, now = name in bound, name in outside or name in now_bound
        if was != now and _occurs(name, old, region.start, region.end):
            if now:
                return "names"  # a bare read elsewhere may now be a reference
            gone.add(name)
    rows = content.count(b"\n", region.start, region.end + moved) - old.count(
        b"\n", region.start, region.end
    )
    before: tuple[SymbolRecord, ...] | None = symbols[0]
    if region.header is not None:
        before = _owner_moved(symbols[0], owner, region, rows)
    if before is None:
        return "syntax"  # the header read differently: not the class that was
    references = _cut(old_facts.references, _reference_line, *lines)
    if gone:  # their bare reads elsewhere are references no more
        references = (_unread(references[0], gone), (), _unread(references[2], gone))
    head = references[0] + new_references
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
        before + new_symbols + _moved(symbols[2], rows, _symbol_moved),
        imports[0] + new_imports + _moved(imports[2], rows, _import_moved),
        known[:cut] + _moved(known[cut:], rows, _reference_moved),
        truncated,
    )
    inner = None if region.header is not None else starts_of(root)
    starts = kept.starts.spliced(region, inner, moved, rows)
    in_class = region.header is not None
    return _Kept(kept.language, content, spliced, starts, outside + now_bound, in_class)


def _literal(kept: _Kept, content: bytes, previous: Previous, tree: Tree) -> _Kept | None:
    """The kept facts carried over a literal edit: the references after the token on its
    line move by the bytes it gained or lost; the statement starts after it too."""
    old = kept.content
    same = common_prefix(old, content)
    moved = len(content) - len(old)
    new_end = len(content) - common_suffix(old, content, min(len(old), len(content)) - same)
    span = literal_span(previous, tree, same, new_end)
    if span is None:
        return None
    if not moved:
        return _Kept(kept.language, content, kept.facts, kept.starts, kept.bindings, kept.in_class)
    start = span[0]
    line_start = content.rfind(b"\n", 0, start) + 1
    line, column = content.count(b"\n", 0, start) + 1, start - line_start
    references = kept.facts.references
    i = bisect_left(references, (line, column), key=_position)
    j = bisect_left(references, line + 1, lo=i, key=_reference_line)
    shifted = tuple(
        trusted(ReferenceRecord, {**r.values(), "column": r.column + moved})
        for r in references[i:j]
    )
    facts = Facts(
        kept.facts.symbols,
        kept.facts.imports,
        references[:i] + shifted + references[j:],
        kept.facts.references_truncated,
    )
    starts = kept.starts
    moved_starts = Starts(
        tuple(b + moved if b > start else b for b in starts.bytes),
        starts.rows,
        tuple(b + moved if b > start else b for b in starts.bodies),
        starts.columns,
    )
    return _Kept(kept.language, content, facts, moved_starts, kept.bindings, kept.in_class)


def _position(record: ReferenceRecord) -> tuple[int, int]:
    return (record.line, record.column)


def _class_members(
    symbols: tuple[SymbolRecord, ...], line: int
) -> tuple[tuple[SymbolRecord, ...], SymbolRecord | None]:
    """A class region's symbols less the class itself (at ``line``), and the class."""
    owner = next((s for s in symbols if s.line_start == line and s.parent is None), None)
    return tuple(s for s in symbols if s is not owner), owner


def _from_row(records: tuple[R, ...], line: Callable[[R], int], row: int) -> tuple[R, ...]:
    return records[bisect_left(records, row + 1, key=line) :]


def _owner_moved(
    before: tuple[SymbolRecord, ...], parsed: SymbolRecord | None, region: Region, rows: int
) -> tuple[SymbolRecord, ...] | None:
    """The symbols before a class region with the class's own record brought up to date:
    its end (moved, or where the region's class ends when the region runs to it), its
    docstring (the region's, when the region starts with the body's first statement).
    None when the region's class is not the kept one."""
    at = next(
        (
            i
            for i in range(len(before) - 1, -1, -1)
            if before[i].line_start == region.owner_row + 1 and before[i].parent is None
        ),
        None,
    )
    if at is None or parsed is None:
        return None
    kept = before[at]
    if (parsed.qualname, parsed.kind, parsed.signature, parsed.bases) != (
        kept.qualname,
        kept.kind,
        kept.signature,
        kept.bases,
    ):
        return None
    values = kept.values()
    values["line_end"] = parsed.line_end if region.to_class_end else kept.line_end + rows
    if region.first_statement:
        values["doc"] = parsed.doc
    return (*before[:at], trusted(SymbolRecord, values), *before[at + 1 :])


def _cut(
    records: tuple[R, ...], line: Callable[[R], int], start_row: int, end_row: int
) -> tuple[tuple[R, ...], tuple[R, ...], tuple[R, ...]]:
    """``records`` (in source order) before, within and after rows [start_row, end_row)."""
    i = bisect_left(records, start_row + 1, key=line)
    j = bisect_left(records, end_row + 1, lo=i, key=line)
    return records[:i], records[i:j], records[j:]


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
    values = record.values()
    values["line_start"] += rows
    values["line_end"] += rows
    return trusted(SymbolRecord, values)


def _import_moved(record: ImportRecord, rows: int) -> ImportRecord:
    return record.model_copy(update={"line": record.line + rows})


def _reference_moved(record: ReferenceRecord, rows: int) -> ReferenceRecord:
    return trusted(ReferenceRecord, {**record.values(), "line": record.line + rows})
