"""One repository's dashboard in one answer: the neighborhood map, hubs, sizes, freshness.

The page draws the neighborhoods as a network, so the answer carries each node's
position: a circle, largest neighborhood at the top and clockwise by (-size, id), the
same picture for the same snapshot. Every list is capped and carries its true total.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

from query.neighborhood_schemas import SnapshotStamp
from query.read_model import RepoView
from query.snapshot_stamp import stamp
from stores.freshness import Freshness
from stores.neighborhoods import NeighborhoodSnapshot

MAX_NODES = 150
MAX_LINKS = 400
MAX_HUBS = 20


class MapNode(BaseModel):
    id: str
    label: str
    kind: str
    size: int
    cohesion: float
    entry_points: list[str]
    hubs: int = Field(description="members flagged as hubs")
    x: float
    y: float


class MapLink(BaseModel):
    a: str
    b: str
    weight: float


class MapHub(BaseModel):
    path: str
    neighborhood: str
    degree: int
    in_degree: int
    out_degree: int
    importance: float
    hub: bool


class Sizes(BaseModel):
    files: int
    symbols: int
    edges: int


class DashboardData(BaseModel):
    repo: str
    delta_seq: int = Field(description="the last graph delta the answer reflects")
    sizes: Sizes
    snapshot: SnapshotStamp
    neighborhoods_total: int
    neighborhoods: list[MapNode] = Field(description="largest first, with their map position")
    links_total: int
    links: list[MapLink] = Field(description="between the neighborhoods shown, by weight")
    hubs_total: int
    hubs: list[MapHub] = Field(description="files by degree, then path")
    hub_threshold: float | None
    freshness: Freshness


def circle_layout(count: int) -> list[tuple[float, float]]:
    """Points on the unit circle from the top, clockwise; one point sits in the centre."""
    if count == 1:
        return [(0.0, 0.0)]
    return [
        (
            round(math.cos(math.pi / 2 - 2 * math.pi * i / count), 4) + 0.0,
            round(math.sin(math.pi / 2 - 2 * math.pi * i / count), 4) + 0.0,
        )
        for i in range(count)
    ]


def neighborhood_map(
    snapshot: NeighborhoodSnapshot, max_nodes: int = MAX_NODES, max_links: int = MAX_LINKS
) -> tuple[list[MapNode], list[MapLink], int]:
    """The largest neighborhoods placed on a circle, the links among them, the links' total."""
    hubs: dict[str, int] = {}
    for f in snapshot.files:
        hubs[f.neighborhood] = hubs.get(f.neighborhood, 0) + f.hub
    ranked = sorted(snapshot.neighborhoods, key=lambda n: (-n.size, n.id))[:max_nodes]
    nodes = [
        MapNode(
            id=n.id,
            label=n.label,
            kind=n.kind,
            size=n.size,
            cohesion=n.cohesion,
            entry_points=list(n.entry_points),
            hubs=hubs.get(n.id, 0),
            x=x,
            y=y,
        )
        for n, (x, y) in zip(ranked, circle_layout(len(ranked)), strict=True)
    ]
    shown = {n.id for n in nodes}
    links = sorted(
        (link for link in snapshot.links if link.a in shown and link.b in shown),
        key=lambda link: (-link.weight, link.a, link.b),
    )
    return (
        nodes,
        [MapLink(a=link.a, b=link.b, weight=link.weight) for link in links[:max_links]],
        len(snapshot.links),
    )


def dashboard_data(
    view: RepoView,
    freshness: Freshness,
    *,
    max_nodes: int = MAX_NODES,
    max_links: int = MAX_LINKS,
    max_hubs: int = MAX_HUBS,
) -> DashboardData:
    state, snapshot = view.state, view.neighborhoods
    nodes: list[MapNode] = []
    links: list[MapLink] = []
    links_total = 0
    ranked_hubs: list[MapHub] = []
    if snapshot is not None:
        nodes, links, links_total = neighborhood_map(snapshot, max_nodes, max_links)
        ranked_hubs = [
            MapHub(
                path=f.path,
                neighborhood=f.neighborhood,
                degree=f.degree,
                in_degree=f.in_degree,
                out_degree=f.out_degree,
                importance=f.importance,
                hub=f.hub,
            )
            for f in sorted(snapshot.files, key=lambda f: (-f.degree, f.path))
            if f.degree > 0
        ]
    return DashboardData(
        repo=state.repo,
        delta_seq=state.seq,
        sizes=Sizes(
            files=len(state.files),
            symbols=sum(len(r.symbols) for r in state.files.values()),
            edges=len(state.edges),
        ),
        snapshot=stamp(view),
        neighborhoods_total=len(snapshot.neighborhoods) if snapshot else 0,
        neighborhoods=nodes,
        links_total=links_total,
        links=links,
        hubs_total=len(ranked_hubs),
        hubs=ranked_hubs[:max_hubs],
        hub_threshold=snapshot.hub_threshold if snapshot else None,
        freshness=freshness,
    )
