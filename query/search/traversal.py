"""Bounded walks of the code graph (vortexa): BFS, DFS and the shortest path.

They follow dependency edges only (`Adjacency.links`: no structure, no name-match
guesses) and skip hubs, the nodes above the repository's p99 degree (floor 50): such
a node is neither visited nor passed, since everything is two hops apart through it.
The start of a walk is the exception (asking about a hub is allowed). Neighbours are
taken heaviest edge first, then by id, so every walk is deterministic.

The shortest path is undirected (a dependency chain reads either way: the entry calls
down to the target, or the target is imported up to the entry), at most 8 hops, and
passes through neither hubs nor external modules (two files importing ``os`` are not
connected by it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from query.search.adjacency import Adjacency, Link

Direction = Literal["out", "in", "both"]
MAX_HOPS = 8


@dataclass(frozen=True, slots=True)
class Visit:
    node: str
    depth: int
    via: str | None = None


def bfs(
    adjacency: Adjacency,
    start: str,
    *,
    max_depth: int = 3,
    max_nodes: int = 100,
    direction: Direction = "both",
    skip_hubs: bool = True,
) -> tuple[Visit, ...]:
    """Nodes in breadth-first order from ``start`` (included), hubs skipped unless
    ``skip_hubs`` is False."""
    if start not in adjacency.nodes or max_nodes < 1:
        return ()
    visits = [Visit(start, 0)]
    seen = {start}
    queue = deque([(start, 0)])
    while queue and len(visits) < max_nodes:
        node, depth = queue.popleft()
        if depth >= max_depth:
            continue
        for link in _follow(adjacency, node, direction):
            if link.other in seen or (skip_hubs and adjacency.is_hub(link.other)):
                continue
            seen.add(link.other)
            visits.append(Visit(link.other, depth + 1, node))
            if len(visits) >= max_nodes:
                break
            queue.append((link.other, depth + 1))
    return tuple(visits)


def dfs(
    adjacency: Adjacency,
    start: str,
    *,
    max_depth: int = 3,
    max_nodes: int = 100,
    direction: Direction = "both",
    skip_hubs: bool = True,
) -> tuple[Visit, ...]:
    """Nodes in depth-first preorder from ``start`` (included), hubs skipped unless
    ``skip_hubs`` is False."""
    if start not in adjacency.nodes or max_nodes < 1:
        return ()
    visits: list[Visit] = []
    seen: set[str] = set()
    stack: list[tuple[str, int, str | None]] = [(start, 0, None)]
    while stack and len(visits) < max_nodes:
        node, depth, via = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        visits.append(Visit(node, depth, via))
        if depth >= max_depth:
            continue
        nexts = [
            link.other
            for link in _follow(adjacency, node, direction)
            if link.other not in seen and not (skip_hubs and adjacency.is_hub(link.other))
        ]
        stack.extend((other, depth + 1, node) for other in reversed(nexts))
    return tuple(visits)


def shortest_path(
    adjacency: Adjacency, source: str, target: str, *, max_hops: int = MAX_HOPS
) -> tuple[str, ...] | None:
    """The nodes of a shortest undirected path from ``source`` to ``target`` (both
    included), or None when they are further apart than ``max_hops`` or not connected.

    Bidirectional breadth-first search, one whole level of the smaller side at a time;
    neighbours are taken in id order and a node keeps the parent it was first reached
    from, and among the meeting nodes of the level that closes the gap the one of the
    shortest total, then the smallest id, wins: the same graph gives the same path.
    """
    if source not in adjacency.nodes or target not in adjacency.nodes:
        return None
    if source == target:
        return (source,)
    ends = {source, target}

    def passable(node: str) -> bool:
        return node in ends or not (node.startswith("ext:") or adjacency.is_hub(node))

    parents: tuple[dict[str, str | None], dict[str, str | None]] = ({source: None}, {target: None})
    depth_of: tuple[dict[str, int], dict[str, int]] = ({source: 0}, {target: 0})
    frontiers = ([source], [target])
    depths = [0, 0]
    while frontiers[0] and frontiers[1] and depths[0] + depths[1] < max_hops:
        side = 0 if len(frontiers[0]) <= len(frontiers[1]) else 1
        mine, theirs = parents[side], parents[1 - side]
        grown: list[str] = []
        meetings: list[tuple[int, str]] = []
        for node in frontiers[side]:
            for other in sorted({link.other for link in adjacency.links(node)}):
                if other in mine or not passable(other):
                    continue
                mine[other] = node
                depth_of[side][other] = depths[side] + 1
                grown.append(other)
                if other in theirs:
                    meetings.append((depths[side] + 1 + depth_of[1 - side][other], other))
        depths[side] += 1
        frontiers = (grown, frontiers[1]) if side == 0 else (frontiers[0], grown)
        if meetings:
            hops, meet = min(meetings)
            if hops > max_hops:
                return None
            forward = list(_chain(parents[0], meet))[::-1]
            backward = list(_chain(parents[1], meet))[1:]
            return (*forward, *backward)
    return None


def _chain(parents: dict[str, str | None], node: str) -> Iterator[str]:
    current: str | None = node
    while current is not None:
        yield current
        current = parents[current]


def _follow(adjacency: Adjacency, node: str, direction: Direction) -> list[Link]:
    """The node's links in the direction asked, each neighbour once (its heaviest link)."""
    seen: set[str] = set()
    links = []
    for link in adjacency.links(node):
        if (direction == "out" and not link.outgoing) or (direction == "in" and link.outgoing):
            continue
        if link.other not in seen:
            seen.add(link.other)
            links.append(link)
    return links
