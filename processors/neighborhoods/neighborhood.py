"""What a neighborhood is to an agent: a label, its cohesion, entry points and members' ties.

Konstruct's definitions (DESIGN.md section 6), made exact over the file graph, where a file's
undirected weight to another is the sum of the arcs both ways:

- **label**: the longest common directory prefix of the members, by path components
  (``a/b/x.py`` and ``a/b/c/y.py`` -> ``a/b``); when they share no directory, the file name
  of the member with the highest weighted degree (ties: path). Cross-cutting members are
  left out when others remain: a logging module attached to ``pkg/`` would otherwise turn
  its label into ``log.py`` (seen on a synthetic 1,500-file graph with shared hubs).
  Labels need not be unique; ``memberships`` carry inbound degrees for callers to show.
- **cohesion** = 1 - conductance, conductance = cut(S) / min(vol(S), vol(V - S)), where
  vol is the sum of weighted degrees. An edgeless neighborhood (vol(S) = 0, a folder group)
  has cohesion 0: nothing holds it together. One holding every edge of the graph
  (vol(V - S) = 0, no cut possible) has cohesion 1.
- **entry points**: up to ``entry_points`` (3) members by inbound weighted degree, i.e. the
  weight of arcs into the member from any file, inside the neighborhood or out: the files
  the rest of the code goes through. Ties by path; a member nothing depends on is never one,
  nor is a cross-cutting member (everything goes through the logging module, it says nothing
  about the neighborhood) unless every member is cross-cutting.
- **membership strength** of a file = (internal - external) / (internal + external) of its
  undirected weight, in [-1, 1]; 0 for a file without edges.
- **cross-cutting**: a file depended on from at least ``cross_cutting_neighborhoods`` (3)
  neighborhoods other than its own whose strength is below ``cross_cutting_strength`` (0):
  a logging or configuration module used everywhere belongs nowhere in particular. It stays
  in its neighborhood and is flagged, instead of forming a neighborhood of its own.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from processors.neighborhoods.clustering import NeighborhoodKind, Partition, weighted_pairs
from stores.projections.file_graph import FileGraph

ENTRY_POINTS = 3
CROSS_CUTTING_NEIGHBORHOODS = 3
CROSS_CUTTING_STRENGTH = 0.0


@dataclass(frozen=True, slots=True)
class Membership:
    """How one file belongs to its neighborhood. ``inbound`` is its inbound weighted degree."""

    path: str
    strength: float
    inbound: float
    cross_cutting: bool


@dataclass(frozen=True, slots=True)
class Neighborhood:
    """One neighborhood; ``members`` and ``memberships`` are in path order."""

    id: str
    kind: NeighborhoodKind
    label: str
    size: int
    members: tuple[str, ...]
    cohesion: float
    entry_points: tuple[str, ...]
    memberships: tuple[Membership, ...]


@dataclass(frozen=True, slots=True)
class _Ties:
    """The file graph's weights, read once per description."""

    neighbors: dict[str, dict[str, float]]
    degree: dict[str, float]
    inbound: dict[str, float]
    importers: dict[str, set[str]]  # path -> neighborhood ids of the files depending on it
    volume: float


def _ties(graph: FileGraph, partition: Partition) -> _Ties:
    pairs = weighted_pairs(graph)
    neighbors: dict[str, dict[str, float]] = {path: {} for path in graph.files}
    for (a, b), weight in pairs.items():
        neighbors[a][b] = weight
        neighbors[b][a] = weight
    inbound = dict.fromkeys(graph.files, 0.0)
    importers: dict[str, set[str]] = {path: set() for path in graph.files}
    for (src, dst), weight in graph.arcs.items():
        if weight > 0 and src != dst and src in inbound and dst in inbound:
            inbound[dst] += weight
            importers[dst].add(partition.assignment[src])
    degree = {path: sum(ties.values()) for path, ties in neighbors.items()}
    return _Ties(neighbors, degree, inbound, importers, 2 * sum(pairs.values()))


def describe(
    graph: FileGraph,
    partition: Partition,
    *,
    entry_points: int = ENTRY_POINTS,
    cross_cutting_neighborhoods: int = CROSS_CUTTING_NEIGHBORHOODS,
    cross_cutting_strength: float = CROSS_CUTTING_STRENGTH,
) -> tuple[Neighborhood, ...]:
    """Every neighborhood of ``partition`` over ``graph``: largest first, then by id.

    ``partition`` must cover every file of ``graph`` (as ``cluster`` returns it).
    """
    ties = _ties(graph, partition)
    described = []
    for nid, members in partition.groups().items():
        memberships = tuple(
            _membership(
                path, nid, partition, ties, cross_cutting_neighborhoods, cross_cutting_strength
            )
            for path in members
        )
        core = [m for m in memberships if not m.cross_cutting] or list(memberships)
        entries = sorted((m for m in core if m.inbound > 0), key=lambda m: (-m.inbound, m.path))
        described.append(
            Neighborhood(
                id=nid,
                kind=partition.kinds[nid],
                label=label([m.path for m in core], ties.degree),
                size=len(members),
                members=members,
                cohesion=_cohesion(members, nid, partition, ties),
                entry_points=tuple(m.path for m in entries[:entry_points]),
                memberships=memberships,
            )
        )
    return tuple(sorted(described, key=lambda n: (-n.size, n.id)))


def _membership(
    path: str,
    nid: str,
    partition: Partition,
    ties: _Ties,
    min_neighborhoods: int,
    max_strength: float,
) -> Membership:
    internal = sum(
        w for other, w in ties.neighbors[path].items() if partition.assignment[other] == nid
    )
    total = ties.degree[path]
    external = total - internal
    strength = (internal - external) / total if total > 0 else 0.0
    outside = len(ties.importers[path] - {nid})
    return Membership(
        path=path,
        strength=strength,
        inbound=ties.inbound[path],
        cross_cutting=outside >= min_neighborhoods and strength < max_strength,
    )


def _cohesion(members: Sequence[str], nid: str, partition: Partition, ties: _Ties) -> float:
    """1 - conductance; 0 for an edgeless neighborhood, 1 for one holding every edge."""
    inside = sum(ties.degree[path] for path in members)
    if inside == 0:
        return 0.0
    smaller = min(inside, ties.volume - inside)
    if smaller <= 0:
        return 1.0
    cut = sum(
        w
        for path in members
        for other, w in ties.neighbors[path].items()
        if partition.assignment[other] != nid
    )
    return 1.0 - cut / smaller


def label(members: Sequence[str], degree: dict[str, float]) -> str:
    """The deepest folder holding more than half of the members (their longest common
    directory when they all share one), else the most connected member's file name.

    Konstruct names a neighborhood by its members' longest common directory; in a
    repository under one top package (``django/...``) that is the package for most
    neighborhoods, so a majority decides: ``django/db/models`` for a cluster mostly there
    with a few helpers from elsewhere."""
    need = len(members) // 2 + 1
    counts: dict[str, int] = {}
    for path in members:
        parts = posixpath.dirname(path).split("/") if "/" in path else []
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            counts[folder] = counts.get(folder, 0) + 1
    held = [f for f, n in counts.items() if n >= need]
    if held:
        return max(held, key=lambda f: (f.count("/"), counts[f], f))
    hub = min(members, key=lambda path: (-degree.get(path, 0.0), path))
    return posixpath.basename(hub)
