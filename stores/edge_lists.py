"""A graph delta's edges folded into per-node edge lists, in the order a dict keyed by
edge would keep them.

The state keeps each node's edges out of it in a list (`stores.edge_table.EdgeTable`),
and the query side's adjacency keeps the edges into each node the same way. The order
a dict keyed by ``(src, dst, kind)`` would keep, seen from one node, is kept by three
rules: a removed key leaves its place, a new key goes last, an upserted key already
there keeps its place. A delta's removals apply first, then its upserts in order.
Replaying exactly that on each touched node's list, with a small dict keyed like the
state's (the other end, the kind), leaves every list equal, in order, to the one
folding every delta into a dict and reading it from the node would give.

The records under the delta's keys, taken just before it applies (``before``), say
which upserts are new keys (appended: a hub's thousands of importers are not read for
a new import) and which records leave or are replaced (found by identity, in one pass
over the node's list). Only a key touched twice in one delta needs the replay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from stores.records import EdgeRecord

Lists = dict[str, list[EdgeRecord]]


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
    out: Lists | None,
    into: Lists | None,
    removed: Iterable[tuple[str, str, str]],
    upserted: Iterable[EdgeRecord],
    before: Mapping[tuple[str, str, str], EdgeRecord | None],
) -> Folded:
    """Apply a delta's edge removals, then its upserts, to ``out`` and ``into`` in place
    (None: that side is not kept here); ``before``: the records under the delta's keys
    before it was applied."""
    by_src: dict[str, _Ops] = {}
    by_dst: dict[str, _Ops] = {}
    seen: set[tuple[str, str, str]] = set()
    changed: list[EdgeRecord] = []
    for key in removed:
        src, dst, kind = key
        ops_out, ops_in = _ops(by_src, src), _ops(by_dst, dst)
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
        ops_out, ops_in = _ops(by_src, edge.src), _ops(by_dst, edge.dst)
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
    if out is not None:
        for src, ops in by_src.items():
            _fold_node(out, src, ops, outgoing=True)
    if into is not None:
        for dst, ops in by_dst.items():
            _fold_node(into, dst, ops, outgoing=False)
    return Folded(frozenset(by_src), frozenset(by_dst), tuple(changed))


def _ops(by_node: dict[str, _Ops], node: str) -> _Ops:
    found = by_node.get(node)
    if found is None:  # not setdefault: it would build an _Ops for every edge
        found = by_node[node] = _Ops()
    return found


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
    if mine:
        lists[node] = list(mine.values())
    else:
        lists.pop(node, None)  # as a rebuild: no node without edges has a list
