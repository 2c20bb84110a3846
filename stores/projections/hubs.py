"""Hubs: the files linked with so many others that walking through them explains nothing.

A file's degree is the number of distinct files it is linked with in the file graph, in
either direction (a -> b and b -> a count b once). Two flags, from two source documents:

- ``hub`` (vortexa): degree above the 99th percentile of the repository's degrees, and
  never at or below 50, so a small repository, whose p99 is a handful, has no hubs.
  Traversals (BFS/DFS, shortest paths, context packs) skip these.
- ``expansion_hub`` (ContextOS): more than 30 connections. Search-result graph expansion
  does not go through these (it may still reach them).

The percentile is the linear interpolation between closest ranks (numpy's default), so a
star of 51 leaves around one centre has p99 = 25.5 and the centre (degree 51) is a hub;
nearest-rank would make p99 the maximum degree in any repository under 100 files and no
file could ever be above it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from stores.projections.file_graph import FileGraph
from stores.projections.page import Page, paged

HUB_PERCENTILE = 99.0
HUB_FLOOR = 50
EXPANSION_HUB_DEGREE = 30


@dataclass(frozen=True, slots=True)
class FileDegree:
    """How connected one file is. ``in_degree`` counts the files depending on it,
    ``out_degree`` the files it depends on, ``weighted_in`` the weights of the former."""

    path: str
    degree: int
    in_degree: int
    out_degree: int
    weighted_in: float
    hub: bool
    expansion_hub: bool


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(position), math.ceil(position)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)


def hub_threshold(
    degrees: Sequence[int], q: float = HUB_PERCENTILE, floor: int = HUB_FLOOR
) -> float:
    """The degree a file must exceed to be a hub: max(p99 of degrees, 50)."""
    return max(percentile(degrees, q), float(floor))


def file_degrees(
    graph: FileGraph,
    *,
    q: float = HUB_PERCENTILE,
    floor: int = HUB_FLOOR,
    expansion_limit: int = EXPANSION_HUB_DEGREE,
) -> dict[str, FileDegree]:
    """Every file of the graph with its degrees and hub flags, in path order."""
    inbound: dict[str, set[str]] = {p: set() for p in graph.files}
    outbound: dict[str, set[str]] = {p: set() for p in graph.files}
    weighted: dict[str, float] = dict.fromkeys(graph.files, 0.0)
    for (a, b), weight in graph.arcs.items():
        outbound[a].add(b)
        inbound[b].add(a)
        weighted[b] += weight
    degree = {p: len(inbound[p] | outbound[p]) for p in graph.files}
    threshold = hub_threshold(list(degree.values()), q, floor)
    return {
        p: FileDegree(
            path=p,
            degree=degree[p],
            in_degree=len(inbound[p]),
            out_degree=len(outbound[p]),
            weighted_in=weighted[p],
            hub=degree[p] > threshold,
            expansion_hub=degree[p] > expansion_limit,
        )
        for p in graph.files
    }


def top_hubs(degrees: Iterable[FileDegree], limit: int = 10) -> Page[FileDegree]:
    """The most connected files (degree > 0), by degree descending, then path; flagged or
    not (the flags ride along), so a repository without hubs still shows its busiest files."""
    ordered = sorted((d for d in degrees if d.degree > 0), key=lambda d: (-d.degree, d.path))
    return paged(ordered, 0, limit)
