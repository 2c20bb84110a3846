"""Navigation (issue 20): definition, references, callers, callees, the shortest path
and the neighbors of a node, over the state's `Adjacency` (the pure core:
query/search/navigation.py and traversal.py). Every list is paged (``offset``,
``limit``, the true ``total``, ``next_offset``) and every answer fresh-stamped."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Literal, TypeVar

from query.navigation_schemas import (
    DefinitionOut,
    DefinitionPage,
    EdgeOut,
    EdgePage,
    HopOut,
    NeighborOut,
    NeighborPage,
    NodeOut,
    PathAnswer,
)
from query.read_model import RepoView
from query.search import navigation as nav
from query.search.adjacency import Adjacency
from query.search.traversal import MAX_HOPS, Direction, bfs, dfs, shortest_path
from query.service.base import ServiceBase
from query.service.errors import NotFound
from stores.records import EdgeRecord

T = TypeVar("T")
Relation = Literal["references", "callers", "callees"]
MATCH = ("exact", "suffix", "name")
MAX_NODES = 1000
"""Nodes a neighbors walk reaches at most (then ``capped``); pages are read from it."""


def node_out(adjacency: Adjacency, node_id: str) -> NodeOut:
    node = adjacency.nodes.get(node_id)
    if node is None:  # an edge to a node its owner has not written yet
        return NodeOut(
            id=node_id, name=node_id, kind="UNKNOWN", path=None, line_start=None, line_end=None
        )
    return NodeOut(
        id=node.id,
        name=node.name,
        kind=node.kind,
        path=node.path,
        line_start=node.line_start,
        line_end=node.line_end,
    )


def edge_out(adjacency: Adjacency, edge: EdgeRecord, incoming: bool) -> EdgeOut:
    """An edge seen from the node asked about; the call site is the edge's first line in
    the calling end's file, and its enclosing symbol the calling end (the caller for an
    incoming call, the node itself for an outgoing one)."""
    other = node_out(adjacency, edge.src if incoming else edge.dst)
    site = other if incoming else node_out(adjacency, edge.src)
    return EdgeOut(
        other=other,
        kind=edge.kind,
        confidence=edge.confidence,
        weight=edge.weight,
        site_path=site.path,
        site_line=edge.line,
        line_start=site.line_start,
        line_end=site.line_end,
    )


def defined(adjacency: Adjacency, name: str, path: str | None, repo: str) -> list[str]:
    """`navigation.definitions` of a name, or the refusal every answer gives alike."""
    found = nav.definitions(adjacency, name, path)
    if not found:
        where = f" in {path!r}" if path else ""
        raise NotFound(f"no symbol {name!r}{where} in repository {repo!r}")
    return found


def page(items: Sequence[T], offset: int, limit: int) -> tuple[list[T], int | None]:
    """One page of ``items`` and the offset of the next (None: this is the last)."""
    end = offset + limit
    return list(items[offset:end]), end if end < len(items) else None


class NavigationAnswers(ServiceBase):
    def _resolve(self, view: RepoView, name: str, path: str | None) -> tuple[str, int]:
        """The node a symbol name or a file path means (the best definition) and how
        many definitions it matched; the refusal every answer gives alike."""
        adjacency = self._adjacency(view)
        wanted = path.strip("/") if path else None
        if wanted is None:
            as_file = nav.file_node(view.state.files, name)
            if as_file is not None:
                return as_file, 1
        found = defined(adjacency, name, wanted, view.state.repo)
        return found[0], len(found)

    def definition(
        self,
        repo: str,
        name: str,
        path: str | None = None,
        offset: int = 0,
        limit: int = 20,
    ) -> DefinitionPage:
        """The symbols defining ``name`` (a name or ``Class.method``), optionally only
        those in the file ``path``: an exact qualified match first, then by path."""
        view = self.view(repo)
        adjacency = self._adjacency(view)
        wanted = path.strip("/") if path else None
        found = defined(adjacency, name, wanted, repo)
        items, next_offset = page(found, offset, limit)
        return DefinitionPage(
            repo=repo,
            name=name,
            path=wanted,
            total=len(found),
            offset=offset,
            limit=limit,
            next_offset=next_offset,
            items=[
                DefinitionOut(
                    **node_out(adjacency, n).model_dump(),
                    qualname=nav.qualname_of(n),
                    match=MATCH[nav.match_of(n, name)],
                )
                for n in items
            ],
            freshness=self.model.freshness(repo),
        )

    def references(
        self, repo: str, symbol: str, path: str | None = None, offset: int = 0, limit: int = 50
    ) -> EdgePage:
        """Every edge pointing at a symbol (or a file), but those of structure."""
        return self._edges(repo, symbol, path, "references", offset, limit)

    def callers(
        self, repo: str, symbol: str, path: str | None = None, offset: int = 0, limit: int = 50
    ) -> EdgePage:
        """The symbols calling a symbol (a file: its symbols, from other files)."""
        return self._edges(repo, symbol, path, "callers", offset, limit)

    def callees(
        self, repo: str, symbol: str, path: str | None = None, offset: int = 0, limit: int = 50
    ) -> EdgePage:
        """The symbols a symbol calls (a file: its symbols, into other files)."""
        return self._edges(repo, symbol, path, "callees", offset, limit)

    def _edges(
        self,
        repo: str,
        symbol: str,
        path: str | None,
        relation: Relation,
        offset: int,
        limit: int,
    ) -> EdgePage:
        view = self.view(repo)
        adjacency = self._adjacency(view)
        node, matches = self._resolve(view, symbol, path)
        edges: tuple[EdgeRecord, ...]
        if relation == "references":
            edges = nav.references(adjacency, node)
        elif relation == "callers":
            edges = adjacency.callers(node)
        else:
            edges = adjacency.callees(node)
        incoming = relation != "callees"
        items, next_offset = page(edges, offset, limit)
        return EdgePage(
            repo=repo,
            node=node_out(adjacency, node),
            matches=matches,
            relation=relation,
            total=len(edges),
            offset=offset,
            limit=limit,
            next_offset=next_offset,
            items=[edge_out(adjacency, e, incoming) for e in items],
            freshness=self.model.freshness(repo),
        )

    def shortest_path(
        self,
        repo: str,
        source: str,
        target: str,
        source_path: str | None = None,
        target_path: str | None = None,
        max_hops: int = MAX_HOPS,
    ) -> PathAnswer:
        """The shortest undirected dependency path between two symbols or files (at
        most ``max_hops``, through no hub or external module), each hop's edge."""
        view = self.view(repo)
        adjacency = self._adjacency(view)
        start, _ = self._resolve(view, source, source_path)
        end, _ = self._resolve(view, target, target_path)
        found = shortest_path(adjacency, start, end, max_hops=max_hops) or ()
        hops = []
        for a, b in pairwise(found):
            edge = nav.hop(adjacency, a, b)
            assert edge is not None, (a, b)  # the walk followed one
            record, forward = edge
            hops.append(
                HopOut(
                    src=a,
                    dst=b,
                    kind=record.kind,
                    confidence=record.confidence,
                    weight=record.weight,
                    forward=forward,
                )
            )
        return PathAnswer(
            repo=repo,
            source=node_out(adjacency, start),
            target=node_out(adjacency, end),
            found=bool(found),
            max_hops=max_hops,
            nodes=[node_out(adjacency, n) for n in found],
            hops=hops,
            freshness=self.model.freshness(repo),
        )

    def neighbors(
        self,
        repo: str,
        node: str,
        path: str | None = None,
        order: Literal["bfs", "dfs"] = "bfs",
        depth: int = 2,
        direction: Direction = "both",
        skip_hubs: bool = True,
        max_nodes: int = 200,
        offset: int = 0,
        limit: int = 50,
    ) -> NeighborPage:
        """The nodes around a symbol or file by dependency edges, breadth- or depth-
        first up to ``depth``, passing no hub unless ``skip_hubs`` is false."""
        view = self.view(repo)
        adjacency = self._adjacency(view)
        start, _ = self._resolve(view, node, path)
        walk = bfs if order == "bfs" else dfs
        cap = min(max_nodes, MAX_NODES)
        visits = walk(
            adjacency,
            start,
            max_depth=depth,
            max_nodes=cap,
            direction=direction,
            skip_hubs=skip_hubs,
        )
        items, next_offset = page(visits, offset, limit)
        out = []
        for visit in items:
            edge = nav.hop(adjacency, visit.via, visit.node) if visit.via else None
            out.append(
                NeighborOut(
                    **node_out(adjacency, visit.node).model_dump(),
                    depth=visit.depth,
                    via=visit.via,
                    edge_kind=edge[0].kind if edge else None,
                    confidence=edge[0].confidence if edge else None,
                    hub=adjacency.is_hub(visit.node),
                )
            )
        return NeighborPage(
            repo=repo,
            node=node_out(adjacency, start),
            order=order,
            depth=depth,
            direction=direction,
            skip_hubs=skip_hubs,
            total=len(visits),
            capped=len(visits) >= cap,
            offset=offset,
            limit=limit,
            next_offset=next_offset,
            items=out,
            freshness=self.model.freshness(repo),
        )
