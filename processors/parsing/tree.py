"""Tree-sitter plumbing shared by the language extractors.

Languages are built once per process and parsers once per thread (a tree-sitter Parser
is not safe to share between threads). `FileFacts` gathers one file's symbols and imports;
the extractors walk only the statement levels of the tree, so node text is sliced from
the file's bytes on demand and never decoded wholesale.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable

import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_rust
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Point, Range

from stores.records import (
    Alias,
    ImportRecord,
    ReferenceKind,
    ReferenceRecord,
    SymbolKind,
    SymbolRecord,
    trusted,
)

MAX_REFERENCES = 5000
"""References kept per file (in source order); more is a generated file, and the cap is
recorded as the problem ``references_truncated``."""
SIGNATURE_CHARS = 200
DOC_CHARS = 300
# A header is sliced before it is whitespace-collapsed, so a 50 kB default argument
# costs no more than this many bytes.
_HEADER_SCAN_BYTES = 4 * SIGNATURE_CHARS

_BREAK_AFTER_OPEN = re.compile(r"([(\[{])[ \t]*\r?\n\s*")
_BREAK_BEFORE_CLOSE = re.compile(r"\s*\n[ \t]*([)\]}])")

_GRAMMARS: dict[str, Callable[[], object]] = {
    "python": tree_sitter_python.language,
    "javascript": tree_sitter_javascript.language,
    "typescript": tree_sitter_typescript.language_typescript,
    "tsx": tree_sitter_typescript.language_tsx,
    "go": tree_sitter_go.language,
    "java": tree_sitter_java.language,
    "rust": tree_sitter_rust.language,
}

_local = threading.local()


@functools.cache
def language(name: str) -> Language:
    """The tree-sitter Language for one of the supported language names."""
    return Language(_GRAMMARS[name]())


def parser(name: str, kind: str = "parsers") -> Parser:
    """This thread's parser for a language (``kind="ranged"``: its second one, whose
    included ranges are set for each parse)."""
    parsers: dict[str, Parser] | None = getattr(_local, kind, None)
    if parsers is None:
        parsers = {}
        setattr(_local, kind, parsers)
    found = parsers.get(name)
    if found is None:
        found = parsers[name] = Parser(language(name))
    return found


def parse_ranges(name: str, content: bytes, ranges: list[tuple[int, int]]) -> Node:
    """The root of the byte ranges of ``content`` (in order) parsed as one text, its nodes
    where they are in ``content`` (tree-sitter's included ranges)."""
    found = parser(name, "ranged")
    found.included_ranges = [
        Range(point_at(content, start), point_at(content, end), start, end) for start, end in ranges
    ]
    return found.parse(content).root_node


def point_at(content: bytes, offset: int) -> Point:
    """The (row, byte column) of a byte offset."""
    row = content.count(b"\n", 0, offset)
    return Point(row, offset - (content.rfind(b"\n", 0, offset) + 1))


def count_errors(root: Node) -> int:
    """ERROR regions (the top-most only) plus MISSING nodes; clean subtrees are skipped."""
    if not root.has_error:
        return 0
    count = 0
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            count += 1
            continue
        stack.extend(child for child in node.children if child.has_error)
    return count


def first_line(node: Node) -> int:
    return node.start_point.row + 1


def last_line(node: Node) -> int:
    """1-based inclusive: a node that ends at column 0 ends on the line before."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row
    return end.row + 1


def collapse(text: str, limit: int) -> str:
    """Whitespace runs become one space; longer than `limit` is cut with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class AUTO:
    """Marker: work the reference's scope out from the recorded symbol spans."""


class FileFacts:
    """The symbols, imports and references of one file, kept in source order, and the
    file-level facts an extractor finds (``package``, ``aliases``)."""

    __slots__ = (
        "_comment_marks",
        "_imports",
        "_references",
        "_spans",
        "_symbols",
        "aliases",
        "content",
        "package",
        "references_truncated",
        "whole_file",
    )

    def __init__(self, content: bytes, comment_marks: tuple[bytes, ...]) -> None:
        self.content = content
        self._comment_marks = comment_marks
        self._symbols: list[tuple[int, SymbolRecord]] = []
        self._imports: list[tuple[int, ImportRecord]] = []
        self._references: list[tuple] = []  # type: ignore[type-arg]
        self._spans: list[tuple[int, int, str]] = []  # (start byte, end byte, qualname)
        self.references_truncated = False
        # Some fact of the file reaches beyond its own top-level statement (Python's
        # type parameters drop references in the whole file): it is never spliced.
        self.whole_file = False
        self.package: str | None = None
        self.aliases: list[Alias] = []

    def text(self, node: Node) -> str:
        return self.content[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def header(self, node: Node, start: int, end: int, trailing: str = "") -> str:
        """The text of `node` in [start, end), collapsed, without comments or `trailing`."""
        end = min(end, start + _HEADER_SCAN_BYTES)
        raw = self.content[start:end]
        if any(mark in raw for mark in self._comment_marks):
            raw = self._without_comments(node, start, end)
        text = raw.decode("utf-8", "replace").rstrip()
        if "\n" in text:  # "def f(\n    a,\n)" reads as "def f(a,)", not "def f( a, )"
            text = _BREAK_BEFORE_CLOSE.sub(r"\1", _BREAK_AFTER_OPEN.sub(r"\1", text))
        if trailing:
            text = text.rstrip(trailing).rstrip()
        return collapse(text, SIGNATURE_CHARS)

    def _without_comments(self, node: Node, start: int, end: int) -> bytes:
        # Only reached when a comment marker is in the header text: a rare walk.
        comments: list[tuple[int, int]] = []
        stack = [node]
        while stack:
            current = stack.pop()
            if current.end_byte <= start or current.start_byte >= end:
                continue
            if current.type == "comment":
                comments.append((current.start_byte, current.end_byte))
            else:
                stack.extend(current.children)
        pieces, at = [], start
        for comment_start, comment_end in sorted(comments):
            pieces.append(self.content[at:comment_start])
            at = comment_end
        pieces.append(self.content[at:end])
        return b" ".join(pieces)

    def symbol(
        self,
        name: str,
        kind: SymbolKind,
        *,
        first: Node,
        last: Node,
        signature: str,
        parent: str | None,
        doc: str | None = None,
        bases: tuple[str, ...] = (),
        implements: tuple[str, ...] = (),
        exported: bool = True,
        value_type: str | None = None,
    ) -> str | None:
        """Record a symbol spanning `first` to `last`; returns its qualname.

        A nameless declaration (broken code: the name is a MISSING node) is not recorded,
        and the parent's qualname is returned for what it contains.
        """
        if not name:
            return parent
        qualname = f"{parent}.{name}" if parent else name
        line_start = first_line(first)
        record = trusted(
            SymbolRecord,
            {
                "name": name,
                "qualname": qualname,
                "kind": kind,
                "line_start": line_start,
                "line_end": max(last_line(last), line_start),
                "signature": signature,
                "parent": parent,
                "doc": doc,
                "bases": bases,
                "implements": implements,
                "exported": exported,
                "value_type": value_type,
            },
        )
        self._symbols.append((first.start_byte, record))
        self._spans.append((first.start_byte, last.end_byte, qualname))
        return qualname

    def import_(
        self,
        module: str,
        names: tuple[str, ...],
        node: Node,
        level: int = 0,
        *,
        alias: str | None = None,
        local_names: tuple[str, ...] = (),
    ) -> None:
        """Record an import; ``local_names`` only when some name is bound under another."""
        if local_names == names:
            local_names = ()
        record = ImportRecord(
            module=module,
            names=names,
            level=level,
            line=first_line(node),
            alias=alias,
            local_names=local_names,
        )
        self._imports.append((node.start_byte, record))

    def reference(
        self,
        name: str,
        kind: ReferenceKind,
        node: Node,
        *,
        qualifier: str | None = None,
        scope: str | type[AUTO] | None = AUTO,
    ) -> None:
        """Record a use of ``name`` at ``node`` (the name's own node, for its position).

        ``scope`` defaults to the innermost recorded symbol whose span holds ``node``,
        worked out when the references are read, so an extractor that finds references
        with a query (not during its walk) need not track scopes itself.
        """
        if not name:
            return
        if len(self._references) >= MAX_REFERENCES:
            self.references_truncated = True
            return
        point = node.start_point
        # Kept raw until read: the record is built once, with its scope.
        self._references.append(
            (node.start_byte, name, qualifier, kind, point.row + 1, point.column, scope)
        )

    def symbols(self) -> tuple[SymbolRecord, ...]:
        # Sorting on the start byte alone keeps insertion order among equals (`a = b = 1`).
        return tuple(record for _, record in sorted(self._symbols, key=_start))

    def imports(self) -> tuple[ImportRecord, ...]:
        return tuple(record for _, record in sorted(self._imports, key=_start))

    def references(self) -> tuple[ReferenceRecord, ...]:
        raw = sorted(self._references, key=_start)
        scopes = self._scopes([r[0] for r in raw])
        return tuple(
            trusted(
                ReferenceRecord,
                {
                    "name": name,
                    "qualifier": qualifier,
                    "kind": kind,
                    "line": line,
                    "column": column,
                    "scope": held if scope is AUTO else scope,
                },
            )
            for (_, name, qualifier, kind, line, column, scope), held in zip(
                raw, scopes, strict=True
            )
        )

    def _scopes(self, positions: list[int]) -> list[str | None]:
        """The innermost symbol span holding each (sorted) position: one sweep over spans
        and positions in byte order with a stack of the open spans."""
        spans = sorted(self._spans, key=lambda s: (s[0], -s[1]))
        stack: list[tuple[int, str]] = []  # (end byte, qualname), innermost last
        held: list[str | None] = []
        k = 0
        for at in positions:
            while k < len(spans) and spans[k][0] <= at:
                start, end, qualname = spans[k]
                while stack and stack[-1][0] <= start:  # closed before this one opens
                    stack.pop()
                stack.append((end, qualname))
                k += 1
            while stack and stack[-1][0] <= at:
                stack.pop()
            # Spans nest, so the stack is one chain of open spans: its top holds ``at``.
            held.append(stack[-1][1] if stack else None)
        return held


def _start(item: tuple[int, object]) -> int:
    return item[0]
