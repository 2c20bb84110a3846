"""A repository's edges as columns: node ids numbered, each edge five numbers, no object
per edge (issue 16 §3, docs/READ_SIDE_MEMORY.md "The graph").

An edge held as a record cost about 80 bytes, plus its place in the lists out of and
into its nodes (sympy: 328,270 edges, 43 MB between the state and the adjacency). Here
an edge is a row of columns: its ends (int32 ids into a table of node ids), its kind
and confidence (one uint8 code into a table of the pairs seen), its weight (an index
into the distinct weights, told apart by their bits, so that a record built again from
it is bit-identical) and its line (int32, 0 for None): 14 bytes with a one-byte weight,
and 4 more for the order by target.

The rows are a base in CSR order, grouped by source node (``ptr``: the rows of node
``i`` are ``ptr[i]:ptr[i + 1]``), each node's rows in its order. The node ids of the
base are sorted, so an id is found by bisection rather than a dict of every id. What
changed since the base is kept beside it by `stores.edge_table.EdgeTable` and merged
into a new base by `merged` (the pattern of `query/search/bm25.py`'s postings).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stores.records import EdgeRecord

Ints = npt.NDArray[np.int32]
Code = tuple[str, str]  # (kind, confidence)

_new = object.__new__
_set = object.__setattr__


def edge_of(src: str, dst: str, code: Code, weight: float, line: int) -> EdgeRecord:
    """The record a row stands for, as `stores.records.trusted` builds a fact (its fields
    set, not validated again: they were validated when the edge came in)."""
    edge = _new(EdgeRecord)
    _set(edge, "src", src)
    _set(edge, "dst", dst)
    _set(edge, "kind", code[0])
    _set(edge, "weight", weight)
    _set(edge, "confidence", code[1])
    _set(edge, "line", line or None)
    return edge


@dataclass(frozen=True, slots=True)
class Columns:
    """Edges as columns: ends as ids into ``names``, ``code`` into ``codes``."""

    src: Ints
    dst: Ints
    code: npt.NDArray[Any]
    weight: npt.NDArray[Any]  # an index into ``pool``
    line: Ints
    names: list[str]
    codes: list[Code]
    pool: npt.NDArray[np.float64]  # the distinct weights

    def __len__(self) -> int:
        return len(self.src)

    def weights(self, pick: Any = slice(None)) -> npt.NDArray[np.float64]:
        """The weights of the rows ``pick`` (all by default)."""
        return self.pool[self.weight[pick]]

    def records(
        self, rows: Sequence[int] | npt.NDArray[Any] | slice | None = None
    ) -> list[EdgeRecord]:
        """The records of ``rows`` (all: None), in row order."""
        pick: Any = slice(None) if rows is None else rows
        if not isinstance(pick, slice | np.ndarray):
            pick = np.asarray(pick, dtype=np.int64)
        names, codes = self.names, self.codes
        return [
            edge_of(names[s], names[d], codes[c], w, ln)
            for s, d, c, w, ln in zip(
                self.src[pick].tolist(),
                self.dst[pick].tolist(),
                self.code[pick].tolist(),
                self.weights(pick).tolist(),
                self.line[pick].tolist(),
                strict=True,
            )
        ]


class Ids:
    """Node ids numbered: those of the base sorted (found by bisection: 8 bytes an id
    where a dict costs about 80), those seen since appended and found by a small dict."""

    __slots__ = ("_sorted", "added", "names")

    def __init__(self, names: list[str] | None = None) -> None:
        self.names: list[str] = [] if names is None else names  # sorted up to ``_sorted``
        self._sorted = len(self.names)
        self.added: dict[str, int] = {}

    def get(self, name: str) -> int | None:
        found = self.added.get(name)
        if found is not None:
            return found
        at = bisect_left(self.names, name, 0, self._sorted)
        return at if at < self._sorted and self.names[at] == name else None

    def of(self, name: str) -> int:
        found = self.get(name)
        if found is None:
            found = self.added[name] = len(self.names)
            self.names.append(name)
        return found


def empty_columns() -> Columns:
    none = np.zeros(0, dtype=np.int32)
    return Columns(none, none, np.zeros(0, np.uint8), none, none, [], [], np.zeros(0))


def merged(base: Columns, keep: npt.NDArray[np.bool_], extra: Columns) -> tuple[Columns, Ints, Ids]:
    """A new base: the rows of ``base`` under ``keep`` and the rows of ``extra`` (ids and
    codes in the same tables as ``base``'s), each source's rows in their order, node ids
    renumbered to those the rows name, sorted; with its ``ptr``."""
    src = np.concatenate((base.src[keep], extra.src))
    dst = np.concatenate((base.dst[keep], extra.dst))
    used = np.unique(np.concatenate((src, dst)))
    names = [base.names[i] for i in used.tolist()]
    order_of_names = sorted(range(len(names)), key=names.__getitem__)
    names = [names[i] for i in order_of_names]
    renumber = np.zeros(len(base.names) + 1, dtype=np.int32)
    renumber[used[np.asarray(order_of_names, dtype=np.int64)]] = np.arange(
        len(names), dtype=np.int32
    )
    src, dst = renumber[src], renumber[dst]
    rows = np.argsort(src, kind="stable")  # a source's rows stay in their order
    codes = base.codes
    code_type = np.uint8 if len(codes) <= 256 else np.uint16
    code = np.concatenate((base.code[keep], extra.code)).astype(code_type)[rows]
    weight, pool = pooled(np.concatenate((base.weights(keep), extra.weights()))[rows])
    columns = Columns(
        src=src[rows],
        dst=dst[rows],
        code=code,
        weight=weight,
        line=np.concatenate((base.line[keep], extra.line))[rows],
        names=names,
        codes=codes,
        pool=pool,
    )
    counts = np.bincount(columns.src, minlength=len(names))
    ptr = np.zeros(len(names) + 1, dtype=np.int32)
    np.cumsum(counts, out=ptr[1:])
    return columns, ptr, Ids(names)


def pooled(weights: npt.NDArray[np.float64]) -> tuple[npt.NDArray[Any], npt.NDArray[np.float64]]:
    """The weights as indexes into their distinct values, told apart by their bits (so
    that -0.0 stays -0.0): a byte or two an edge where a float takes eight (sympy's
    weights are a few hundred values)."""
    bits, index = np.unique(weights.view(np.uint64), return_inverse=True)
    kind = np.uint8 if len(bits) <= 1 << 8 else np.uint16 if len(bits) <= 1 << 16 else np.uint32
    return index.reshape(-1).astype(kind), bits.view(np.float64)
