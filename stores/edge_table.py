"""A repository's edges, held once, as columns: no object per edge, for the state and
for the query side's adjacency alike (issue 16 §3).

The edges were records in each source node's list (and the adjacency kept them again in
lists into each node): about 130 bytes an edge, 43 MB of sympy's read side. Here they
are rows of columns (`stores.edge_columns`: 25 bytes an edge with the order by
target), records built when asked for. The nodes changed since the columns were built
(a delta's sources) are held beside them as the records the deltas brought, each such
node's whole list (its rows of the base no longer read), and merged into new columns
when they hold more than a share of the edges (``LIVE_SHARE``).

Seen as a mapping it is what a dict keyed by ``(src, dst, kind)`` folding every delta
would be: the same keys and records (equal, built again: not the same objects). Read
from one node, its edges out are in that dict's order seen from the node: a removed key
leaves its place, a new key goes last, an upserted key already there keeps its place
(each changed node's list is such a dict, keyed by the other end and the kind, started
from its rows; a merge keeps each node's rows in their order). Read whole, it goes node
by node. Changed only by `apply`, as its state.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import numpy as np

from stores.edge_columns import Code, Columns, Ids, Ints, empty_columns, merged
from stores.owners import EdgeKey, owner_path, reindex
from stores.records import EdgeRecord

__all__ = ["EdgeKey", "EdgeTable", "owner_path", "reindex"]

Held = dict[tuple[str, str], EdgeRecord]  # a changed node's edges by (other end, kind)

INDEXED_FROM = 16
"""A node's rows of at least this many edges are looked up through a dict of them (kept
until the node changes) instead of being read through."""

INDEX_LIMIT = 65_536
"""Rows kept in those dicts at most: past it they are all dropped and built again when
asked for, so a long-lived table holds no more than a few hubs' worth."""

CHUNK = 8_192
"""Records built at a time when every edge is read (a snapshot, a fingerprint)."""

LIVE_SHARE = 16
LIVE_FLOOR = 4_096
"""The changed nodes' records are merged into the columns when they hold more than a
sixteenth of the edges (and more than LIVE_FLOOR): a few MB of records at most beside the
columns, and a merge (sympy: ~60 ms) once per that many changed edges."""


class EdgeTable(Mapping[EdgeKey, EdgeRecord]):
    """Every edge of a state, as columns by source node, the changed nodes' records
    beside them, and the source nodes of each owner (the file of ``file:a.py`` and
    ``sym:a.py:X``, ``/folder`` for ``dir:folder``), so that a file's change finds
    exactly its own edges."""

    __slots__ = (
        "_base",
        "_code_of",
        "_count",
        "_ids",
        "_indexed",
        "_indexes",
        "_into",
        "_live",
        "_live_count",
        "_live_into",
        "_ptr",
        "sources_by_owner",
    )

    def __init__(self) -> None:
        self._base: Columns = empty_columns()
        self._ids = Ids(self._base.names)
        self._ptr: Ints = np.zeros(1, dtype=np.int32)
        self._code_of: dict[Code, int] = {}
        self._into: tuple[Ints, Ints] | None = None  # by target: ptr, rows (when asked)
        self._live: dict[int, Held] = {}  # source id -> its edges, changed since the base
        # ``_live`` by target, built when first read (a worker never reads it):
        self._live_into: dict[int, dict[tuple[str, str], EdgeRecord]] | None = None
        self._live_count = 0  # edges in ``_live``
        self._count = 0
        self._indexes: dict[int, dict[tuple[int, str], int]] = {}
        self._indexed = 0
        self.sources_by_owner: dict[str, tuple[str, ...]] = {}

    @classmethod
    def of(cls, edges: Iterable[EdgeRecord]) -> EdgeTable:
        """A table holding ``edges`` (upserted in order, as one delta would)."""
        table = cls()
        table.apply((), edges)
        return table

    # ---- read: the mapping

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[EdgeKey]:
        return (e.key for e in self.values())

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
        """Every edge, node by node: the base's nodes, then the changed ones."""
        base, live = self._base, self._live
        rows = np.flatnonzero(self._kept()) if live else np.arange(len(base))
        for start in range(0, len(rows), CHUNK):  # a bounded few records at a time
            yield from base.records(rows[start : start + CHUNK])
        for held in live.values():
            yield from held.values()

    def items(self) -> Iterator[tuple[EdgeKey, EdgeRecord]]:  # type: ignore[override]
        return ((e.key, e) for e in self.values())

    def lookup(self, keys: Iterable[EdgeKey]) -> dict[EdgeKey, EdgeRecord | None]:
        """The record under each key (None: absent), reading each source's rows once."""
        found: dict[EdgeKey, EdgeRecord | None] = {}
        by_src: dict[str, Mapping[tuple[str, str], EdgeRecord]] = {}
        for key in keys:
            src = key[0]
            mine = by_src.get(src)
            if mine is None:
                mine = by_src[src] = self._held(src)
            found[key] = mine.get((key[1], key[2]))
        return found

    def owned(self, owner: str) -> list[EdgeRecord]:
        """The owner's edges (those out of its nodes), by key."""
        edges = [e for src in self.sources_by_owner.get(owner, ()) for e in self.edges_out(src)]
        return sorted(edges, key=lambda e: (e.src, e.dst, e.kind))

    def owned_keys(self, owner: str) -> Iterator[EdgeKey]:
        for src in self.sources_by_owner.get(owner, ()):
            for other, kind, _ in self.ends(src, outgoing=True):
                yield (src, other, kind)

    # ---- read: one node, or every edge as columns

    def edges_out(self, node: str) -> list[EdgeRecord]:
        """The node's edges out, in its order (see the module's doc)."""
        i = self._ids.get(node)
        if i is None:
            return []
        held = self._live.get(i)
        if held is not None:
            return list(held.values())
        lo, hi = self._rows(i)
        return self._base.records(slice(lo, hi)) if hi > lo else []

    def edges_into(self, node: str) -> list[EdgeRecord]:
        """The node's edges in, in no order an answer may rely on."""
        live_into = self._into_live()  # first: it numbers the targets it holds
        i = self._ids.get(node)
        if i is None:
            return []
        found = self._base.records(self._rows_into(i))
        held = live_into.get(i)
        if held is not None:
            found.extend(held.values())
        return found

    def ends(self, node: str, *, outgoing: bool) -> list[tuple[str, str, str]]:
        """(the other end, kind, confidence) of each edge out of (into) the node, without
        building its record: what counting a node's connections reads."""
        live_into = self._into_live() if not outgoing else {}
        i = self._ids.get(node)
        if i is None:
            return []
        base, names, codes = self._base, self._ids.names, self._base.codes
        if outgoing:
            held = self._live.get(i)
            if held is not None:
                return [(e.dst, e.kind, e.confidence) for e in held.values()]
            lo, hi = self._rows(i)
            others, kinds = base.dst[lo:hi].tolist(), base.code[lo:hi].tolist()
            return [(names[o], *codes[c]) for o, c in zip(others, kinds, strict=True)]
        rows = self._rows_into(i)
        others, kinds = base.src[rows].tolist(), base.code[rows].tolist()
        found = [(names[o], *codes[c]) for o, c in zip(others, kinds, strict=True)]
        found += [(e.src, e.kind, e.confidence) for e in live_into.get(i, {}).values()]
        return found

    def columns(self) -> Columns:
        """Every edge as columns (the base's tables: ids into ``names``, codes into
        ``codes``), for readers that need no record: a count, a filter."""
        if not self._live:
            return self._base
        extra = self._live_columns()
        base, keep = self._base, self._kept()
        return Columns(
            np.concatenate((base.src[keep], extra.src)),
            np.concatenate((base.dst[keep], extra.dst)),
            np.concatenate((base.code[keep], extra.code)),
            np.concatenate((base.weight[keep], extra.weight + len(base.pool))),
            np.concatenate((base.line[keep], extra.line)),
            base.names,
            base.codes,
            np.concatenate((base.pool, extra.pool)),
        )

    # ---- the storage

    def _rows(self, i: int) -> tuple[int, int]:
        """The base's rows out of node ``i`` (of a node changed since: not read)."""
        ptr = self._ptr
        if i + 1 >= len(ptr):
            return 0, 0
        return int(ptr[i]), int(ptr[i + 1])

    def _rows_into(self, i: int) -> list[int]:
        """The base's rows into node ``i`` from nodes not changed since."""
        if self._into is None:
            dst = self._base.dst
            counts = np.bincount(dst, minlength=len(self._ptr) - 1)
            ptr = np.zeros(len(self._ptr), dtype=np.int32)
            np.cumsum(counts, out=ptr[1:])
            self._into = ptr, np.argsort(dst, kind="stable").astype(np.int32)
        ptr, order = self._into
        if i + 1 >= len(ptr):
            return []
        rows: list[int] = order[int(ptr[i]) : int(ptr[i + 1])].tolist()
        live = self._live
        if live and rows:
            srcs = self._base.src[rows].tolist()
            rows = [r for r, s in zip(rows, srcs, strict=True) if s not in live]
        return rows

    def _kept(self) -> Any:
        """A mask of the base's rows whose sources did not change since."""
        keep = np.ones(len(self._base), dtype=bool)
        for i in self._live:
            lo, hi = self._rows(i)
            keep[lo:hi] = False
        return keep

    def _held(self, src: str) -> Mapping[tuple[str, str], EdgeRecord]:
        """A source's edges by (other end, kind)."""
        i = self._ids.get(src)
        if i is None:
            return {}
        held = self._live.get(i)
        if held is not None:
            return held
        return {(e.dst, e.kind): e for e in self.edges_out(src)}

    def _find(self, key: EdgeKey) -> EdgeRecord | None:
        src, dst, kind = key
        i = self._ids.get(src)
        if i is None:
            return None
        held = self._live.get(i)
        if held is not None:
            return held.get((dst, kind))
        lo, hi = self._rows(i)
        j = self._ids.get(dst)
        if j is None or hi == lo:
            return None
        base = self._base
        if hi - lo < INDEXED_FROM:
            codes = base.codes
            for row, d, c in zip(
                range(lo, hi), base.dst[lo:hi].tolist(), base.code[lo:hi].tolist(), strict=True
            ):
                if d == j and codes[c][0] == kind:
                    return base.records(slice(row, row + 1))[0]
            return None
        found = self._index_of(i, lo, hi).get((j, kind))
        return None if found is None else base.records(slice(found, found + 1))[0]

    def _index_of(self, i: int, lo: int, hi: int) -> dict[tuple[int, str], int]:
        index = self._indexes.get(i)
        if index is None:
            codes = self._base.codes
            dsts, kinds = self._base.dst[lo:hi].tolist(), self._base.code[lo:hi].tolist()
            index = {
                (d, codes[c][0]): lo + r for r, (d, c) in enumerate(zip(dsts, kinds, strict=True))
            }
            if self._indexed + len(index) > INDEX_LIMIT:
                self._indexes.clear()
                self._indexed = 0
            self._indexes[i] = index
            self._indexed += len(index)
        return index

    # ---- change

    def apply(self, removed: Iterable[EdgeKey], upserted: Iterable[EdgeRecord]) -> None:
        """Remove ``removed``, then upsert ``upserted`` in order, as the dict did: each
        touched node's edges replayed over a dict of them keyed like the state's (the
        other end, the kind), which keeps the dict's order seen from the node."""
        if not self._count and not self._live:  # empty: what is removed is not there
            upserted = list(upserted)
            if len(upserted) > LIVE_FLOOR:
                self._fill(upserted)
                return
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
        gone: dict[str, set[str]] = {}
        new: dict[str, set[str]] = {}
        for src, (drop, put) in by_src.items():
            had, has = self._change(src, drop, put)
            owner = owner_path(src)
            if owner is not None and had != has:
                (new if has else gone).setdefault(owner, set()).add(src)
        reindex(self.sources_by_owner, gone, new)
        if self._live_count > max(LIVE_FLOOR, (self._count - self._live_count) // LIVE_SHARE):
            self.compact()

    def _change(
        self, src: str, drop: list[tuple[str, str]], put: list[EdgeRecord]
    ) -> tuple[bool, bool]:
        """One source's share of a delta; whether it had edges before, and has after."""
        ids = self._ids
        i = ids.get(src) if not put else ids.of(src)
        if i is None:
            return False, False
        index = self._indexes.pop(i, None)
        if index is not None:
            self._indexed -= len(index)
        held = self._live.get(i)
        if held is None:
            lo, hi = self._rows(i)
            if hi == lo and not put:
                return False, False
            held = self._live[i] = {}
            for edge in self._base.records(slice(lo, hi)):
                held[(edge.dst, edge.kind)] = edge
                self._link(edge)
            self._live_count += hi - lo
        count = len(held)
        for key in drop:
            old = held.pop(key, None)
            if old is not None:
                self._unlink(old)
        for edge in put:
            held[(edge.dst, edge.kind)] = edge
            self._link(edge)
        self._count += len(held) - count
        self._live_count += len(held) - count
        if not held and self._rows(i)[1] == self._rows(i)[0]:
            del self._live[i]  # nothing of the base to hide
        return count > 0, bool(held)

    def _into_live(self) -> dict[int, dict[tuple[str, str], EdgeRecord]]:
        """The changed nodes' edges by target id, then by (source, kind)."""
        if self._live_into is None:
            self._live_into = {}
            for held in self._live.values():
                for edge in held.values():
                    self._link(edge)
        return self._live_into

    def _link(self, edge: EdgeRecord) -> None:
        if self._live_into is None:
            return
        dst = self._ids.of(edge.dst)
        into = self._live_into.get(dst)
        if into is None:
            into = self._live_into[dst] = {}
        into[(edge.src, edge.kind)] = edge

    def _unlink(self, edge: EdgeRecord) -> None:
        if self._live_into is None:
            return
        dst = self._ids.get(edge.dst)
        into = self._live_into.get(dst) if dst is not None else None
        if dst is not None and into is not None:
            into.pop((edge.src, edge.kind), None)
            if not into:
                del self._live_into[dst]

    def _fill(self, upserted: list[EdgeRecord]) -> None:
        """An empty table's first delta, a large one (a snapshot's whole state, a first
        scan's batch) made columns at once, without holding each node's records first:
        a dict keyed like the state's gives each key its first place and last record."""
        latest = {e.key: e for e in upserted}
        keep = np.zeros(len(self._base), dtype=bool)
        self._rebase(merged(self._base, keep, self._columns_of(latest.values())))
        self._count = len(latest)
        new: dict[str, set[str]] = {}
        for src in {e.src for e in latest.values()}:
            owner = owner_path(src)
            if owner is not None:
                new.setdefault(owner, set()).add(src)
        reindex(self.sources_by_owner, {}, new)

    def _live_columns(self) -> Columns:
        """The changed nodes' edges as rows (ids and codes in the base's tables)."""
        return self._columns_of(e for held in self._live.values() for e in held.values())

    def _columns_of(self, edges: Iterable[EdgeRecord]) -> Columns:
        """``edges`` as rows, their ends and codes numbered in the base's tables."""
        ids, code_of, codes = self._ids, self._code_of, self._base.codes
        src: list[int] = []
        dst: list[int] = []
        code: list[int] = []
        weight: list[float] = []
        line: list[int] = []
        for e in edges:
            src.append(ids.of(e.src))
            dst.append(ids.of(e.dst))
            pair = (e.kind, e.confidence)
            c = code_of.get(pair)
            if c is None:
                c = code_of[pair] = len(codes)
                codes.append(pair)
            code.append(c)
            weight.append(e.weight)
            line.append(e.line or 0)
        return Columns(
            np.asarray(src, dtype=np.int32),
            np.asarray(dst, dtype=np.int32),
            np.asarray(code, dtype=np.uint16),
            np.arange(len(weight), dtype=np.int64),
            np.asarray(line, dtype=np.int32),
            ids.names,
            codes,
            np.asarray(weight, dtype=np.float64),
        )

    def compact(self) -> None:
        """Merge the changed nodes' records into new columns, the node ids renumbered to
        those the edges name (memory follows the current code, not its history)."""
        if not self._live and len(self._ids.names) == len(self._ptr) - 1:
            return
        self._rebase(merged(self._base, self._kept(), self._live_columns()))

    def _rebase(self, new: tuple[Columns, Ints, Ids]) -> None:
        """Hold ``new`` columns (every edge), nothing beside them, nothing derived kept."""
        self._base, self._ptr, self._ids = new
        self._live, self._live_into = {}, None
        self._live_count = 0
        self._into = None
        self._indexes.clear()
        self._indexed = 0
