"""The texts of a repository's chunks, compressed by file, for the few a pack quotes.

The read side indexes a chunk's text once (BM25, as it folds the delta) and quotes it
only in a context pack's targets, a few files per answer; holding every text as a
string was 26.5 MB of sympy's read side (docs/READ_SIDE_MEMORY.md). So the state's
chunk records keep no text, and this store keeps each file's texts as one zlib block
(its texts' lengths, then their UTF-8), with the last files read kept decoded. Pure.
"""

from __future__ import annotations

import zlib
from array import array
from collections import OrderedDict
from collections.abc import Sequence

LEVEL = 1
"""zlib's fastest level: sympy's 24.5 MB of chunk text in 6.6 MB, 0.3 s to pack
(level 6: 5.7 MB in 1.0 s), on the fold's path."""

RECENT_FILES = 64
"""Files kept decoded: a pack quotes the chunks of tens of files."""


def pack(texts: Sequence[str]) -> bytes:
    """One file's texts as one block: their count and lengths (uint32, in characters),
    then their UTF-8 (surrogates kept, as a decoded file may hold them)."""
    lengths = array("I", [len(t) for t in texts])
    head = array("I", [len(texts)]).tobytes() + lengths.tobytes()
    return zlib.compress(head + "".join(texts).encode("utf-8", "surrogatepass"), LEVEL)


def unpack(block: bytes) -> tuple[str, ...]:
    raw = zlib.decompress(block)
    count = array("I", raw[:4])[0]
    end = 4 + 4 * count
    lengths = array("I", raw[4:end])
    body = raw[end:].decode("utf-8", "surrogatepass")
    texts, at = [], 0
    for length in lengths:
        texts.append(body[at : at + length])
        at += length
    return tuple(texts)


class ChunkTexts:
    """Each file's chunk texts, in its chunks' order, packed; `of` gives them back."""

    def __init__(self, recent: int = RECENT_FILES) -> None:
        self._packed: dict[str, bytes] = {}
        self._recent: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._keep = recent

    def put(self, path: str, texts: Sequence[str]) -> None:
        self._recent.pop(path, None)
        if texts:
            self._packed[path] = pack(texts)
        else:
            self._packed.pop(path, None)

    def drop(self, path: str) -> None:
        self._recent.pop(path, None)
        self._packed.pop(path, None)

    def of(self, path: str) -> tuple[str, ...]:
        """The file's texts (() for a file without chunks)."""
        held = self._recent.get(path)
        if held is not None:
            self._recent.move_to_end(path)
            return held
        block = self._packed.get(path)
        if block is None:
            return ()
        texts = self._recent[path] = unpack(block)
        if len(self._recent) > self._keep:
            self._recent.popitem(last=False)
        return texts

    def packed_bytes(self) -> int:
        return sum(len(b) for b in self._packed.values())

    def __len__(self) -> int:
        return len(self._packed)
