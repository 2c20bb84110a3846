"""What an adjacency folds beside the state's edges: the records a delta is about to
change, the names of the nodes, and the hub threshold.

The edges are the state's own, both directions (`stores.edge_table.EdgeTable`); what a
delta changes beside them is folded here, so that an adjacency kept up to date answers
what a rebuild would (issue 15: the rebuild was 47-80 ms on django, on the event loop,
after every edit).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass

from stores.records import EdgeRecord, NodeRecord


@dataclass(frozen=True, slots=True)
class Before:
    """What a delta is about to change, as the state holds it just before applying it:
    the nodes it removes or upserts and the edges under the keys it removes or upserts
    (None: absent). The fold needs no more of the state than this."""

    nodes: Mapping[str, NodeRecord | None]
    edges: Mapping[tuple[str, str, str], EdgeRecord | None]


Named = dict[str, "str | tuple[str, ...]"]
"""Each name's node ids, sorted; a name of one node holds its id alone (a tuple of one
costs 64 bytes: most of sympy's names are one symbol's)."""


def ids_named(names: Named, name: str) -> tuple[str, ...]:
    found = names.get(name, ())
    return (found,) if isinstance(found, str) else found


def fold_names(
    names: Named,
    nodes: Mapping[str, NodeRecord],
    before: Mapping[str, NodeRecord | None],
) -> None:
    """Move the nodes a delta removed or upserted (``before``: as they were; ``nodes``:
    as they are) from their old name to their new one; a name's ids stay sorted."""
    moved: dict[str, tuple[set[str], set[str]]] = {}  # name -> (ids out, ids in)
    for node_id, old in before.items():
        new = nodes.get(node_id)
        was = old.name if old is not None and old.path is not None else None
        now = new.name if new is not None and new.path is not None else None
        if was == now:
            continue
        if was is not None:
            moved.setdefault(was, (set(), set()))[0].add(node_id)
        if now is not None:
            moved.setdefault(now, (set(), set()))[1].add(node_id)
    for name, (gone, came) in moved.items():
        ids = list(ids_named(names, name))
        for node_id in sorted(gone):
            at = bisect_left(ids, node_id)
            if at < len(ids) and ids[at] == node_id:
                del ids[at]
        for node_id in sorted(came):
            at = bisect_left(ids, node_id)
            if at == len(ids) or ids[at] != node_id:
                ids.insert(at, node_id)
        if ids:
            names[name] = ids[0] if len(ids) == 1 else tuple(ids)
        else:
            names.pop(name, None)


def threshold_of(histogram: Mapping[int, int], q: float, floor: int) -> float:
    """`stores.projections.hubs.hub_threshold` of the degrees counted in ``histogram``
    (degree -> nodes): the same ranks and the same float expression, the linear
    interpolation between the closest ranks, without sorting every node's degree."""
    total = sum(histogram.values())
    if not total:
        return max(0.0, float(floor))
    position = (total - 1) * q / 100.0
    lo, hi = math.floor(position), math.ceil(position)
    low = high = seen = 0
    for degree in sorted(histogram):
        count = histogram[degree]
        if seen <= lo < seen + count:
            low = degree
        if seen <= hi < seen + count:
            high = degree
            break
        seen += count
    return max(low + (high - low) * (position - lo), float(floor))
