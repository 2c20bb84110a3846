"""What changed between two consecutive descriptions of a repository's neighborhoods.

Each event is a frozen value with a ``kind`` and fields of str, int, float and tuples, so it
maps one to one onto a pydantic model on a topic. Files count only when present on both
sides ("kept files"): an added or deleted file moves nothing. The rules:

- ``created`` / ``removed``: an id present only after / only before.
- ``split``: an old neighborhood whose kept files now lie in at least two neighborhoods that
  each take a substantial part: at least ``part_share`` (1/5) of them and at least
  ``min_files`` (2) files. One file leaving is a move, not a split.
- ``merged``: a neighborhood now holding most (more than ``merge_share``, half) of the kept
  files, and at least ``min_files`` of them, of two or more old neighborhoods; the same
  "more than half" that lets an id survive (identity.py), so the id it carries is one of
  the sources.
- ``files_moved``: kept files whose neighborhood id changed, one event per (source, target)
  pair with the paths, rather than one per file: a split of 500 files is one message.
- ``cohesion_changed``: an id on both sides whose cohesion moved by at least
  ``cohesion_threshold`` (0.05), compared after rounding to ``DIGITS`` so float noise
  (0.55 - 0.5 = 0.050000000000000044) never decides.

Events come in that order of kinds, then by id (``files_moved`` by source, then target).
Split and merge parts are listed by files taken, descending, then id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from processors.neighborhoods.neighborhood import Neighborhood

COHESION_THRESHOLD = 0.05
PART_SHARE = 0.2
MERGE_SHARE = 0.5
MIN_FILES = 2
DIGITS = 9


@dataclass(frozen=True, slots=True)
class NeighborhoodCreated:
    kind: Literal["created"] = field(default="created", init=False)
    neighborhood: str
    label: str
    size: int


@dataclass(frozen=True, slots=True)
class NeighborhoodRemoved:
    kind: Literal["removed"] = field(default="removed", init=False)
    neighborhood: str
    label: str
    size: int


@dataclass(frozen=True, slots=True)
class NeighborhoodSplit:
    """``neighborhood`` (an old id) now lies mostly in ``parts`` (new ids)."""

    kind: Literal["split"] = field(default="split", init=False)
    neighborhood: str
    parts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class NeighborhoodsMerged:
    """``sources`` (old ids) now lie mostly in ``neighborhood`` (a new id)."""

    kind: Literal["merged"] = field(default="merged", init=False)
    neighborhood: str
    sources: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FilesMoved:
    kind: Literal["files_moved"] = field(default="files_moved", init=False)
    source: str
    target: str
    paths: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CohesionChanged:
    kind: Literal["cohesion_changed"] = field(default="cohesion_changed", init=False)
    neighborhood: str
    before: float
    after: float


NeighborhoodChange = (
    NeighborhoodCreated
    | NeighborhoodRemoved
    | NeighborhoodSplit
    | NeighborhoodsMerged
    | FilesMoved
    | CohesionChanged
)


def diff_neighborhoods(
    before: Sequence[Neighborhood],
    after: Sequence[Neighborhood],
    *,
    cohesion_threshold: float = COHESION_THRESHOLD,
    part_share: float = PART_SHARE,
    merge_share: float = MERGE_SHARE,
    min_files: int = MIN_FILES,
) -> tuple[NeighborhoodChange, ...]:
    """The events that turn ``before`` into ``after`` (see the module docstring)."""
    old = {n.id: n for n in before}
    new = {n.id: n for n in after}
    moves = _moves(before, after)
    kept = Counter[str]()
    for (source, _), paths in moves.items():
        kept[source] += len(paths)

    events: list[NeighborhoodChange] = []
    events += [
        NeighborhoodCreated(i, new[i].label, new[i].size) for i in sorted(new.keys() - old.keys())
    ]
    events += [
        NeighborhoodRemoved(i, old[i].label, old[i].size) for i in sorted(old.keys() - new.keys())
    ]
    parts = _grouped(
        (source, target, len(paths))
        for (source, target), paths in moves.items()
        if len(paths) >= min_files and len(paths) >= part_share * kept[source]
    )
    events += [NeighborhoodSplit(s, targets) for s, targets in parts.items() if len(targets) > 1]
    sources = _grouped(
        (target, source, len(paths))
        for (source, target), paths in moves.items()
        if len(paths) >= min_files and len(paths) > merge_share * kept[source]
    )
    events += [NeighborhoodsMerged(t, olds) for t, olds in sources.items() if len(olds) > 1]
    events += [
        FilesMoved(source, target, tuple(sorted(paths)))
        for (source, target), paths in sorted(moves.items())
        if source != target
    ]
    for i in sorted(old.keys() & new.keys()):
        if round(abs(new[i].cohesion - old[i].cohesion), DIGITS) >= cohesion_threshold:
            events.append(CohesionChanged(i, old[i].cohesion, new[i].cohesion))
    return tuple(events)


def _moves(
    before: Sequence[Neighborhood], after: Sequence[Neighborhood]
) -> dict[tuple[str, str], list[str]]:
    """The kept files by (old id, new id), staying ones included (old id == new id)."""
    now = {path: n.id for n in after for path in n.members}
    moves: dict[tuple[str, str], list[str]] = {}
    for n in before:
        for path in n.members:
            if path in now:
                moves.setdefault((n.id, now[path]), []).append(path)
    return moves


def _grouped(links: Iterable[tuple[str, str, int]]) -> dict[str, tuple[str, ...]]:
    """(key, other, files) links as key -> others by files descending then id, keys sorted."""
    grouped: dict[str, list[tuple[int, str]]] = {}
    for key, other, files in links:
        grouped.setdefault(key, []).append((-files, other))
    return {
        key: tuple(other for _, other in sorted(pairs)) for key, pairs in sorted(grouped.items())
    }
