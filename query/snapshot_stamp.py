"""Which neighborhood snapshot an answer comes from, and whether the graph moved since:
the stamp every neighborhood answer and the dashboard's data carry."""

from __future__ import annotations

from query.neighborhood_schemas import SnapshotStamp
from query.read_model import RepoView


def stamp(view: RepoView) -> SnapshotStamp:
    s = view.neighborhoods
    return SnapshotStamp(
        seq=s.seq if s else None,
        graph_seq=s.graph_seq if s else None,
        indexed_commit=s.indexed_commit if s else None,
        computed_at=s.computed_at if s else None,
        recluster_ms=s.recluster_ms if s else None,
        modularity=s.modularity if s else None,
        resolution=s.resolution if s else None,
        stale=view.neighborhoods_stale,
    )
