"""A file's lean chunk records packed into a few objects, decoded as they are read.

The read side's state keeps each file's chunks without their texts (those are packed
apart, `query.search.chunk_texts`). Even lean, a chunk owned ~344 bytes of sympy's read
side (docs/READ_SIDE_MEMORY.md): its record (112), its id (102), its content hash (a
64-character hex string, 113) and its line numbers. A file's chunks are read a file at
a time (a search hit's chunk, a pack's files, the churn's prints of a changed file), so
this keeps them as one flat tuple of the strings a chunk shares with others (its id,
which the sparse index holds too; its kind; its symbol's qualname, signature and
docstring) and one bytes object of their lines and raw digests (40 bytes a chunk), and
builds the records again when they are read: equal to the ones packed, field by field.

`pack` packs only what it can give back exactly: every chunk of the file's path, every
hash 64 lowercase hex digits, every line number under 2**32; else it returns the
records as they were. Pure.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from typing import Any, overload

from stores.records import ChunkRecord

_ROW = struct.Struct("<II32s")
"""A chunk's line_start, line_end and its content hash's 32 bytes."""

_FIELDS = 5
"""Strings (or None) kept per chunk in ``_refs``: id, kind, qualname, signature, doc."""

_new = object.__new__
_set = object.__setattr__


def pack(path: str, chunks: Sequence[ChunkRecord]) -> Sequence[ChunkRecord]:
    """``chunks`` (lean: no texts) as a `PackedChunks`, or as they are when they cannot
    be packed exactly (none, a text, another path, a hash not of 64 lowercase hex
    digits, a line past 2**32)."""
    if not chunks or isinstance(chunks, PackedChunks):
        return chunks
    refs: list[str | None] = []
    rows = bytearray()
    for chunk in chunks:
        digest = chunk.content_hash
        if chunk.text or chunk.path != path or len(digest) != 64 or not _lower_hex(digest):
            return chunks
        if chunk.line_start >= 2**32 or chunk.line_end >= 2**32:
            return chunks
        refs += (chunk.id, chunk.kind, chunk.qualname, chunk.signature, chunk.doc)
        rows += _ROW.pack(chunk.line_start, chunk.line_end, bytes.fromhex(digest))
    return PackedChunks(path, tuple(refs), bytes(rows))


def ids_and_hashes(chunks: Sequence[ChunkRecord]) -> Iterator[tuple[str, str]]:
    """Each chunk's (id, content hash), read from the packed bytes when packed."""
    if isinstance(chunks, PackedChunks):
        return chunks.ids_and_hashes()
    return ((c.id, c.content_hash) for c in chunks)


def spans(chunks: Sequence[ChunkRecord]) -> Iterator[tuple[str, str, str | None, int, int]]:
    """Each chunk's (id, kind, qualname, line_start, line_end), packed or not: what the
    function ranking reads of a file's chunks for every file of a pack's map."""
    if isinstance(chunks, PackedChunks):
        return chunks.spans()
    return ((c.id, c.kind, c.qualname, c.line_start, c.line_end) for c in chunks)


def _lower_hex(digest: str) -> bool:
    try:
        return bytes.fromhex(digest).hex() == digest
    except ValueError:
        return False


class PackedChunks(Sequence[ChunkRecord]):
    """One file's lean chunks, in their order; reads build `ChunkRecord`s equal to the
    packed ones (``text`` empty). Equal to any sequence of equal records, and hashes as
    their tuple, so a file record holding it compares as one holding the tuple."""

    __slots__ = ("_path", "_refs", "_rows")

    def __init__(self, path: str, refs: tuple[str | None, ...], rows: bytes) -> None:
        self._path = path
        self._refs = refs
        self._rows = rows

    def __len__(self) -> int:
        return len(self._refs) // _FIELDS

    @overload
    def __getitem__(self, index: int) -> ChunkRecord: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ChunkRecord, ...]: ...

    def __getitem__(self, index: int | slice) -> ChunkRecord | tuple[ChunkRecord, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        count = len(self)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("chunk index out of range")
        return self._chunk(index, _ROW.unpack_from(self._rows, index * _ROW.size))

    def __iter__(self) -> Iterator[ChunkRecord]:
        for index, row in enumerate(_ROW.iter_unpack(self._rows)):
            yield self._chunk(index, row)

    def by_id(self, chunk_id: str) -> ChunkRecord | None:
        """The chunk of that id (the first, as a scan would find it), building only it."""
        refs = self._refs
        for at in range(0, len(refs), _FIELDS):
            if refs[at] == chunk_id:
                index = at // _FIELDS
                return self._chunk(index, _ROW.unpack_from(self._rows, index * _ROW.size))
        return None

    def spans(self) -> Iterator[tuple[str, str, str | None, int, int]]:
        """Each chunk's (id, kind, qualname, line_start, line_end), without building the
        records (`spans`)."""
        refs = self._refs
        for index, (start, end, _) in enumerate(_ROW.iter_unpack(self._rows)):
            at = index * _FIELDS
            yield refs[at], refs[at + 1], refs[at + 2], start, end  # type: ignore[misc]

    def ids_and_hashes(self) -> Iterator[tuple[str, str]]:
        """Each chunk's (id, content hash), without building the records."""
        refs = self._refs
        for index, (_, _, digest) in enumerate(_ROW.iter_unpack(self._rows)):
            yield refs[index * _FIELDS], digest.hex()  # type: ignore[misc]

    def _chunk(self, index: int, row: tuple[Any, ...]) -> ChunkRecord:
        at = index * _FIELDS
        refs = self._refs
        chunk = _new(ChunkRecord)
        # the fields in declaration order, as `stores.records.trusted` sets them
        _set(chunk, "id", refs[at])
        _set(chunk, "path", self._path)
        _set(chunk, "kind", refs[at + 1])
        _set(chunk, "qualname", refs[at + 2])
        _set(chunk, "line_start", row[0])
        _set(chunk, "line_end", row[1])
        _set(chunk, "signature", refs[at + 3])
        _set(chunk, "doc", refs[at + 4])
        _set(chunk, "text", "")
        _set(chunk, "content_hash", row[2].hex())
        return chunk

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedChunks):
            return (self._path, self._refs, self._rows) == (other._path, other._refs, other._rows)
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"PackedChunks({self._path!r}, {len(self)} chunks)"

    def __reduce__(self) -> tuple[Any, ...]:
        return (PackedChunks, (self._path, self._refs, self._rows))

    def packed_bytes(self) -> int:
        """The bytes of its lines and digests (the strings are shared with others)."""
        return len(self._rows)
