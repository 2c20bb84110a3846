"""Stable neighborhood ids: a reclustered group keeps the id of the neighborhood it continues.

Agents and the change events refer to neighborhoods by id, so an id must survive a
reclustering whenever the group of files it names survives. The rule, one for every kind
of neighborhood:

- A new group *continues* an old neighborhood when it holds more than ``KEEP_SHARE`` (half)
  of that neighborhood's files that still exist. Because groups are disjoint, at most one
  group can hold more than half of an old neighborhood, so an old id can go to one group
  only; a group that continues several old neighborhoods (a merge) keeps the id of the one
  it overlaps most.
- Candidates are taken greedily: overlap descending, then the smaller old neighborhood
  (the higher share), then the old id, then the group's first path; each group and each old
  id is used once.
- Any other group gets a fresh id, ``nb-`` + the first 12 hex digits of the SHA-1 of its
  sorted member paths (one per line): deterministic, independent of where the repository
  lives, and the same group reborn later gets the same id back. A fresh id never equals an
  id of the previous partition or one given in this round: on a clash the digest is taken
  again over the members plus a counter.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

KEEP_SHARE = 0.5
ID_PREFIX = "nb-"
ID_HEX_DIGITS = 12


def fresh_id(members: Sequence[str], taken: Collection[str]) -> str:
    """A deterministic id for a group of sorted paths that is not in ``taken``."""
    text = "\n".join(members)
    attempt = 0
    while True:
        salted = text if attempt == 0 else f"{text}\n#{attempt}"
        candidate = ID_PREFIX + hashlib.sha1(salted.encode()).hexdigest()[:ID_HEX_DIGITS]
        if candidate not in taken:
            return candidate
        attempt += 1


def assign_ids(
    groups: Sequence[Sequence[str]],
    previous: Mapping[str, str],
    keep_share: float = KEEP_SHARE,
) -> tuple[str, ...]:
    """An id for each group (aligned with ``groups``), reusing ids of ``previous`` (path -> id).

    ``groups`` are disjoint, each a non-empty sorted sequence of paths. A group continues an old
    neighborhood when its overlap with it exceeds ``keep_share`` x that neighborhood's
    surviving files (see the module docstring for the full rule and tie-breaks).
    """
    present = {path for group in groups for path in group}
    surviving = Counter(old for path, old in previous.items() if path in present)
    candidates: list[tuple[int, int, str, str, int]] = []
    for index, group in enumerate(groups):
        overlaps = Counter(previous[path] for path in group if path in previous)
        for old, overlap in overlaps.items():
            if overlap > keep_share * surviving[old]:
                candidates.append((-overlap, surviving[old], old, group[0], index))
    candidates.sort()

    ids: dict[int, str] = {}
    used: set[str] = set()
    for _, _, old, _, index in candidates:
        if index not in ids and old not in used:
            ids[index] = old
            used.add(old)

    taken = set(previous.values())  # kept ids included: they are previous ids
    # Fresh ids in the order of each group's first path, so clash salts are deterministic.
    for index in sorted(range(len(groups)), key=lambda i: groups[i][0]):
        if index not in ids:
            ids[index] = fresh_id(groups[index], taken)
            taken.add(ids[index])
    return tuple(ids[index] for index in range(len(groups)))
