"""Chunks: a file cut into the pieces an agent retrieves and reads, from its symbols.

Rules, for a parsed file (``record.language`` set):

- **Functions and methods** get one chunk each, over all their lines (decorators
  included, nested functions and classes inside them too: they are part of its logic).
- **Classes** (and structs, traits, enums, namespaces, interfaces, types) get one chunk
  of their own lines: header, docstring, attributes, with each member that has its own
  chunk replaced by its signature line. The outline is kept because a class's own lines
  are often only a header and a docstring; with its members' signatures the chunk says
  what the class does, which is what a query naming the class looks for, while each
  body stays in exactly one chunk. Members of an interface are declarations without
  bodies and stay in the interface's chunk.
- **Module-level lines** (imports, constants, script code: lines in no chunk above)
  are cut into stretches at symbols and blank-trimmed, then packed in order into
  chunks of at most ``window_lines`` lines. Packing keeps a one-line ``logger = ...``
  from becoming a chunk of its own that BM25's length normalization would over-rank.
- **Documents** (README, ``.md``/``.rst``/``.txt``, which issues often talk about):
  sections cut at Markdown headings, packed the same way (kind ``DOC``, the signature
  is the first heading).

Long texts keep their head (``max_lines``, ``max_chars``); the line range stays the
symbol's. Skipped and minified files get no chunks.

Ids: ``path#Qual.name`` for a symbol (a repeated qualname, like a property's getter
and setter, gets ``~2``, ``~3`` in line order), ``path#module:N`` and ``path#doc:N``
(N from 1, in line order) for packed lines. None of them contains a line number, so an
edit that only shifts lines keeps every id; an edit that adds or removes a module
stretch can renumber the ones after it, which costs an upsert but no embedding: the
``content_hash`` (sha256 of `embed_text`) is what a vector cache is keyed by.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from stores.records import ChunkRecord, FileRecord, SymbolRecord
from stores.text.chunk_text import text_of

__all__ = ["DOC_NAMES", "DOC_SUFFIXES", "chunk_file", "is_document"]

DOC_SUFFIXES = (".md", ".markdown", ".rst", ".txt", ".adoc")
DOC_NAMES = frozenset({"readme", "changelog", "changes", "contributing", "history", "news"})
_CALLABLE = frozenset({"FUNCTION", "METHOD"})
_NO_CHUNK = frozenset({"VARIABLE"})  # part of the lines around it
_FOLDS_MEMBERS = frozenset({"INTERFACE"})
_HEADING = re.compile(r"#{1,6}\s")
_FENCE = ("```", "~~~")


def is_document(path: str) -> bool:
    """A file of prose worth retrieving although no parser reads it."""
    name = path.rsplit("/", 1)[-1].lower()
    return name.endswith(DOC_SUFFIXES) or name in DOC_NAMES


def chunk_file(
    record: FileRecord,
    content: bytes,
    *,
    max_lines: int = 150,
    max_chars: int = 8_000,
    window_lines: int = 50,
) -> tuple[ChunkRecord, ...]:
    """The chunks of one file at one version, ordered by line (then longest first)."""
    if record.skipped or "minified" in record.problems:
        return ()
    lines = _lines(content)
    if record.language is None:
        if not is_document(record.path):
            return ()
        return tuple(_documents(record.path, lines, window_lines, max_chars))
    owners = _owners(record.symbols, len(lines))
    innermost, enclosing = _nesting(owners, len(lines))
    cap = _Cap(max_lines, max_chars)
    chunks = [
        _symbol_chunk(record.path, i, owners, innermost, enclosing, lines, cap)
        for i in range(len(owners))
    ]
    chunks = _with_unique_ids(chunks)
    stretches = _runs([n for n in range(1, len(lines) + 1) if innermost[n] is None])
    pieces = _pieces(stretches, lines, window_lines)
    chunks += _packed(record.path, "module", "MODULE", pieces, lines, window_lines, max_chars)
    return tuple(sorted(chunks, key=lambda c: (c.line_start, -c.line_end, c.id)))


@dataclass(frozen=True, slots=True)
class _Cap:
    lines: int
    chars: int

    def __call__(self, lines: Sequence[str]) -> str:
        text = "\n".join(lines[: self.lines])
        if len(text) <= self.chars:
            return text
        cut = text.rfind("\n", 0, self.chars + 1)
        return text[: cut if cut > 0 else self.chars]


def _lines(content: bytes) -> list[str]:
    """Lines as `parse_file` counts them (split at b"\\n"), without their ends."""
    text = content.decode("utf-8", errors="replace").removeprefix("\ufeff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _owners(symbols: Sequence[SymbolRecord], last_line: int) -> list[SymbolRecord]:
    """The symbols that own a chunk: not variables, not inside a function (its chunk
    holds them) nor inside an interface; in line order, outer before inner."""
    kind_of = {s.qualname: s.kind for s in symbols}
    parent_of = {s.qualname: s.parent for s in symbols}
    owners = []
    for symbol in symbols:
        if symbol.kind in _NO_CHUNK or symbol.line_start > last_line:
            continue
        parent, depth = symbol.parent, 0  # up the parents; depth guards against a cycle
        while parent is not None and depth <= len(symbols):
            if kind_of.get(parent) in _CALLABLE or kind_of.get(parent) in _FOLDS_MEMBERS:
                break
            parent, depth = parent_of.get(parent), depth + 1
        else:
            owners.append(symbol)
    return sorted(owners, key=lambda s: (s.line_start, -s.line_end))


def _nesting(
    owners: Sequence[SymbolRecord], last_line: int
) -> tuple[list[int | None], list[int | None]]:
    """Per line (1-based), the index of the innermost owner holding it; per owner, the
    index of the owner directly around it."""
    innermost: list[int | None] = [None] * (last_line + 1)
    enclosing: list[int | None] = []
    stack: list[int] = []
    for i, symbol in enumerate(owners):
        while stack and owners[stack[-1]].line_end < symbol.line_start:
            stack.pop()
        enclosing.append(stack[-1] if stack else None)
        stack.append(i)
        for n in range(symbol.line_start, min(symbol.line_end, last_line) + 1):
            innermost[n] = i
    return innermost, enclosing


def _symbol_chunk(
    path: str,
    index: int,
    owners: Sequence[SymbolRecord],
    innermost: Sequence[int | None],
    enclosing: Sequence[int | None],
    lines: Sequence[str],
    cap: _Cap,
) -> ChunkRecord:
    symbol = owners[index]
    end = min(symbol.line_end, len(lines))
    if symbol.kind in _CALLABLE:
        own = lines[symbol.line_start - 1 : end]
    else:  # its own lines, and a signature line for each member with its own chunk
        own = []
        for n in range(symbol.line_start, end + 1):
            holder = innermost[n]
            if holder == index:
                own.append(lines[n - 1])
            elif holder is not None and enclosing[holder] == index:
                member = owners[holder]
                if member.line_start == n:
                    indent = lines[n - 1][: len(lines[n - 1]) - len(lines[n - 1].lstrip())]
                    own.append(f"{indent}{' '.join(member.signature.split())} ...")
    return _chunk(
        f"{path}#{symbol.qualname}",
        path,
        symbol.kind,
        symbol.qualname,
        (symbol.line_start, max(end, symbol.line_start)),
        symbol.signature,
        symbol.doc,
        cap(own),
    )


def _with_unique_ids(chunks: list[ChunkRecord]) -> list[ChunkRecord]:
    seen: dict[str, int] = {}
    unique = []
    for chunk in chunks:  # in line order: the first keeps the plain id
        seen[chunk.id] = seen.get(chunk.id, 0) + 1
        if seen[chunk.id] > 1:
            chunk = chunk.model_copy(update={"id": f"{chunk.id}~{seen[chunk.id]}"})
        unique.append(chunk)
    return unique


def _documents(
    path: str, lines: Sequence[str], window_lines: int, max_chars: int
) -> list[ChunkRecord]:
    starts, fenced = [1], False
    for n, line in enumerate(lines, start=1):
        if line.lstrip().startswith(_FENCE):
            fenced = not fenced
        elif not fenced and n > 1 and _HEADING.match(line):
            starts.append(n)
    sections = [(a, b - 1) for a, b in zip(starts, [*starts[1:], len(lines) + 1], strict=True)]
    pieces = _pieces(sections, lines, window_lines)
    return _packed(path, "doc", "DOC", pieces, lines, window_lines, max_chars)


def _runs(numbers: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive line numbers as (first, last) ranges."""
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


def _pieces(
    ranges: Sequence[tuple[int, int]], lines: Sequence[str], size: int
) -> list[tuple[int, int]]:
    """Ranges blank-trimmed and cut into windows of at most ``size`` lines, a window
    ending at a blank line in its second half when there is one."""
    pieces = []
    for first, last in ranges:
        start = first
        while start <= last:
            while start <= last and not lines[start - 1].strip():
                start += 1
            if start > last:
                break
            stop = min(start + size - 1, last)
            if stop < last:
                blank = next(
                    (n for n in range(stop, start + size // 2 - 1, -1) if not lines[n - 1].strip()),
                    None,
                )
                stop = blank if blank is not None else stop
            end = stop
            while not lines[end - 1].strip():
                end -= 1
            pieces.append((start, end))
            start = stop + 1
    return pieces


def _packed(
    path: str,
    label: str,
    kind: str,
    pieces: Sequence[tuple[int, int]],
    lines: Sequence[str],
    window_lines: int,
    max_chars: int,
) -> list[ChunkRecord]:
    """Pieces packed in order into chunks of at most ``window_lines`` lines."""
    groups: list[list[tuple[int, int]]] = []
    size = 0
    for start, end in pieces:
        if not groups or size + end - start + 1 > window_lines:
            groups.append([])
            size = 0
        groups[-1].append((start, end))
        size += end - start + 1
    cap = _Cap(2 * window_lines, max_chars)  # packing bounds the lines (and blank joins)
    chunks = []
    for n, group in enumerate(groups, start=1):
        text: list[str] = []
        for i, (start, end) in enumerate(group):
            if i and start > group[i - 1][1] + 1:  # a blank line where lines are left out
                text.append("")
            text += lines[start - 1 : end]
        heading = lines[group[0][0] - 1].strip() if kind == "DOC" else ""
        signature = heading.lstrip("#").strip() if _HEADING.match(heading) else None
        span = (group[0][0], group[-1][1])
        chunks.append(
            _chunk(f"{path}#{label}:{n}", path, kind, None, span, signature, None, cap(text))
        )
    return chunks


def _chunk(
    id_: str,
    path: str,
    kind: str,
    qualname: str | None,
    span: tuple[int, int],
    signature: str | None,
    doc: str | None,
    text: str,
) -> ChunkRecord:
    digest = hashlib.sha256(text_of(path, qualname, doc, text).encode()).hexdigest()
    return ChunkRecord(
        id=id_,
        path=path,
        kind=kind,
        qualname=qualname,
        line_start=span[0],
        line_end=span[1],
        signature=signature,
        doc=doc,
        text=text,
        content_hash=digest,
    )
