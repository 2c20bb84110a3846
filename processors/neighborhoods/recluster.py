"""One recluster of a repository: its file graph in, the next snapshot out.

Pure: the reclusterer (the stream side) calls it with the file graph folded from the
graph deltas and the repository's previous snapshot, which seeds the warm start and
the stable ids and is what the published changes are measured against.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from processors.neighborhoods import changes as ch
from processors.neighborhoods.clustering import ClusterSettings, Partition, cluster, modularity
from processors.neighborhoods.neighborhood import Neighborhood, describe
from stores import neighborhoods as wire
from stores.neighborhoods import NeighborhoodSnapshot
from stores.projections.graph_state import FileGraphState
from stores.projections.hubs import file_degrees, hub_threshold
from stores.projections.importance import rank

_CHANGE_RECORDS: dict[str, type[Any]] = {
    "created": wire.Created,
    "removed": wire.Removed,
    "split": wire.Split,
    "merged": wire.Merged,
    "files_moved": wire.FilesMoved,
    "cohesion_changed": wire.CohesionChanged,
}


@dataclass(frozen=True, slots=True)
class ReclusterSettings:
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    cohesion_threshold: float = ch.COHESION_THRESHOLD


def previous_partition(snapshot: NeighborhoodSnapshot) -> Partition:
    return Partition(
        snapshot.membership(),
        {n.id: n.kind for n in snapshot.neighborhoods},
    )


def previous_neighborhoods(snapshot: NeighborhoodSnapshot) -> tuple[Neighborhood, ...]:
    """The snapshot's neighborhoods as `diff_neighborhoods` compares them."""
    members: dict[str, list[str]] = {}
    for standing in snapshot.files:
        members.setdefault(standing.neighborhood, []).append(standing.path)
    return tuple(
        Neighborhood(
            id=n.id,
            kind=n.kind,
            label=n.label,
            size=n.size,
            members=tuple(sorted(members.get(n.id, ()))),
            cohesion=n.cohesion,
            entry_points=n.entry_points,
            memberships=(),
        )
        for n in snapshot.neighborhoods
    )


def recluster(
    state: FileGraphState,
    previous: NeighborhoodSnapshot | None,
    settings: ReclusterSettings,
    *,
    now: float,
) -> NeighborhoodSnapshot:
    started = time.perf_counter()
    graph = state.graph()
    partition = cluster(graph, previous_partition(previous) if previous else None, settings.cluster)
    described = describe(graph, partition)
    changes = ch.diff_neighborhoods(
        previous_neighborhoods(previous) if previous else (),
        described,
        cohesion_threshold=settings.cohesion_threshold,
    )
    ranking = {f.path: f for f in rank(graph, state.files)}
    degrees = file_degrees(graph)
    pairs = graph.undirected()
    where = partition.assignment
    links: dict[tuple[str, str], float] = {}
    inside: dict[str, float] = {}
    across: dict[str, float] = {}
    for (a, b), weight in pairs.items():
        na, nb = where[a], where[b]
        if na == nb:
            inside[na] = inside.get(na, 0.0) + weight
            continue
        across[na] = across.get(na, 0.0) + weight
        across[nb] = across.get(nb, 0.0) + weight
        key = (na, nb) if na < nb else (nb, na)
        links[key] = links.get(key, 0.0) + weight
    standings = {m.path: (n.id, m) for n in described for m in n.memberships}
    files = []
    for path in graph.files:
        nid, membership = standings[path]
        degree, importance = degrees[path], ranking[path]
        files.append(
            wire.FileStanding(
                path=path,
                neighborhood=nid,
                strength=round(membership.strength, 6),
                cross_cutting=membership.cross_cutting,
                degree=degree.degree,
                in_degree=degree.in_degree,
                out_degree=degree.out_degree,
                weighted_in=degree.weighted_in,
                hub=degree.hub,
                expansion_hub=degree.expansion_hub,
                pagerank=round(importance.pagerank, 9),
                semantic=round(importance.semantic, 6),
                importance=round(importance.score, 6),
            )
        )
    return NeighborhoodSnapshot(
        repo=state.repo,
        seq=previous.seq + 1 if previous else 1,
        graph_seq=state.seq,
        indexed_commit=state.indexed_commit,
        computed_at=now,
        recluster_ms=round((time.perf_counter() - started) * 1000, 3),
        resolution=settings.cluster.resolution,
        modularity=round(modularity(graph, partition, settings.cluster.resolution), 6),
        hub_threshold=hub_threshold([d.degree for d in degrees.values()]),
        neighborhoods=tuple(
            wire.NeighborhoodRecord(
                id=n.id,
                kind=n.kind,
                label=n.label,
                size=n.size,
                cohesion=round(n.cohesion, 6),
                entry_points=n.entry_points,
                internal_weight=inside.get(n.id, 0.0),
                external_weight=across.get(n.id, 0.0),
            )
            for n in described
        ),
        files=tuple(files),
        links=tuple(
            wire.NeighborhoodLink(a=a, b=b, weight=w) for (a, b), w in sorted(links.items())
        ),
        changes=tuple(_CHANGE_RECORDS[c.kind](**_fields(c)) for c in changes),
    )


def _fields(change: ch.NeighborhoodChange) -> dict[str, Any]:
    return {k: getattr(change, k) for k in change.__slots__ if k != "kind"}  # type: ignore[union-attr]


def same_picture(a: NeighborhoodSnapshot, b: NeighborhoodSnapshot) -> bool:
    """Nothing a reader sees differs but the numbering and timing."""
    skip = {"seq", "graph_seq", "computed_at", "recluster_ms", "changes", "indexed_commit"}
    return a.model_dump(exclude=skip) == b.model_dump(exclude=skip)
