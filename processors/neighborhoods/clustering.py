"""Neighborhoods of a repository: seeded, warm-started Leiden over the file graph, no lone files.

``cluster`` turns the undirected, weighted file graph into a ``Partition`` (file -> stable
neighborhood id, id -> kind) in four steps:

1. **Leiden** (igraph, objective "modularity", edge weights, ``resolution``) over the files
   that have at least one edge, in sorted path order so dict order never matters. igraph
   draws from the Python generator it was given; ``cluster`` installs a
   ``random.Random(seed)`` under a lock and puts the ``random`` module (igraph's default)
   back afterwards, so the same input gives the same partition byte for byte and no state
   leaks. With a previous partition the run is warm-started (``initial_membership``): files
   keep their previous neighborhood as a start and new files start alone. Measured
   (DESIGN.md section 5): 5-7 ms and 99.7-99.9% of assignments kept after an edit.
   ``n_iterations=-1`` iterates until a pass no longer improves, which leaves no file that
   would gain by moving, even after a stale warm start; on 1,500 synthetic files (12k arcs)
   it cost what 2 passes cost (5-9 ms for Leiden, about 25 ms for all of ``cluster``, most
   of the rest being the pass over the arcs) and found the same modularity.
2. **Lone files attach**: agents should not be shown hundreds of one-file neighborhoods.
   Leiden may leave a file alone (a weakly tied hub, a high resolution). Taking those files
   in path order, each joins the group holding most of its edge weight; ties go to the group
   whose first path (before attaching) sorts first. Only lone files move, so one pass leaves
   every file that has an edge in a group of at least two.
3. **Edgeless files go by folder**: a file with no edge at all cannot be placed by
   structure, so its folder (the path's parent directory, ``""`` at the root) decides. It
   joins the group holding the most files of that same folder (ties: the group whose first
   path sorts first); the edgeless files of a folder where no file has an edge form one
   neighborhood of kind ``"folder"``, and one such file alone in its folder joins the
   group holding most files under its nearest ancestor folder instead (on django, 7 of
   the 9 folder neighborhoods were one ``__init__.py`` or one template).
   Leiden's groups are of kind ``"cluster"``. Why siblings first: on mypy's own sources
   6 of 7 folder groups were a lone, empty ``__init__.py``; joining siblings adds no
   weight, so cohesion, strengths, entry points and the label's common folder of the
   group they join do not change.
4. **Stable ids** from ``identity.assign_ids``: a group keeping more than half of an old
   neighborhood's files keeps its id.

Cross-cutting files (logging, configuration) are not split off here: they stay in the
neighborhood they attach to and are flagged when neighborhoods are described.
"""

from __future__ import annotations

import posixpath
import random
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import igraph
import structlog

from processors.neighborhoods.identity import assign_ids
from stores.projections.file_graph import FileGraph

NeighborhoodKind = Literal["cluster", "folder"]
CLUSTER: NeighborhoodKind = "cluster"
FOLDER: NeighborhoodKind = "folder"

# igraph's random number generator is process-global: one seeded run at a time.
_RNG_LOCK = threading.Lock()
LEIDEN_MAX_PASSES = 100
"""Passes of Leiden before the clustering is taken as it stands (each warm-started from
the last; a repository's recluster converges in a few)."""
log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """Leiden's knobs. ``n_iterations=-1`` runs until stable; ``beta`` is Leiden's refinement
    randomness (igraph's default); ``seed`` makes every run reproducible."""

    resolution: float = 1.0
    n_iterations: int = -1
    beta: float = 0.01
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Partition:
    """Which neighborhood each file is in (path -> id, by path) and each neighborhood's kind
    (id -> kind, by id). Every file of the clustered graph has exactly one neighborhood."""

    assignment: dict[str, str]
    kinds: dict[str, NeighborhoodKind]

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Each neighborhood id, by id, with its members in path order."""
        members: dict[str, list[str]] = {nid: [] for nid in self.kinds}
        for path, nid in self.assignment.items():
            members[nid].append(path)
        return {nid: tuple(sorted(paths)) for nid, paths in sorted(members.items())}


def weighted_pairs(graph: FileGraph) -> dict[tuple[str, str], float]:
    """The undirected edges that carry weight (> 0) between two distinct files of the graph,
    by path pair. Weights <= 0 say nothing about belonging together (and Leiden rejects them)."""
    files = set(graph.files)
    return {
        (a, b): w
        for (a, b), w in graph.undirected().items()
        if w > 0 and a != b and a in files and b in files
    }


def cluster(
    graph: FileGraph,
    previous: Partition | None = None,
    settings: ClusterSettings | None = None,
) -> Partition:
    """The neighborhoods of ``graph``, warm-started from and identified against ``previous``."""
    settings = settings or ClusterSettings()
    pairs = weighted_pairs(graph)
    connected = sorted({path for pair in pairs for path in pair})
    communities = attach_lone_files(leiden(connected, pairs, previous, settings), pairs)
    linked = set(connected)
    communities, unplaced = attach_edgeless_files(
        communities, [path for path in graph.files if path not in linked]
    )
    folders = [g for g in folder_groups(unplaced) if len(g) > 1]
    lone = [g[0] for g in folder_groups(unplaced) if len(g) == 1]
    if lone:
        communities, folders = attach_to_ancestors(communities, folders, lone)

    groups = communities + folders
    kinds = [CLUSTER] * len(communities) + [FOLDER] * len(folders)
    ids = assign_ids(groups, previous.assignment if previous else {})
    assignment = {path: nid for group, nid in zip(groups, ids, strict=True) for path in group}
    return Partition(
        assignment=dict(sorted(assignment.items())),
        kinds=dict(sorted(zip(ids, kinds, strict=True))),
    )


def leiden(
    paths: Sequence[str],
    pairs: dict[tuple[str, str], float],
    previous: Partition | None,
    settings: ClusterSettings,
) -> list[tuple[str, ...]]:
    """Leiden's communities of the sorted ``paths``, each in path order, by first path."""
    if not paths:
        return []
    index = {path: i for i, path in enumerate(paths)}
    g = igraph.Graph(n=len(paths), edges=[(index[a], index[b]) for a, b in pairs])
    weights = list(pairs.values())
    membership = initial_membership(paths, previous)
    with _RNG_LOCK:
        igraph.set_random_number_generator(random.Random(settings.seed))
        try:
            if settings.n_iterations > 0:
                found = _leiden_pass(g, weights, membership, settings, settings.n_iterations)
            else:
                # One pass per call, until a pass changes no label: igraph's own "until
                # stable" (n_iterations=-1) never ends on some graphs (a star of five
                # files warm-started as one neighborhood spun forever, deaf to signals),
                # so the loop is ours, and bounded.
                for _ in range(LEIDEN_MAX_PASSES):
                    found = _leiden_pass(g, weights, membership, settings, 1)
                    if found.membership == membership:
                        break
                    membership = found.membership
                else:
                    log.warning("leiden_passes_exhausted", files=len(paths))
        finally:
            igraph.set_random_number_generator(random)
    communities = [tuple(paths[i] for i in sorted(members)) for members in found]
    return sorted(c for c in communities if c)


def _leiden_pass(
    g: igraph.Graph,
    weights: list[float],
    membership: list[int] | None,
    settings: ClusterSettings,
    iterations: int,
) -> igraph.VertexClustering:
    return g.community_leiden(
        objective_function="modularity",
        weights=weights,
        resolution=settings.resolution,
        beta=settings.beta,
        initial_membership=membership,
        n_iterations=iterations,
    )


def initial_membership(paths: Sequence[str], previous: Partition | None) -> list[int] | None:
    """Leiden's starting labels: a file's previous neighborhood, or a label of its own if new.

    Labels are numbered 0.. in order of first appearance along the sorted paths, so the start
    depends only on the grouping, never on the ids' spelling.
    """
    if previous is None:
        return None
    labels: dict[tuple[bool, str], int] = {}
    membership = []
    for path in paths:
        old = previous.assignment.get(path)
        key = (True, old) if old is not None else (False, path)
        membership.append(labels.setdefault(key, len(labels)))
    return membership


def attach_lone_files(
    communities: Sequence[tuple[str, ...]], pairs: dict[tuple[str, str], float]
) -> list[tuple[str, ...]]:
    """Communities with every one-file community merged into its most-tied neighbor group.

    ``communities`` are sorted by first path, which is the tie-break between groups that pull
    a lone file equally. Every file here has an edge, so every lone file finds a group.
    """
    lone = [members[0] for members in communities if len(members) == 1]
    if not lone:
        return list(communities)
    where = {path: i for i, members in enumerate(communities) for path in members}
    sizes = [len(members) for members in communities]
    neighbors: dict[str, dict[str, float]] = {}
    for (a, b), weight in pairs.items():
        neighbors.setdefault(a, {})[b] = weight
        neighbors.setdefault(b, {})[a] = weight
    for path in sorted(lone):
        here = where[path]
        if sizes[here] != 1:  # another lone file joined it first
            continue
        pull: dict[int, float] = {}
        for neighbor, weight in neighbors[path].items():
            pull[where[neighbor]] = pull.get(where[neighbor], 0.0) + weight
        target = min(pull, key=lambda i: (-pull[i], i))
        where[path], sizes[here], sizes[target] = target, 0, sizes[target] + 1
    grouped: dict[int, list[str]] = {}
    for path, i in where.items():
        grouped.setdefault(i, []).append(path)
    return sorted(tuple(sorted(members)) for members in grouped.values())


def attach_edgeless_files(
    communities: Sequence[tuple[str, ...]], edgeless: Iterable[str]
) -> tuple[list[tuple[str, ...]], list[str]]:
    """Communities with each edgeless file joined to the one holding most of its folder, and
    the edgeless files whose folder has no file in any community.

    ``communities`` are sorted by first path, the tie-break between equally large shares.
    """
    shares: dict[str, dict[int, int]] = {}
    for i, members in enumerate(communities):
        for path in members:
            folder = shares.setdefault(posixpath.dirname(path), {})
            folder[i] = folder.get(i, 0) + 1
    joined: dict[int, list[str]] = {}
    unplaced = []
    for path in edgeless:
        share = shares.get(posixpath.dirname(path))
        if share:
            joined.setdefault(min(share, key=lambda i: (-share[i], i)), []).append(path)
        else:
            unplaced.append(path)
    grown = [tuple(sorted((*members, *joined.get(i, ())))) for i, members in enumerate(communities)]
    return sorted(grown), unplaced


def attach_to_ancestors(
    communities: Sequence[tuple[str, ...]],
    folders: Sequence[tuple[str, ...]],
    lone: Iterable[str],
) -> tuple[list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Each edgeless file alone in its folder joins the group holding the most files under
    its nearest ancestor folder (``django/contrib/__init__.py`` joins a ``django/contrib``
    cluster), so no folder neighborhood is a single file. Ties: the group sorting first.
    A file no group shares an ancestor with (an empty repository aside) stays alone."""
    groups = [*communities, *folders]
    under: dict[str, dict[int, int]] = {}
    for i, members in enumerate(groups):
        for path in members:
            folder = posixpath.dirname(path)
            while True:
                share = under.setdefault(folder, {})
                share[i] = share.get(i, 0) + 1
                if not folder:
                    break
                folder = posixpath.dirname(folder)
    joined: dict[int, list[str]] = {}
    alone: list[tuple[str, ...]] = []
    for path in lone:
        folder = posixpath.dirname(path)
        while True:
            found = under.get(folder)
            if found:
                counts = found
                joined.setdefault(min(counts, key=lambda i: (-counts[i], i)), []).append(path)
                break
            if not folder:
                alone.append((path,))
                break
            folder = posixpath.dirname(folder)
    grown = [tuple(sorted((*members, *joined.get(i, ())))) for i, members in enumerate(groups)]
    n = len(communities)
    return sorted(grown[:n]), sorted([*grown[n:], *alone])


def folder_groups(paths: Iterable[str]) -> list[tuple[str, ...]]:
    """Paths grouped by parent directory (``""`` at the root), each in path order, by folder."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        folders.setdefault(posixpath.dirname(path), []).append(path)
    return [tuple(sorted(members)) for _, members in sorted(folders.items())]


def modularity(graph: FileGraph, partition: Partition, resolution: float = 1.0) -> float:
    """Weighted modularity of ``partition`` over the undirected file graph (0 with no edges).

    Edgeless files carry no degree and change nothing; every file must be in ``partition``.
    """
    pairs = weighted_pairs(graph)
    if not pairs:
        return 0.0
    paths = sorted(graph.files)
    index = {path: i for i, path in enumerate(paths)}
    label = {nid: i for i, nid in enumerate(partition.kinds)}
    g = igraph.Graph(n=len(paths), edges=[(index[a], index[b]) for a, b in pairs])
    return float(
        g.modularity(
            [label[partition.assignment[path]] for path in paths],
            weights=list(pairs.values()),
            resolution=resolution,
            directed=False,
        )
    )
