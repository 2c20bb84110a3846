"""The trees of the files parsed last, kept so that a file saved again is re-parsed
incrementally.

An editor saves the same file over and over; tree-sitter re-parses a changed file from
its previous tree, reusing every subtree the edit did not touch. `TreeCache.parse` takes
the previous tree of the path (if it holds one), marks the one byte range where the old
and new contents differ (their common prefix and suffix aside), and parses the new
contents from it. The tree is then what a fresh parse gives, and so is everything
extracted from it: tests/unit/test_parsing_reuse.py re-parses random edits of real files
both ways and compares the trees node by node. A tree with syntax errors is parsed again
from scratch, since error recovery may take another path from a different start.

Trees are large (about 34 bytes per byte of Python source), so few are kept: at most
``max_trees``, holding at most ``max_source_bytes`` of source between them, the least
recently parsed dropped first. A tree is taken out while it is re-parsed, so two
threads never edit one tree. `TreeCache.parse_from` also hands back the previous tree,
edited to the new positions, and its contents: what processors/parsing/literals.py
compares the new tree with.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, TypeVar

from tree_sitter import Tree

from processors.parsing.tree import parser, point_at

MAX_TREES = 16
MAX_SOURCE_BYTES = 2_000_000
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class _Kept:
    language: str
    content: bytes
    tree: Tree


@dataclass(frozen=True, slots=True)
class Previous:
    """The tree a re-parse started from: its contents, and the tree edited to the new
    contents' positions (`Tree.changed_ranges` compares it with the new one)."""

    content: bytes
    tree: Tree


class Shelf(Generic[V]):
    """Values kept by path, at most ``max_items`` of them holding at most ``max_bytes``
    between them (each value's size given with it), the least recently kept dropped
    first. A value is taken out while it is in use, so two threads never share one."""

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self.max_items = max_items
        self.max_bytes = max_bytes
        self._kept: OrderedDict[str, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def bytes(self) -> int:
        """The sizes of the values kept, summed."""
        return self._bytes

    def take(self, path: str) -> V | None:
        with self._lock:
            kept = self._kept.pop(path, None)
            if kept is None:
                return None
            self._bytes -= kept[1]
            return kept[0]

    def put(self, path: str, value: V, size: int) -> None:
        if self.max_items <= 0 or size > self.max_bytes:
            return
        with self._lock:
            self._kept[path] = (value, size)
            self._bytes += size
            while len(self._kept) > self.max_items or self._bytes > self.max_bytes:
                _, (_, dropped) = self._kept.popitem(last=False)
                self._bytes -= dropped


class TreeCache:
    def __init__(self, max_trees: int = MAX_TREES, max_source_bytes: int = MAX_SOURCE_BYTES):
        self._shelf: Shelf[_Kept] = Shelf(max_trees, max_source_bytes)
        self.reused = 0  # parses that started from a kept tree

    @property
    def max_trees(self) -> int:
        return self._shelf.max_items

    @max_trees.setter
    def max_trees(self, value: int) -> None:
        self._shelf.max_items = value

    def __len__(self) -> int:
        return len(self._shelf)

    def parse(self, path: str, language: str, content: bytes) -> Tree:
        """The tree of ``content``, from the path's previous tree when one is kept."""
        return self.parse_from(path, language, content)[0]

    def parse_from(self, path: str, language: str, content: bytes) -> tuple[Tree, Previous | None]:
        """The tree of ``content``, and the previous tree it was re-parsed from (None: a
        fresh parse)."""
        reparsed = self.reparse(path, language, content)
        if reparsed is not None:
            return reparsed
        tree = parser(language).parse(content)
        self._shelf.put(path, _Kept(language, content, tree), len(content))
        return tree, None

    def reparse(self, path: str, language: str, content: bytes) -> tuple[Tree, Previous] | None:
        """``content`` re-parsed from the path's previous tree, and that tree; None when
        none is kept or a fresh parse must decide (the kept tree is then dropped)."""
        kept = self._shelf.take(path)
        if kept is None or kept.language != language:
            return None
        tree = _reparse(kept, content)
        if tree is None:
            return None
        self.reused += 1
        self._shelf.put(path, _Kept(language, content, tree), len(content))
        return tree, Previous(kept.content, kept.tree)  # kept.tree: edited by _reparse

    def forget(self, path: str) -> None:
        self._shelf.take(path)


def _reparse(kept: _Kept, content: bytes) -> Tree | None:
    """``content`` parsed from the kept tree, or None when a fresh parse must decide."""
    old = kept.content
    if kept.tree.root_node.has_error:
        return None
    start = common_prefix(old, content)
    shared = min(len(old), len(content)) - start
    end = common_suffix(old, content, shared)
    old_end, new_end = len(old) - end, len(content) - end
    tree = kept.tree
    tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=point_at(content, start),
        old_end_point=point_at(old, old_end),
        new_end_point=point_at(content, new_end),
    )
    fresh = parser(kept.language).parse(content, tree)
    return None if fresh.root_node.has_error else fresh


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix, compared in halving blocks (C speed)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """The longest common suffix, at most ``limit`` bytes."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle : len(a) - low] == b[len(b) - middle : len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low
