"""A repository's nodes as columns: no object per node, records built when asked for
(issue 16 §3, docs/READ_SIDE_MEMORY.md "Built since").

The nodes were records in a dict keyed by id: a record (7 slots, ~72 bytes), its dict
slot (~30) and its line numbers (an int over 256 is an object of its own, ~28 bytes
each unless pooled), 9.6 MB of sympy's read side for 43,175 nodes. Here a node is a row:
its id (a sorted list of the id strings, found by bisection, as `stores.edge_columns.Ids`
finds the edges' ends), its kind (a byte into a table of the kinds seen), its name (a
pointer to the string the record came with: the symbol's name, which the file's records
hold too), its path cut from its id when the id says it (`path_in`; else kept beside, by
row) and its lines and level (int32, with a sentinel for None): ~29 bytes a node besides
the id string.

The nodes changed since the columns were built are held beside them as the records the
deltas brought (a removed one as None), and merged into new columns once they are more
than a sixteenth of the nodes (``LIVE_SHARE``, the pattern of `stores.edge_table`). A
record the columns cannot give back exactly (a line outside int32, an id other than its
key, a value of another type) stays beside them for good.

Seen as a mapping it is the dict it replaces: the same keys to equal records (built
again: not the same objects); its order is no answer's (the columns' ids sorted, then
the changed ones). Numpy-free, with `array`: a process that never folds a repository's
edges imports no numpy (the producers' read model, issue 21).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

from stores.records import NodeRecord

__all__ = ["NodeTable"]

NONE = -(1 << 31)
"""The int32 that stands for None in the lines and level columns."""

LIVE_SHARE = 16
LIVE_FLOOR = 1_024
"""The changed nodes are merged into the columns when they are more than a sixteenth of
the nodes (and more than LIVE_FLOOR): ~150 KB of records at most beside the columns."""

_new = object.__new__
_set = object.__setattr__
FIELDS = ("id", "kind", "name", "path", "line_start", "line_end", "level")
"""The record's fields, every one of which the columns hold (`fits` relies on it)."""


def _number(value: object) -> bool:
    return value is None or (type(value) is int and NONE < value < 1 << 31)


def fits(key: str, node: NodeRecord) -> bool:
    """Whether the columns give ``node`` back exactly under ``key``."""
    return (
        type(node) is NodeRecord
        and type(key) is str
        and node.id == key
        and type(node.id) is str
        and type(node.kind) is str
        and type(node.name) is str
        and (node.path is None or type(node.path) is str)
        and _number(node.line_start)
        and _number(node.line_end)
        and _number(node.level)
    )


def path_in(node_id: str) -> str | None:
    """The path a node's id names: a file's (``file:a.py``, ``sym:a.py:X``: the file
    graph's own rule, `processors.graph`'s ids), a folder's (``dir:pkg``), none for an
    external module (``ext:os``)."""
    if node_id.startswith("file:"):
        return node_id[5:]
    if node_id.startswith("sym:"):
        return node_id[4:].split(":", 1)[0]
    if node_id.startswith("dir:"):
        return node_id[4:]
    return None


def _int(value: int | None) -> int:
    return NONE if value is None else value


def _value(number: int) -> int | None:
    return None if number == NONE else number


class NodeTable(MutableMapping[str, NodeRecord]):
    """Every node of a state, as columns sorted by id, the nodes changed since beside
    them (None: removed). Changed by item assignment and deletion, as its state's dict
    was."""

    __slots__ = (
        "_count",
        "_ends",
        "_ids",
        "_kind",
        "_kinds",
        "_levels",
        "_live",
        "_names",
        "_odd_paths",
        "_starts",
        "_stuck",
    )

    def __init__(self, nodes: Iterable[NodeRecord] = ()) -> None:
        self._ids: list[str] = []
        self._kinds: list[str] = []  # the distinct kinds, in the order seen
        self._kind = array("B")  # an index into ``_kinds`` (a 'H' past 256 kinds)
        self._names: list[str] = []
        self._odd_paths: dict[int, str | None] = {}  # row -> a path its id does not say
        self._starts = array("i")
        self._ends = array("i")
        self._levels = array("i")
        self._live: dict[str, NodeRecord | None] = {}
        self._count = 0
        self._stuck = 0  # records in ``_live`` that the columns cannot hold
        for node in nodes:
            self[node.id] = node
        self.compact()

    # ---- read

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[str]:
        live = self._live
        if live:
            yield from (i for i in self._ids if i not in live)
        else:
            yield from self._ids
        yield from (i for i, node in live.items() if node is not None)

    def __contains__(self, key: object) -> bool:
        live = self._live
        if key in live:
            return live[key] is not None
        return isinstance(key, str) and self._row(key) is not None

    def __getitem__(self, key: str) -> NodeRecord:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def get(self, key: str, default: Any = None) -> Any:
        live = self._live
        if key in live:
            node = live[key]
            return default if node is None else node
        row = self._row(key) if isinstance(key, str) else None
        return default if row is None else self._record(row)

    def values(self) -> Iterator[NodeRecord]:  # type: ignore[override]
        return (node for _, node in self.items())

    def items(self) -> Iterator[tuple[str, NodeRecord]]:  # type: ignore[override]
        """Every node in the order of iteration, the columns' built a row at a time."""
        live, record = self._live, self._record
        for row, node_id in enumerate(self._ids):
            if node_id not in live:
                yield node_id, record(row)
        yield from ((i, node) for i, node in live.items() if node is not None)

    def _row(self, key: str) -> int | None:
        ids = self._ids
        at = bisect_left(ids, key)
        return at if at < len(ids) and ids[at] == key else None

    def _record(self, row: int) -> NodeRecord:
        """The record of a row, as `stores.records.trusted` builds a fact (not validated
        again: it was when it came in)."""
        node = _new(NodeRecord)
        _set(node, "id", self._ids[row])
        _set(node, "kind", self._kinds[self._kind[row]])
        _set(node, "name", self._names[row])
        odd = self._odd_paths
        _set(node, "path", odd[row] if row in odd else path_in(self._ids[row]))
        _set(node, "line_start", _value(self._starts[row]))
        _set(node, "line_end", _value(self._ends[row]))
        _set(node, "level", _value(self._levels[row]))
        return node

    # ---- change

    def __setitem__(self, key: str, node: NodeRecord) -> None:
        if key not in self:
            self._count += 1
        self._live[key] = node

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        if isinstance(key, str) and self._row(key) is not None:
            self._live[key] = None  # hides the row until the next merge
        else:
            del self._live[key]
        self._count -= 1

    def settle(self) -> None:
        """Merge the changed nodes into the columns if they are due (`RepoState.apply`
        calls it once a delta: a snapshot's 43 k nodes are one merge, not forty)."""
        if len(self._live) - self._stuck > max(LIVE_FLOOR, self._count // LIVE_SHARE):
            self.compact()

    def compact(self) -> None:
        """Merge the changed nodes into new columns (those it cannot hold stay beside)."""
        live = self._live
        if not live:
            return
        rows = [(i, r) for r, i in enumerate(self._ids) if i not in live]
        kept: dict[str, NodeRecord | None] = {}
        added: list[NodeRecord] = []
        for key, node in live.items():
            if node is None:
                continue
            if fits(key, node):
                added.append(node)
            else:
                kept[key] = node
        # (id, row of the columns, or -1 - index into ``added``): ids are unique
        order = sorted(rows + [(n.id, -1 - a) for a, n in enumerate(added)])
        ids: list[str] = []
        kinds, kind_of = self._kinds, {k: c for c, k in enumerate(self._kinds)}
        names: list[str] = []
        odd_paths: dict[int, str | None] = {}
        starts, ends, levels = array("i"), array("i"), array("i")
        codes: list[int] = []
        for node_id, r in order:
            ids.append(node_id)
            if r >= 0:
                codes.append(self._kind[r])
                names.append(self._names[r])
                if r in self._odd_paths:
                    odd_paths[len(ids) - 1] = self._odd_paths[r]
                starts.append(self._starts[r])
                ends.append(self._ends[r])
                levels.append(self._levels[r])
                continue
            node = added[-1 - r]
            code = kind_of.get(node.kind)
            if code is None:
                code = kind_of[node.kind] = len(kinds)
                kinds.append(node.kind)
            codes.append(code)
            names.append(node.name)
            if node.path != path_in(node_id):
                odd_paths[len(ids) - 1] = node.path
            starts.append(_int(node.line_start))
            ends.append(_int(node.line_end))
            levels.append(_int(node.level))
        kind = array("B" if len(kinds) <= 256 else "H", codes)
        self._ids, self._kind, self._names, self._odd_paths = ids, kind, names, odd_paths
        self._starts, self._ends, self._levels = starts, ends, levels
        self._live, self._stuck = kept, len(kept)
