"""A repository's edges, held once: each node's edges out of it, in a list.

The state used to keep its edges in a dict keyed by ``(src, dst, kind)`` and each
file's keys in an owner index, and the query side's adjacency kept every edge again in
the lists out of and into each node. A key tuple and a dict slot cost about 96 bytes
an edge beside the 80 of the record (sympy: 328,270 edges), and the adjacency's lists
16 more. Here the lists out of each node are the storage: a key is found by its source
node's list (a dict of the list built when a long one is asked for, a bounded few kept),
the owner index holds source nodes instead of keys, and the adjacency reads these very
lists as its edges out (`query/search/adjacency.py`).

Seen as a mapping it is what the dict was: the same keys and records. Its order, read
from one node, is the dict's order seen from that node (`stores.edge_lists`); read
whole, it goes source node by source node. Changed only by `apply`, as its state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import chain
from typing import Any

from stores.edge_lists import Lists
from stores.records import EdgeRecord

EdgeKey = tuple[str, str, str]

INDEXED_FROM = 16
"""A source node's list of at least this many edges is looked up through a dict of it
(kept until the node changes) instead of being read through."""

INDEX_LIMIT = 65_536
"""Edges kept in those dicts at most: past it they are all dropped and built again when
asked for, so a long-lived table holds no more than a few hubs' worth."""


def owner_path(node_id: str) -> str | None:
    """What owns a node or an edge from it: the file of ``file:a.py`` and ``sym:a.py:X``;
    ``/folder`` for a folder node ``dir:folder`` (file paths never start with '/');
    nothing for external modules, which live as long as an edge points at them."""
    if node_id.startswith("file:"):
        return node_id[5:]
    if node_id.startswith("sym:"):
        return node_id[4:].split(":", 1)[0]
    if node_id.startswith("dir:"):
        return "/" + node_id[4:]
    return None


class EdgeTable(Mapping[EdgeKey, EdgeRecord]):
    """Every edge of a state, by source node (``out``), with the source nodes of each
    owner (the file of ``file:a.py`` and ``sym:a.py:X``, ``/folder`` for ``dir:folder``),
    so that a file's change finds exactly its own edges."""

    __slots__ = ("_count", "_indexed", "_indexes", "out", "sources_by_owner")

    def __init__(self) -> None:
        self.out: Lists = {}
        self.sources_by_owner: dict[str, tuple[str, ...]] = {}
        self._count = 0
        self._indexes: dict[str, dict[tuple[str, str], EdgeRecord]] = {}
        self._indexed = 0

    @classmethod
    def of(cls, edges: Iterable[EdgeRecord]) -> EdgeTable:
        """A table holding ``edges`` (upserted in order, as one delta would)."""
        table = cls()
        table.apply((), edges)
        return table

    # ---- read

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[EdgeKey]:
        return (e.key for e in chain.from_iterable(self.out.values()))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 3 and self._find(key) is not None

    def __getitem__(self, key: EdgeKey) -> EdgeRecord:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: EdgeKey, default: Any = None) -> Any:
        found = self._find(key)
        return default if found is None else found

    def values(self) -> Iterator[EdgeRecord]:  # type: ignore[override]
        return chain.from_iterable(self.out.values())

    def items(self) -> Iterator[tuple[EdgeKey, EdgeRecord]]:  # type: ignore[override]
        return ((e.key, e) for e in chain.from_iterable(self.out.values()))

    def lookup(self, keys: Iterable[EdgeKey]) -> dict[EdgeKey, EdgeRecord | None]:
        """The record under each key (None: absent), reading each source's list once."""
        found: dict[EdgeKey, EdgeRecord | None] = {}
        by_src: dict[str, dict[tuple[str, str], EdgeRecord]] = {}
        for key in keys:
            src = key[0]
            mine = by_src.get(src)
            if mine is None:
                mine = by_src[src] = self._index_of(src, keep=False)
            found[key] = mine.get((key[1], key[2]))
        return found

    def owned(self, owner: str) -> list[EdgeRecord]:
        """The owner's edges (those out of its nodes), by key."""
        edges = [e for src in self.sources_by_owner.get(owner, ()) for e in self.out[src]]
        return sorted(edges, key=lambda e: (e.src, e.dst, e.kind))

    def owned_keys(self, owner: str) -> Iterator[EdgeKey]:
        return (e.key for src in self.sources_by_owner.get(owner, ()) for e in self.out[src])

    def _find(self, key: EdgeKey) -> EdgeRecord | None:
        src, dst, kind = key
        held = self.out.get(src)
        if held is None:
            return None
        if len(held) < INDEXED_FROM:
            for edge in held:
                if edge.dst == dst and edge.kind == kind:
                    return edge
            return None
        return self._index_of(src, keep=True).get((dst, kind))

    def _index_of(self, src: str, *, keep: bool) -> dict[tuple[str, str], EdgeRecord]:
        index = self._indexes.get(src)
        if index is None:
            index = {(e.dst, e.kind): e for e in self.out.get(src, ())}
            if keep:
                if self._indexed + len(index) > INDEX_LIMIT:
                    self._indexes.clear()
                    self._indexed = 0
                self._indexes[src] = index
                self._indexed += len(index)
        return index

    # ---- change

    def apply(self, removed: Iterable[EdgeKey], upserted: Iterable[EdgeRecord]) -> None:
        """Remove ``removed``, then upsert ``upserted`` in order, as the dict did: each
        touched node's list replayed over a dict of it keyed like the state's (the other
        end, the kind), which keeps the dict's order seen from the node."""
        by_src: dict[str, tuple[list[tuple[str, str]], list[EdgeRecord]]] = {}
        for src, dst, kind in removed:
            ops = by_src.get(src)
            if ops is None:
                ops = by_src[src] = ([], [])
            ops[0].append((dst, kind))
        for edge in upserted:
            ops = by_src.get(edge.src)
            if ops is None:
                ops = by_src[edge.src] = ([], [])
            ops[1].append(edge)
        out, indexes = self.out, self._indexes
        gone: dict[str, set[str]] = {}
        new: dict[str, set[str]] = {}
        for src, (drop, put) in by_src.items():
            index = indexes.pop(src, None)
            if index is not None:
                self._indexed -= len(index)
            held = out.get(src)
            if held is None and not put:
                continue
            mine = {} if held is None else {(e.dst, e.kind): e for e in held}
            count = len(mine)
            for key in drop:
                mine.pop(key, None)
            for edge in put:
                mine[(edge.dst, edge.kind)] = edge
            self._count += len(mine) - count
            if mine:
                out[src] = list(mine.values())
            else:
                out.pop(src, None)  # no node without edges has a list
            owner = owner_path(src)
            if owner is not None and (held is None) != (not mine):
                (new if mine else gone).setdefault(owner, set()).add(src)
        reindex(self.sources_by_owner, gone, new)


def reindex(
    index: dict[str, tuple[str, ...]], gone: dict[str, set[str]], new: dict[str, set[str]]
) -> None:
    """Each touched owner's entries rebuilt once (a tuple: 8 bytes an entry where a set
    costs ~45); new ones go last, sorted, so the index does not depend on a set's order."""
    for owner in gone.keys() | new.keys():
        dropped = gone.get(owner, ())
        kept = [k for k in index.get(owner, ()) if k not in dropped]
        kept.extend(sorted(new.get(owner, ())))
        if kept:
            index[owner] = tuple(kept)
        else:
            index.pop(owner, None)
