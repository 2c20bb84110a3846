"""The structural diff between two indexed commits: what a pull request's reviewer wants.

The diff composes the entries after ``base`` up to and including ``head``, in order:

- a dependency (or a file) is *added* when it was absent before the first entry that
  touched it and present after the last; *removed* the other way round; added then
  removed (or the reverse) cancels;
- a *rename* is a removed file and an added file with the same content hash in the range
  (paired in path order); renamed files are listed as renames only, not as added and
  removed;
- a file *moved* between neighborhoods when its first neighborhood in the range (the
  source of its first move) differs from its last (the target of its last move), and it
  still exists at head;
- *entry points changed* compares each neighborhood's entry points in the snapshot
  attributed to ``base`` (or the last entry before it that has one) with those at
  ``head``; a neighborhood present on one side only has ``[]`` on the other.

A scan entry in the range contributes no lists (it keeps counts only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from query.churn.entry import ChurnEntry, Dependency
from query.churn.neighborhood_part import EntryPoints


@dataclass(frozen=True, slots=True)
class Rename:
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class Move:
    path: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class EntryPointChange:
    neighborhood: str
    label: str
    before: tuple[str, ...]
    after: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StructuralDiff:
    entries: int
    dependencies_added: tuple[Dependency, ...]
    dependencies_removed: tuple[Dependency, ...]
    files_added: tuple[str, ...]
    files_removed: tuple[str, ...]
    files_renamed: tuple[Rename, ...]
    files_moved: tuple[Move, ...]
    entry_points_changed: tuple[EntryPointChange, ...]


def structural_diff(entries: Sequence[ChurnEntry], base: int, head: int) -> StructuralDiff:
    """The diff from ``entries[base]`` to ``entries[head]`` (indexes, ``base < head``)."""
    if not 0 <= base < head < len(entries):
        raise ValueError(f"base {base} must come before head {head}")
    folded = entries[base + 1 : head + 1]
    # arc -> (present before the range, present after, weight when last seen)
    deps: dict[tuple[str, str], tuple[bool, bool, float]] = {}
    files: dict[str, tuple[bool, bool, str | None]] = {}
    moves: dict[str, tuple[str, str]] = {}
    for entry in folded:
        for d in entry.dependencies_added:
            start = deps.get((d.source, d.target), (False, False, 0.0))[0]
            deps[(d.source, d.target)] = (start, True, d.weight)
        for d in entry.dependencies_removed:
            start = deps.get((d.source, d.target), (True, True, 0.0))[0]
            deps[(d.source, d.target)] = (start, False, d.weight)
        for path in entry.files.added:
            files[path] = (files.get(path, (False,))[0], True, entry.file_hashes.get(path))
        for path in entry.files.removed:
            files[path] = (files.get(path, (True,))[0], False, entry.file_hashes.get(path))
        if entry.neighborhood is not None:
            for path, (source, target) in entry.neighborhood.moves.items():
                moves[path] = (moves.get(path, (source,))[0], target)
    added = sorted(p for p, (start, end, _) in files.items() if not start and end)
    removed = sorted(p for p, (start, end, _) in files.items() if start and not end)
    renames = _renames(added, removed, {p: h for p, (_, _, h) in files.items()})
    renamed = {r.before for r in renames} | {r.after for r in renames}
    gone = set(removed)
    return StructuralDiff(
        entries=len(folded),
        dependencies_added=_net(deps, added=True),
        dependencies_removed=_net(deps, added=False),
        files_added=tuple(p for p in added if p not in renamed),
        files_removed=tuple(p for p in removed if p not in renamed),
        files_renamed=renames,
        files_moved=tuple(
            Move(p, s, t) for p, (s, t) in sorted(moves.items()) if s != t and p not in gone
        ),
        entry_points_changed=_entry_points_changed(
            _entry_points_at(entries, base), _entry_points_at(entries, head)
        ),
    )


def _net(
    deps: dict[tuple[str, str], tuple[bool, bool, float]], *, added: bool
) -> tuple[Dependency, ...]:
    return tuple(
        Dependency(a, b, weight)
        for (a, b), (start, end, weight) in sorted(deps.items())
        if start != end and end == added
    )


def _renames(
    added: list[str], removed: list[str], hashes: dict[str, str | None]
) -> tuple[Rename, ...]:
    by_hash: dict[str, list[str]] = {}
    for path in added:
        digest = hashes.get(path)
        if digest is not None:
            by_hash.setdefault(digest, []).append(path)
    renames = []
    for path in removed:
        candidates = by_hash.get(hashes.get(path) or "")
        if candidates:
            renames.append(Rename(path, candidates.pop(0)))
    return tuple(renames)


def _entry_points_at(entries: Sequence[ChurnEntry], index: int) -> EntryPoints:
    for i in range(index, -1, -1):
        part = entries[i].neighborhood
        if part is not None:
            return part.entry_points
    return {}


def _entry_points_changed(before: EntryPoints, after: EntryPoints) -> tuple[EntryPointChange, ...]:
    changed = []
    for nid in sorted(before.keys() | after.keys()):
        old = before.get(nid, ("", ()))
        new = after.get(nid, ("", ()))
        if old[1] != new[1]:
            changed.append(EntryPointChange(nid, new[0] or old[0], old[1], new[1]))
    return tuple(changed)
