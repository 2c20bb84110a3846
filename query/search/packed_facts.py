"""A file's symbols, imports or keywords packed into one flat tuple of their fields,
records built as they are read (issue 16 §3, docs/READ_SIDE_MEMORY.md "Built since").

A symbol held as a record cost its object (12 slots and the headers: 128 bytes) and its
place in the file's tuple (8), 5.7 MB of sympy's read side for 42,234 symbols, beside
strings others share (its name, qualname, signature and doc are its chunk's and its
node's too). Here a file's records are one tuple of their fields' values, record after
record in declaration order (96 bytes a symbol, 48 an import, 16 a keyword), less the
fields every record of the file holds the same constant in (None, (), True, False, 0:
a symbol's ``implements`` in Python, most files' ``value_type``), kept once in a layout
the files share: the very objects the records held, so nothing is copied and a record
built again is equal field for field.

What reads every file's symbols, imports or keywords per answer (graph search's
channels, the repository overview's counts) reads a field's column (`column`: a slice of
the tuple, in C) and builds the records of the matches only; what reads a file at a
time (a file's detail, a pack, the churn's images of a changed file, the reclusterer's
keywords of each file) iterates as before. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Generic, TypeVar, overload

from stores.records import Fact, ImportRecord, Keyword, SymbolRecord, fields_of

F = TypeVar("F", bound=Fact)

PACKED: tuple[type[Fact], ...] = (SymbolRecord, ImportRecord, Keyword)
"""The record classes packed (each a fact whose every field is a slot)."""

_NAMES: dict[type[Fact], tuple[str, ...]] = {cls: tuple(fields_of(cls)) for cls in PACKED}

_CONSTANTS = (None, (), True, False, 0)
"""The values a field may hold once for a whole file (singletons: the very object)."""

Layout = tuple[type[Fact], tuple[str, ...], tuple[tuple[str, Any], ...]]
"""A record class, the fields kept per record (in declaration order), and the fields
every record holds one constant in, with it."""

_LAYOUTS: dict[tuple[type[Fact], tuple[str, ...], tuple[int, ...]], Layout] = {}

_new = object.__new__
_set = object.__setattr__


def _constant(value: object) -> int | None:
    return next((i for i, c in enumerate(_CONSTANTS) if value is c), None)


def layout(cls: type[Fact], fixed: dict[str, int]) -> Layout:
    """The one layout of ``cls`` whose ``fixed`` fields hold those constants (by index
    into ``_CONSTANTS``), shared by every file of that shape."""
    names = _NAMES[cls]
    kept = tuple(n for n in names if n not in fixed)
    key = (cls, kept, tuple(fixed.get(n, -1) for n in names))
    found = _LAYOUTS.get(key)
    if found is None:
        held = tuple((n, _CONSTANTS[fixed[n]]) for n in names if n in fixed)
        found = _LAYOUTS[key] = (cls, kept, held)
    return found


def pack(records: Sequence[F]) -> Sequence[F]:
    """``records`` as a `PackedFacts`, or as they are: none, already packed, or not all
    of one packed class (a subclass could hold more than its fields)."""
    if not records or isinstance(records, PackedFacts):
        return records
    cls = type(records[0])
    names = _NAMES.get(cls)  # type: ignore[arg-type]
    if names is None or any(type(r) is not cls for r in records):
        return records
    fixed: dict[str, int] = {}
    for name in names[1:]:  # the first field kept per record: it counts them
        first = getattr(records[0], name)
        at = _constant(first)
        if at is not None and all(getattr(r, name) is first for r in records):
            fixed[name] = at
    shape = layout(cls, fixed)
    kept = shape[1]
    return PackedFacts(shape, tuple(getattr(r, n) for r in records for n in kept))


def column(records: Sequence[Fact], name: str) -> Sequence[Any]:
    """Each record's ``name`` field, in order, without building packed records."""
    if isinstance(records, PackedFacts):
        return records.column(name)
    return [getattr(r, name) for r in records]


class PackedFacts(Sequence[F], Generic[F]):
    """One file's records of one class, in their order; reads build records equal to
    the packed ones. Equal to any sequence of equal records, and hashes as their tuple,
    so a file record holding it compares as one holding the tuple."""

    __slots__ = ("_layout", "_refs")

    def __init__(self, shape: Layout, refs: tuple[Any, ...]) -> None:
        self._layout = shape
        self._refs = refs

    def __len__(self) -> int:
        return len(self._refs) // len(self._layout[1])

    @overload
    def __getitem__(self, index: int) -> F: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[F, ...]: ...

    def __getitem__(self, index: int | slice) -> F | tuple[F, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("record index out of range")
        return self._record(index)

    def __iter__(self) -> Iterator[F]:
        return (self._record(i) for i in range(len(self)))

    def column(self, name: str) -> tuple[Any, ...]:
        """Each record's ``name`` field, in order."""
        _, kept, fixed = self._layout
        if name in kept:
            return self._refs[kept.index(name) :: len(kept)]
        return (dict(fixed)[name],) * len(self)

    def _record(self, index: int) -> F:
        cls, kept, fixed = self._layout
        at = index * len(kept)
        record: F = _new(cls)  # type: ignore[assignment]
        # every field, as `stores.records.trusted` sets them
        for name, value in zip(kept, self._refs[at : at + len(kept)], strict=True):
            _set(record, name, value)
        for name, value in fixed:
            _set(record, name, value)
        return record

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedFacts) and other._layout is self._layout:
            return self._refs == other._refs
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"PackedFacts({self._layout[0].__name__}, {len(self)} records)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickled, (tuple(self),))


def _unpickled(records: tuple[Fact, ...]) -> Sequence[Fact]:
    return pack(records)
