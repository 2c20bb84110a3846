"""A file's sections (its outline) packed into two objects, decoded as they are read.

A `Section` is three fields (two line numbers and a label such as 'def main'), but as a
fact in a tuple it cost ~2.6 MB of sympy's read side (docs/READ_SIDE_MEMORY.md): the
record, its label string and its line numbers. The read side reads a file's sections
only to show that one file (`file_detail`), so this keeps them as one bytes object of
their lines and labels' lengths and one string of their labels, and builds the
records again when they are read: equal to the ones packed.

`pack` packs only what it can give back exactly (line numbers under 2**32); else it
returns the records as they were. Pure.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any, overload

from stores.records import Section

_ROW = struct.Struct("<III")
"""A section's line_start, line_end and its label's length in characters."""

_new = object.__new__
_set = object.__setattr__


def pack(sections: Sequence[Section]) -> Sequence[Section]:
    """``sections`` as a `PackedSections`, or as they are when they cannot be packed
    exactly (none, a line number or a label's length past 2**32)."""
    if not sections or isinstance(sections, PackedSections):
        return sections
    rows = bytearray()
    for section in sections:
        values = (section.line_start, section.line_end, len(section.label))
        if max(values) >= 2**32:
            return sections
        rows += _ROW.pack(*values)
    return PackedSections(bytes(rows), "".join(s.label for s in sections))


class PackedSections(Sequence[Section]):
    """One file's sections, in their order; reads build `Section`s equal to the packed
    ones. Equal to any sequence of equal records, and hashes as their tuple."""

    __slots__ = ("_labels", "_rows")

    def __init__(self, rows: bytes, labels: str) -> None:
        self._rows = rows
        self._labels = labels

    def __len__(self) -> int:
        return len(self._rows) // _ROW.size

    @overload
    def __getitem__(self, index: int) -> Section: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Section, ...]: ...

    def __getitem__(self, index: int | slice) -> Section | tuple[Section, ...]:
        every = tuple(self)
        return every[index]

    def __iter__(self) -> Iterator[Section]:
        labels, at = self._labels, 0
        for start, end, length in _ROW.iter_unpack(self._rows):
            section = _new(Section)
            # the fields in declaration order, as `stores.records.trusted` sets them
            _set(section, "line_start", start)
            _set(section, "line_end", end)
            _set(section, "label", labels[at : at + length])
            at += length
            yield section

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedSections):
            return (self._rows, self._labels) == (other._rows, other._labels)
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"PackedSections({len(self)} sections)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (PackedSections, (self._rows, self._labels))
