"""Where a splice re-parses an edited file: the statements around the changed bytes.

A Python module is a sequence of top-level statements; one that starts a line (column
0) cuts the file where the lexer holds no state (no open bracket, string or indented
block). A class body is a sequence of statements too, at one indentation, and a class
body is no scope (a method's names are its own), so the statements of a large class cut
it the same way, provided the class header is parsed with them: `Region.header`.

`choose` takes, from the starts kept of the old version (`Starts`, made by `starts_of`
from its tree), the last statement starting before the change and the first one
starting after it. Both lie outside the change, so the new contents are cut at the same
places with the same text around them; the start's first token is unchanged (so is its
indentation, which decides where a comment above it belongs). Inside a class the cuts
are the first lines of its members (the methods and nested classes the kept facts
list) at the body's indentation, and an end is no member a comment precedes (where a
comment between two members belongs depends on what follows it). A region whose
statements close the class (one at column 0) is parsed as the module's statements
instead (`holds_region`). Lines appended as new statements at column 0 are a region of
their own.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from tree_sitter import Node

from stores.records import SymbolRecord

REGION_SHARE = 0.75
"""A region larger than this share of the file is parsed with the whole file."""
_INDENT = b" \t"
_CANDIDATES = 8  # statements after the change tried as a region's end inside a class


@dataclass(frozen=True, slots=True)
class Starts:
    """A file's top-level statements that start a line: byte offsets and rows; for a
    class, the line where its body's first statement starts and that one's column (-1
    for other statements, or a body on the header's line)."""

    bytes: tuple[int, ...]
    rows: tuple[int, ...]
    bodies: tuple[int, ...]
    columns: tuple[int, ...]

    def spliced(self, region: Region, inner: Starts | None, moved: int, rows: int) -> Starts:
        """These starts after the splice of ``region`` (``inner``: the starts in the
        region's own tree, None when the region lies inside a class)."""
        first, after = max(region.first, 0), region.after
        if inner is None:  # the class holding the region stays where it was
            first = after = region.first + 1
            inner = Starts((), (), (), ())
        return Starts(
            self.bytes[:first] + inner.bytes + tuple(b + moved for b in self.bytes[after:]),
            self.rows[:first] + inner.rows + tuple(r + rows for r in self.rows[after:]),
            self.bodies[:first]
            + inner.bodies
            + tuple(b + moved if b >= 0 else b for b in self.bodies[after:]),
            self.columns[:first] + inner.columns + self.columns[after:],
        )


@dataclass(frozen=True, slots=True)
class Region:
    """Old bytes [start, end) (new: [start, end + moved)) replace the records of old rows
    [start_row, end_row). Top-level statements [:first] stand before the region and
    [after:] after it. ``header``: the byte range of the class whose body the region
    lies in (parsed with it), then ``owner_row`` is the class's row, ``first_statement``
    whether the region begins with the body's first statement (the class docstring's),
    ``to_class_end`` whether it runs to the class's end."""

    start: int
    end: int
    start_row: int
    end_row: int
    first: int
    after: int
    header: tuple[int, int] | None = None
    owner_row: int = -1
    first_statement: bool = False
    to_class_end: bool = False


def holds_region(root: Node, region: Region, content: bytes, moved: int) -> bool:
    """Whether a class region's tree is the class alone, holding the whole region: no
    statement of the region closed the class (one at column 0 would take the statements
    after the region into its own body)."""
    statements = [child for child in root.children if not child.is_extra]
    last = len(content[: region.end + moved].rstrip())
    return len(statements) == 1 and statements[0].end_byte >= last


def starts_of(root: Node) -> Starts:
    """The line-starting top-level statements of a tree. Not comments: one at column 0
    does not close a block (tree-sitter may still hang it on the module, between
    statements indented below it)."""
    starts: list[int] = []
    rows: list[int] = []
    bodies: list[int] = []
    columns: list[int] = []
    for child in root.children:
        point = child.start_point
        if point.column or child.is_extra:
            continue
        starts.append(child.start_byte)
        rows.append(point.row)
        body = _class_body(child)
        if body is None or body.start_point.row == point.row:
            bodies.append(-1)
            columns.append(-1)
        else:
            bodies.append(body.start_byte - body.start_point.column)
            columns.append(body.start_point.column)
    return Starts(tuple(starts), tuple(rows), tuple(bodies), tuple(columns))


def _class_body(statement: Node) -> Node | None:
    """The first statement of a class's body (past comments), if ``statement`` is a class."""
    if statement.type == "decorated_definition":
        statement = statement.child_by_field_name("definition") or statement
    if statement.type != "class_definition":
        return None
    body = statement.child_by_field_name("body")
    if body is None:
        return None
    return next((child for child in body.children if not child.is_extra), None)


def choose(
    old: bytes,
    content: bytes,
    same: int,
    changed_end: int,
    starts: Starts,
    symbols: tuple[SymbolRecord, ...],
    inside_classes: bool = True,
) -> Region | str:
    """The region to parse again for a change of old bytes [same, changed_end), or why
    the whole file must be parsed; ``inside_classes``: a class's statements may be one."""
    kept = starts.bytes
    if same == len(old) and _appended(old, content):
        first, start, start_row = len(kept), same, old.count(b"\n")
    else:
        first = bisect_left(kept, same) - 1
        start, start_row = (kept[first], starts.rows[first]) if first >= 0 else (0, 0)
    after = bisect_right(kept, changed_end)
    end, end_row = (
        (kept[after], starts.rows[after]) if after < len(kept) else (len(old), old.count(b"\n") + 1)
    )
    region = Region(start, end, start_row, end_row, first, after)
    if inside_classes and after == first + 1 and first >= 0 and starts.bodies[first] >= 0:
        region = _in_class(region, old, same, changed_end, starts, symbols) or region
    if region.end + len(content) - len(old) - region.start > REGION_SHARE * len(content):
        return "region"
    return region


def _in_class(
    top: Region,
    old: bytes,
    same: int,
    changed_end: int,
    starts: Starts,
    symbols: tuple[SymbolRecord, ...],
) -> Region | None:
    """The statements of the class ``top`` holds alone around the change, if the
    change lies among its body's statements."""
    body, column = starts.bodies[top.first], starts.columns[top.first]
    if same <= body + column:
        return None  # the change reaches the header or the body's first token
    owner = _class_at(symbols, top.start_row + 1)
    if owner is None:
        return None
    # The class's direct members start statements of its body (a method in an `if` of
    # the body is indented further, and is no start: the column is checked); a class
    # defined twice under one name has members elsewhere too.
    rows = [
        s.line_start - 1
        for s in symbols
        if s.parent == owner.qualname and top.start_row < s.line_start - 1 < top.end_row
    ]
    same_row = top.start_row + old.count(b"\n", top.start, same)
    line, at_row = body, top.start_row + old.count(b"\n", top.start, body)
    earlier = rows[: bisect_right(rows, same_row)][-_CANDIDATES:]
    for row in reversed(earlier):
        found = _line_start(old, same, same_row, row)
        if found > body and _starts_statement(old, found, column) and found + column < same:
            line, at_row = found, row
            break
    changed_row = top.start_row + old.count(b"\n", top.start, changed_end)
    end, end_row, to_end = top.end, top.end_row, True
    later = rows[bisect_right(rows, changed_row) :][:_CANDIDATES]
    for row in later:
        found = _line_start(old, changed_end, changed_row, row)
        if _starts_statement(old, found, column) and not _after_comment(old, found):
            end, end_row, to_end = found, row, False
            break
    return Region(
        line,
        end,
        at_row,
        end_row,
        top.first,
        top.after,
        header=(top.start, body),
        owner_row=top.start_row,
        first_statement=line == body,
        to_class_end=to_end,
    )


def _class_at(symbols: tuple[SymbolRecord, ...], line: int) -> SymbolRecord | None:
    at = bisect_left(symbols, line, key=_line)
    while at < len(symbols) and symbols[at].line_start == line:
        if symbols[at].parent is None and symbols[at].kind == "CLASS":
            return symbols[at]
        at += 1
    return None


def _line(symbol: SymbolRecord) -> int:
    return symbol.line_start


def _line_start(content: bytes, near: int, near_row: int, row: int) -> int:
    """The offset where ``row`` starts, walking from ``near`` (on ``near_row``)."""
    at = content.rfind(b"\n", 0, near) + 1
    for _ in range(near_row - row):
        at = content.rfind(b"\n", 0, at - 1) + 1
    for _ in range(row - near_row):
        at = content.find(b"\n", at) + 1
    return at


def _starts_statement(content: bytes, line: int, column: int) -> bool:
    """Whether the line at ``line`` is indented by ``column`` and starts a token there."""
    indent = content[line : line + column]
    return (
        len(indent) == column
        and not indent.strip(_INDENT)
        and content[line + column : line + column + 1] not in (b"", b" ", b"\t", b"#", b"\n")
    )


def _after_comment(content: bytes, line: int) -> bool:
    """Whether the last non-blank line before ``line`` is a comment."""
    end = line - 1
    while end > 0:
        start = content.rfind(b"\n", 0, end) + 1
        text = content[start:end].strip()
        if text:
            return text.startswith(b"#")
        end = start - 1
    return False


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
