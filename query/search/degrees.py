"""Each node's degree in the adjacency, as two columns (issue 16 §3).

The degrees were a dict from node id to count: ~30 bytes a node for its slot (sympy:
43 k nodes, 1.3 MB). Here they are the ids sorted (the strings the state holds: 8
bytes a pointer) beside an int64 array of the counts, the degrees recounted since
(`Adjacency.apply`) in a small dict beside them (None: dropped), merged into new columns
once they are more than a sixteenth of the nodes. Read as a mapping it is the dict it
replaces (its order none an answer relies on: the columns' ids, then the recounted).
Pure.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, MutableMapping

LIVE_SHARE = 16
LIVE_FLOOR = 1_024

_LOW, _HIGH = -(1 << 63), 1 << 63


class Degrees(MutableMapping[str, int]):
    """node id -> its degree; changed by item assignment and deletion."""

    __slots__ = ("_changed", "_count", "_keys", "_stuck", "_values")

    def __init__(self, pairs: Iterable[tuple[str, int]] = ()) -> None:
        self._keys: list[str] = []
        self._values = array("q")
        self._changed: dict[str, int | None] = {}
        self._count = 0
        self._stuck = 0  # recounted values the columns cannot hold (not an int64)
        self._changed.update(pairs)  # then one merge, not one per ~LIVE_FLOOR
        self._count = len(self._changed)
        self.compact()

    def _row(self, key: str) -> int | None:
        keys = self._keys
        at = bisect_left(keys, key)
        return at if at < len(keys) and keys[at] == key else None

    def __getitem__(self, key: str) -> int:
        changed = self._changed
        if key in changed:
            value = changed[key]
            if value is None:
                raise KeyError(key)
            return value
        row = self._row(key) if isinstance(key, str) else None
        if row is None:
            raise KeyError(key)
        return self._values[row]

    def __contains__(self, key: object) -> bool:
        changed = self._changed
        if key in changed:
            return changed[key] is not None
        return isinstance(key, str) and self._row(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.items())

    def __len__(self) -> int:
        return self._count

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        changed = self._changed
        for key, value in zip(self._keys, self._values, strict=True):
            if key not in changed:
                yield key, value
        yield from ((k, v) for k, v in changed.items() if v is not None)

    def values(self) -> Iterator[int]:  # type: ignore[override]
        return (value for _, value in self.items())

    def __setitem__(self, key: str, value: int) -> None:
        if key not in self:
            self._count += 1
        self._changed[key] = value
        self._settle()

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        if isinstance(key, str) and self._row(key) is not None:
            self._changed[key] = None  # hides the row until the next merge
        else:
            del self._changed[key]
        self._count -= 1
        self._settle()

    def _settle(self) -> None:
        if len(self._changed) - self._stuck > max(LIVE_FLOOR, self._count // LIVE_SHARE):
            self.compact()

    def compact(self) -> None:
        """Merge the recounted degrees into new columns."""
        changed = self._changed
        if not changed:
            return
        kept: dict[str, int | None] = {}
        merged: list[tuple[str, int]] = [
            (k, v) for k, v in zip(self._keys, self._values, strict=True) if k not in changed
        ]
        for key, value in changed.items():
            if value is None:
                continue
            if type(key) is str and type(value) is int and _LOW <= value < _HIGH:
                merged.append((key, value))
            else:
                kept[key] = value
        merged.sort(key=lambda pair: pair[0])
        self._keys = [k for k, _ in merged]
        self._values = array("q", [v for _, v in merged])
        self._changed, self._stuck = kept, len(kept)
