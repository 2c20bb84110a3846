"""The repository overview: one bounded answer to "what is this repository?".

Languages, sizes, the major neighborhoods, the hubs, the most-used external libraries and
the most important files (the Neo4j guide's repository overview, with Konstruct's
neighborhoods and vortexa's hubs). Every list is a Page of at most ``limit`` items with
the true total beside it; every sort has an explicit tie-break.

Neighborhoods come in as anything with an id, a label, a size and a cohesion (the
NeighborhoodShape protocol) so this module depends on no clustering implementation; the
overview keeps only those four facts of each (NeighborhoodBrief).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from query.overview.folder_summary import UNKNOWN_LANGUAGE
from query.overview.libraries import LibraryUse, external_libraries
from query.search.packed_facts import column
from stores.projections.file_graph import FileGraph, build_file_graph
from stores.projections.folders import ancestors
from stores.projections.hubs import FileDegree, file_degrees, hub_threshold, top_hubs
from stores.projections.importance import FileImportance, rank_files
from stores.projections.page import Page, paged
from stores.records import EdgeRecord, FileRecord

OVERVIEW_LIMIT = 10
MIN_NEIGHBORHOOD_SIZE = 2


class NeighborhoodShape(Protocol):
    """What the overview reads of a neighborhood."""

    @property
    def id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def cohesion(self) -> float: ...


@dataclass(frozen=True, slots=True)
class NeighborhoodBrief:
    """A neighborhood as the overview shows it: ``size`` files, ``cohesion`` in [0, 1]."""

    id: str
    label: str
    size: int
    cohesion: float


@dataclass(frozen=True, slots=True)
class LanguageShare:
    language: str
    files: int
    lines: int
    bytes: int


@dataclass(frozen=True, slots=True)
class RepoSizes:
    """Counts over the whole state. ``source_files`` are the files of the file graph
    (parsed source, no configuration); ``skipped_files`` have no parsed facts. The by-kind
    pairs are sorted by kind and bounded by the fixed symbol and edge kind sets."""

    files: int
    source_files: int
    skipped_files: int
    folders: int
    lines: int
    bytes: int
    symbols: int
    symbols_by_kind: tuple[tuple[str, int], ...]
    edges: int
    edges_by_kind: tuple[tuple[str, int], ...]
    external_modules: int


@dataclass(frozen=True, slots=True)
class RepoOverview:
    repo: str
    sizes: RepoSizes
    languages: Page[LanguageShare]
    neighborhoods: Page[NeighborhoodBrief]
    hubs: Page[FileDegree]
    hub_threshold: float
    libraries: Page[LibraryUse]
    importance: Page[FileImportance]


def language_shares(files: Iterable[FileRecord]) -> tuple[LanguageShare, ...]:
    """Files, lines and bytes per language, by files, then bytes descending, then name."""
    totals: dict[str, tuple[int, int, int]] = {}
    for record in files:
        language = record.language or UNKNOWN_LANGUAGE
        n, lines, size = totals.get(language, (0, 0, 0))
        totals[language] = (n + 1, lines + record.lines, size + record.size)
    shares = [LanguageShare(lang, *counts) for lang, counts in totals.items()]
    shares.sort(key=lambda s: (-s.files, -s.bytes, s.language))
    return tuple(shares)


def repo_sizes(
    files: Mapping[str, FileRecord], edges: Mapping[Any, EdgeRecord], source_files: int
) -> RepoSizes:
    symbols: dict[str, int] = {}
    for record in files.values():
        for kind in column(record.symbols, "kind"):  # packed: no record built
            symbols[kind] = symbols.get(kind, 0) + 1
    kinds: dict[str, int] = {}
    externals: set[str] = set()
    for edge in edges.values():
        kinds[edge.kind] = kinds.get(edge.kind, 0) + 1
        if edge.dst.startswith("ext:"):
            externals.add(edge.dst)
    folders = {folder for path in files for folder in ancestors(path)}
    return RepoSizes(
        files=len(files),
        source_files=source_files,
        skipped_files=sum(1 for r in files.values() if r.skipped is not None),
        folders=len(folders),
        lines=sum(r.lines for r in files.values()),
        bytes=sum(r.size for r in files.values()),
        symbols=sum(symbols.values()),
        symbols_by_kind=tuple(sorted(symbols.items())),
        edges=len(edges),
        edges_by_kind=tuple(sorted(kinds.items())),
        external_modules=len(externals),
    )


def major_neighborhoods(
    neighborhoods: Iterable[NeighborhoodShape],
    limit: int = OVERVIEW_LIMIT,
    min_size: int = MIN_NEIGHBORHOOD_SIZE,
) -> Page[NeighborhoodBrief]:
    """The largest neighborhoods of at least ``min_size`` files (singletons say nothing),
    by size descending, then cohesion descending, then id; total counts those kept."""
    kept = sorted(
        (
            NeighborhoodBrief(n.id, n.label, n.size, n.cohesion)
            for n in neighborhoods
            if n.size >= min_size
        ),
        key=lambda n: (-n.size, -n.cohesion, n.id),
    )
    return paged(kept, 0, limit)


def repository_overview(
    repo: str,
    files: Mapping[str, FileRecord],
    edges: Mapping[Any, EdgeRecord],
    *,
    neighborhoods: Iterable[NeighborhoodShape] = (),
    limit: int = OVERVIEW_LIMIT,
    graph: FileGraph | None = None,
    ranking: Sequence[FileImportance] | None = None,
) -> RepoOverview:
    """The overview of a materialized state (``RepoState.files`` and ``.edges``).

    ``graph`` and ``ranking`` may be passed when the caller already holds them (both are
    functions of the same state); they are computed otherwise. ``ranking`` must be sorted
    as ``rank_files`` sorts it.
    """
    if graph is None:
        graph = build_file_graph(
            files if isinstance(files, dict) else dict(files),
            edges if isinstance(edges, dict) else dict(edges),
        )
    ranking = ranking if ranking is not None else rank_files(graph, files)
    degrees = file_degrees(graph)
    return RepoOverview(
        repo=repo,
        sizes=repo_sizes(files, edges, len(graph.files)),
        languages=paged(language_shares(files.values()), 0, limit),
        neighborhoods=major_neighborhoods(neighborhoods, limit),
        hubs=top_hubs(degrees.values(), limit),
        hub_threshold=hub_threshold([d.degree for d in degrees.values()]),
        libraries=paged(external_libraries(files, edges), 0, limit),
        importance=paged(ranking, 0, limit),
    )
