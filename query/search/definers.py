"""Which files define each symbol name: the retrieval's ``definers`` (issue 16 §3).

A name is defined by one file far more often than by several (sympy: most of its ~23 k
names), and a tuple of one costs 64 bytes beside the path it points to; so a name of one
file holds that path alone, and a name of several the sorted tuple. Read as a mapping
it gives a sorted tuple for every name, as the dict of tuples it replaces did. Pure.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping


class Definers(Mapping[str, tuple[str, ...]]):
    """name -> the files defining it, sorted; changed by `add` and `discard`."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: dict[str, str | tuple[str, ...]] = {}

    def __getitem__(self, name: str) -> tuple[str, ...]:
        held = self._held[name]
        return (held,) if isinstance(held, str) else held

    def __iter__(self) -> Iterator[str]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, name: object) -> bool:
        return name in self._held

    def add(self, name: str, path: str) -> None:
        files = list(self.get(name, ()))
        at = bisect_left(files, path)
        if at == len(files) or files[at] != path:
            files.insert(at, path)
            self._put(name, files)

    def discard(self, name: str, path: str) -> None:
        files = [p for p in self.get(name, ()) if p != path]
        if files:
            self._put(name, files)
        else:
            self._held.pop(name, None)

    def _put(self, name: str, files: list[str]) -> None:
        self._held[name] = files[0] if len(files) == 1 else tuple(files)
