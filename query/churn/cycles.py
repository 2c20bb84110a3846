"""Import cycles: the strongly connected components of more than one file.

A cycle is a set of files each reachable from every other through file dependencies
(the arcs of the file graph). A cycle is *new* in an entry when its exact file set was
not a cycle at the end of the previous entry: a cycle that grows by one file is a new
cycle (and the smaller one is gone).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Cycle = frozenset[str]


def import_cycles(files: Iterable[str], arcs: Iterable[tuple[str, str]]) -> frozenset[Cycle]:
    """The strongly connected file sets of size > 1 (iterative Tarjan, no recursion limit)."""
    successors: dict[str, list[str]] = {f: [] for f in files}
    for source, target in arcs:
        if source in successors and target in successors and source != target:
            successors[source].append(target)
    return frozenset(c for c in _components(successors) if len(c) > 1)


def _components(successors: Mapping[str, list[str]]) -> list[Cycle]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[Cycle] = []
    for root in sorted(successors):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            nexts = successors[node]
            if child < len(nexts):
                work.append((node, child + 1))
                target = nexts[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                found.append(frozenset(members))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def new_cycles(before: frozenset[Cycle], after: frozenset[Cycle]) -> tuple[tuple[str, ...], ...]:
    """The cycles of ``after`` that were not cycles in ``before``, each sorted, in order."""
    return tuple(sorted(tuple(sorted(c)) for c in after - before))
