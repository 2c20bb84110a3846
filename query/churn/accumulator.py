"""The open entry: the deltas folded since the last barrier, net, until a barrier closes it.

A detailed entry keeps, for every item it touched, its image at the start of the entry
(the first image seen) and compares it with the state when it is read or closed; so a
change undone inside the entry cancels out. Once it folds a file reported by a scan it
counts instead (each delta's own change, from the images before and the state after it),
and keeps no lists: a scan is a baseline, not a review.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from query.churn.cycles import Cycle, import_cycles, new_cycles
from query.churn.entry import (
    Changes,
    ChurnEntry,
    CommitInfo,
    Dependency,
    EntryKind,
    Size,
)
from query.churn.images import (
    Arc,
    EdgeKey,
    FileImage,
    Prior,
    dependency_weights,
    file_image,
)
from query.churn.neighborhood_part import NeighborhoodPart
from stores.deltas import GraphDelta
from stores.projections.graph_state import FileGraphState
from stores.repo_state import RepoState


@dataclass
class Tallies:
    files: Counter[str] = field(default_factory=Counter)
    symbols: Counter[str] = field(default_factory=Counter)
    edges_added: Counter[str] = field(default_factory=Counter)
    edges_removed: Counter[str] = field(default_factory=Counter)
    dependencies: Counter[str] = field(default_factory=Counter)


@dataclass
class Accumulator:
    first_seq: int = 0
    last_seq: int = 0
    indexed_at: float = 0.0
    counting: bool = False
    info: CommitInfo = field(default_factory=CommitInfo)
    files: dict[str, FileImage | None] = field(default_factory=dict)
    edges: dict[EdgeKey, bool] = field(default_factory=dict)
    arcs: dict[Arc, float] = field(default_factory=dict)
    tallies: Tallies = field(default_factory=Tallies)
    neighborhood: NeighborhoodPart | None = None

    @property
    def empty(self) -> bool:
        return self.first_seq == 0

    def contains(self, seq: int) -> bool:
        return not self.empty and self.first_seq <= seq

    def fold(
        self, delta: GraphDelta, prior: Prior, state: RepoState, graph: FileGraphState
    ) -> None:
        """Fold an applied delta; ``prior`` was captured before it, ``state`` and ``graph``
        are after it."""
        if self.empty:
            self.first_seq = delta.seq
        self.last_seq = delta.seq
        self.indexed_at = delta.applied_at
        if delta.commit is not None:
            c = delta.commit
            self.info = CommitInfo(c.sha, c.parents, c.subject, c.branch, c.committed_at)
        self.counting |= any(r.origin == "scan" for r in delta.files_upserted)
        if self.counting:
            self._count(prior, state, graph)
            return
        for path, image in prior.files.items():
            self.files.setdefault(path, image)
        for key, present in prior.edges.items():
            self.edges.setdefault(key, present)
        for arc, weight in prior.arcs.items():
            self.arcs.setdefault(arc, weight)

    def _count(self, prior: Prior, state: RepoState, graph: FileGraphState) -> None:
        """Tally one delta's own change; items imaged before the scan began stay net."""
        fresh = prior
        if self.files or self.edges or self.arcs:
            fresh = Prior(
                {p: i for p, i in prior.files.items() if p not in self.files},
                {k: v for k, v in prior.edges.items() if k not in self.edges},
                {a: w for a, w in prior.arcs.items() if a not in self.arcs},
                prior.edge_counts,
            )
        t = self.tallies
        files, symbols = _file_changes(fresh.files, state)
        t.files.update(added=len(files.added), removed=len(files.removed))
        t.files.update(changed=len(files.changed))
        t.symbols.update(added=len(symbols.added), removed=len(symbols.removed))
        t.symbols.update(changed=len(symbols.changed))
        if prior.edge_counts is not None:
            t.edges_added.update(prior.edge_counts[0])
            t.edges_removed.update(prior.edge_counts[1])
        else:
            added, removed = _edge_changes(fresh.edges, state)
            t.edges_added.update(k for _, _, k in added)
            t.edges_removed.update(k for _, _, k in removed)
        gained, lost = _dependency_changes(fresh.arcs, graph)
        t.dependencies.update(added=len(gained), removed=len(lost))

    def close(
        self,
        kind: EntryKind,
        entry_id: str,
        info: CommitInfo,
        state: RepoState,
        graph: FileGraphState,
        cycles: frozenset[Cycle],
    ) -> tuple[ChurnEntry, frozenset[Cycle]]:
        """The entry as of ``state``, and the import cycles after it."""
        files, symbols = _file_changes(self.files, state)
        added, removed = _edge_changes(self.edges, state)
        gained, lost = _dependency_changes(self.arcs, graph)
        t = self.tallies
        after = cycles
        if gained or lost or self.counting:
            after = import_cycles(graph.files, (arc for arc, _ in graph.weighted_arcs()))
        edges_added = Counter(k for _, _, k in added) + t.edges_added
        edges_removed = Counter(k for _, _, k in removed) + t.edges_removed
        detailed = not self.counting
        entry = ChurnEntry(
            id=entry_id,
            kind=kind,
            first_seq=self.first_seq,
            last_seq=self.last_seq,
            indexed_at=self.indexed_at,
            info=info,
            detailed=detailed,
            files=_counted(files, t.files, detailed),
            symbols=_counted(symbols, t.symbols, detailed),
            edges_added=dict(sorted(edges_added.items())),
            edges_removed=dict(sorted(edges_removed.items())),
            dependencies_added=gained if detailed else (),
            dependencies_removed=lost if detailed else (),
            dependency_counts=(
                len(gained) + t.dependencies["added"],
                len(lost) + t.dependencies["removed"],
            ),
            new_cycles=new_cycles(cycles, after),
            size=Size(
                files=len(state.files),
                symbols=sum(len(r.symbols) for r in state.files.values()),
                nodes=len(state.nodes),
                edges=len(state.edges),
            ),
            file_hashes=_hashes(files, self.files, state) if detailed else {},
            neighborhood=self.neighborhood,
        )
        return entry, after


def _file_changes(
    images: Mapping[str, FileImage | None], state: RepoState
) -> tuple[Changes, Changes]:
    files: tuple[list[str], list[str], list[str]] = ([], [], [])
    symbols: tuple[list[str], list[str], list[str]] = ([], [], [])
    for path, before in images.items():
        after = file_image(state.files.get(path))
        if before is None and after is not None:
            files[0].append(path)
        elif before is not None and after is None:
            files[1].append(path)
        elif before is not None and after is not None and before.print != after.print:
            files[2].append(path)
        old = before.symbols if before is not None else {}
        new = after.symbols if after is not None else {}
        symbols[0].extend(new.keys() - old.keys())
        symbols[1].extend(old.keys() - new.keys())
        symbols[2].extend(k for k in old.keys() & new.keys() if old[k] != new[k])
    return _changes(*files), _changes(*symbols)


def _changes(added: list[str], removed: list[str], changed: list[str]) -> Changes:
    return Changes(
        tuple(sorted(added)),
        tuple(sorted(removed)),
        tuple(sorted(changed)),
        (len(added), len(removed), len(changed)),
    )


def _counted(found: Changes, tally: Counter[str], detailed: bool) -> Changes:
    counts = (
        found.counts[0] + tally["added"],
        found.counts[1] + tally["removed"],
        found.counts[2] + tally["changed"],
    )
    if not detailed:
        return Changes(counts=counts)
    return Changes(found.added, found.removed, found.changed, counts)


def _edge_changes(
    images: Mapping[EdgeKey, bool], state: RepoState
) -> tuple[list[EdgeKey], list[EdgeKey]]:
    added = [k for k, before in images.items() if not before and k in state.edges]
    removed = [k for k, before in images.items() if before and k not in state.edges]
    return added, removed


def _dependency_changes(
    images: Mapping[Arc, float], graph: FileGraphState
) -> tuple[tuple[Dependency, ...], tuple[Dependency, ...]]:
    now = dependency_weights(graph, images.keys())
    gained = [Dependency(*arc, now[arc]) for arc, w in images.items() if w == 0 and now[arc] > 0]
    lost = [Dependency(*arc, w) for arc, w in images.items() if w > 0 and now[arc] == 0]
    return tuple(sorted(gained, key=_arc)), tuple(sorted(lost, key=_arc))


def _arc(d: Dependency) -> tuple[str, str]:
    return (d.source, d.target)


def _hashes(
    files: Changes, images: Mapping[str, FileImage | None], state: RepoState
) -> dict[str, str | None]:
    hashes: dict[str, str | None] = {}
    for path in files.added:
        hashes[path] = state.files[path].content_hash
    for path in files.removed:
        image = images[path]
        hashes[path] = image.print[0] if image is not None else None
    return hashes
