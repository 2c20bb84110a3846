"""A graph delta folded into an adjacency's per-node edge lists, as RepoState folds it;
its names and its hub threshold kept alike.

`Adjacency.of(state)` lists a node's edges in the order of the state's edge dict. That
dict's order, seen from one node, is kept by three rules: a removed key leaves its place,
a new key goes last, an upserted key already there keeps its place. RepoState applies a
delta's removals first, then its upserts in order. Replaying exactly that on each
touched node's list, with a small dict keyed like the state's (the other end, the kind),
leaves every list equal, in order, to the one a rebuild would give (issue 15: the
rebuild was 47-80 ms on django, on the event loop, after every edit).

The state's records under the delta's keys, taken just before it applies, say which
upserts are new keys (appended: a hub's thousands of importers are not read for a new
import) and which records leave or are replaced (found by identity, in one pass over
the node's list). Only a key touched twice in one delta needs the replay.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from stores.records import EdgeRecord, NodeRecord

Lists = dict[str, list[EdgeRecord]]


@dataclass(frozen=True, slots=True)
class Before:
    """What a delta is about to change, as the state holds it just before applying it:
    the nodes it removes or upserts and the edges under the keys it removes or upserts
    (None: absent). The fold needs no more of the state than this."""

    nodes: Mapping[str, NodeRecord | None]
    edges: Mapping[tuple[str, str, str], EdgeRecord | None]


@dataclass(frozen=True, slots=True)
class Folded:
    """What a delta changed: the nodes whose lists out of / into them changed, and the
    records that left or entered a list (to recount their ends' connections)."""

    sources: frozenset[str]
    targets: frozenset[str]
    changed: tuple[EdgeRecord, ...]


class _Ops:
    """One node's share of a delta, seen from the node: the keys removed and records
    upserted in order (for a replay), and, when no key is touched twice, the records
    dropped and replaced (by identity) and the new ones to append."""

    __slots__ = ("dropped", "fresh", "gone", "new", "replay", "swapped")

    def __init__(self) -> None:
        self.gone: list[tuple[str, str]] = []
        self.new: list[EdgeRecord] = []
        self.dropped: set[int] = set()
        self.swapped: dict[int, EdgeRecord] = {}
        self.fresh: list[EdgeRecord] = []
        self.replay = False


def fold_edges(
    out: Lists,
    into: Lists,
    removed: Iterable[tuple[str, str, str]],
    upserted: Iterable[EdgeRecord],
    before: Mapping[tuple[str, str, str], EdgeRecord | None],
) -> Folded:
    """Apply a delta's edge removals, then its upserts, to ``out`` and ``into`` in place;
    ``before``: the state's records under the delta's keys before it was applied."""
    by_src: dict[str, _Ops] = {}
    by_dst: dict[str, _Ops] = {}
    seen: set[tuple[str, str, str]] = set()
    changed: list[EdgeRecord] = []
    for key in removed:
        src, dst, kind = key
        ops_out, ops_in = by_src.setdefault(src, _Ops()), by_dst.setdefault(dst, _Ops())
        ops_out.gone.append((dst, kind))
        ops_in.gone.append((src, kind))
        if key in seen:  # removed twice: replayed (the second removal is a no-op)
            ops_out.replay = ops_in.replay = True
            continue
        seen.add(key)
        old = before.get(key)
        if old is not None:
            changed.append(old)
            ops_out.dropped.add(id(old))
            ops_in.dropped.add(id(old))
    for edge in upserted:
        key = edge.key
        ops_out, ops_in = by_src.setdefault(edge.src, _Ops()), by_dst.setdefault(edge.dst, _Ops())
        ops_out.new.append(edge)
        ops_in.new.append(edge)
        changed.append(edge)
        if key in seen:  # removed then upserted, or upserted twice: replayed
            ops_out.replay = ops_in.replay = True
            continue
        seen.add(key)
        old = before.get(key)
        if old is None:
            ops_out.fresh.append(edge)
            ops_in.fresh.append(edge)
        else:
            changed.append(old)
            ops_out.swapped[id(old)] = edge
            ops_in.swapped[id(old)] = edge
    for src, ops in by_src.items():
        _fold_node(out, src, ops, outgoing=True)
    for dst, ops in by_dst.items():
        _fold_node(into, dst, ops, outgoing=False)
    return Folded(frozenset(by_src), frozenset(by_dst), tuple(changed))


def _fold_node(lists: Lists, node: str, ops: _Ops, *, outgoing: bool) -> None:
    """One node's list. When every key is touched once: new records appended (a hub's
    thousands of importers are not read for a new import), removed and replaced ones
    found by identity in one pass. Else replayed over a dict keyed like the state's,
    seen from the node (the other end, the kind)."""
    held = lists.get(node)
    if not ops.replay:
        if ops.dropped or ops.swapped:
            dropped, swapped = ops.dropped, ops.swapped
            kept = [e for e in held or () if id(e) not in dropped]
            if swapped:
                kept = [swapped.get(id(e), e) for e in kept]
            lists[node] = kept + ops.fresh
            if not lists[node]:
                del lists[node]  # as a rebuild: no node without edges has a list
        elif ops.fresh:
            lists.setdefault(node, []).extend(ops.fresh)
        return
    if outgoing:
        mine = {(e.dst, e.kind): e for e in held or ()}
        for key in ops.gone:
            mine.pop(key, None)
        for edge in ops.new:
            mine[(edge.dst, edge.kind)] = edge
    else:
        mine = {(e.src, e.kind): e for e in held or ()}
        for key in ops.gone:
            mine.pop(key, None)
        for edge in ops.new:
            mine[(edge.src, edge.kind)] = edge
    _store(lists, node, mine)


def _store(lists: Lists, node: str, held: dict[tuple[str, str], EdgeRecord]) -> None:
    if held:
        lists[node] = list(held.values())
    else:
        lists.pop(node, None)  # as a rebuild: no node without edges has a list


def fold_names(
    names: dict[str, tuple[str, ...]],
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
        ids = list(names.get(name, ()))
        for node_id in sorted(gone):
            at = bisect_left(ids, node_id)
            if at < len(ids) and ids[at] == node_id:
                del ids[at]
        for node_id in sorted(came):
            at = bisect_left(ids, node_id)
            if at == len(ids) or ids[at] != node_id:
                ids.insert(at, node_id)
        if ids:
            names[name] = tuple(ids)
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
