"""Folder summaries by level: what lies in each folder, and the listings by level.

Levels are heights counted bottom-up, as in the folder nodes of the graph
(stores/projections/folders.py, the Neo4j guide's levels): a folder holding only files is
level 1, a folder holding folders is one more than the highest of them, and the root ''
is the highest. So level 1 lists the leaves of the tree whatever their depth.

Each folder counts the files under it twice: ``direct`` (files in the folder itself) and
``total`` (recursively). Counted kinds, decided here once:

- classes: CLASS, STRUCT, INTERFACE, TRAIT, ENUM, the declarations that define a type
  with members (TYPE aliases, MODULE and NAMESPACE are not classes);
- functions: FUNCTION and METHOD, nested ones included (VARIABLE is neither);
- internal imports: IMPORTS edges from a file to another file (file -> file);
- external imports: IMPORTS edges from a file to an external module (file -> ext:).

Every file of the state counts, configuration files and skipped files included, so a
folder's file count is what a person listing it sees; a file without a language counts
under ``unknown``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from query.search.packed_facts import column
from stores.projections.folders import ancestors
from stores.projections.ids import folder_of
from stores.projections.page import Page, paged
from stores.records import EdgeRecord, FileRecord

CLASS_KINDS = frozenset({"CLASS", "STRUCT", "INTERFACE", "TRAIT", "ENUM"})
FUNCTION_KINDS = frozenset({"FUNCTION", "METHOD"})
UNKNOWN_LANGUAGE = "unknown"


@dataclass(frozen=True, slots=True)
class Tally:
    """Counts over a set of files (``bytes`` sums FileRecord.size)."""

    files: int = 0
    lines: int = 0
    bytes: int = 0
    classes: int = 0
    functions: int = 0
    internal_imports: int = 0
    external_imports: int = 0

    def values(self) -> tuple[int, ...]:
        return (
            self.files,
            self.lines,
            self.bytes,
            self.classes,
            self.functions,
            self.internal_imports,
            self.external_imports,
        )


@dataclass(frozen=True, slots=True)
class FileCounts:
    path: str
    folder: str
    language: str
    tally: Tally


@dataclass(frozen=True, slots=True)
class FolderSummary:
    """One folder ('' is the repository root). ``languages`` are (language, files under
    it) pairs by files descending, then name; bounded by the parser's language set."""

    path: str
    level: int
    subfolders: int
    direct: Tally
    total: Tally
    languages: tuple[tuple[str, int], ...]


def file_counts(
    files: Mapping[str, FileRecord], edges: Mapping[Any, EdgeRecord]
) -> dict[str, FileCounts]:
    """Per-file counts from a materialized state (``RepoState.files``, ``.edges``), by path."""
    internal: dict[str, int] = {}
    external: dict[str, int] = {}
    for edge in edges.values():
        if edge.kind != "IMPORTS" or not edge.src.startswith("file:"):
            continue
        if edge.dst.startswith("file:") and edge.dst != edge.src:
            internal[edge.src[5:]] = internal.get(edge.src[5:], 0) + 1
        elif edge.dst.startswith("ext:"):
            external[edge.src[5:]] = external.get(edge.src[5:], 0) + 1
    counts: dict[str, FileCounts] = {}
    for path in sorted(files):
        record = files[path]
        tally = Tally(
            files=1,
            lines=record.lines,
            bytes=record.size,
            classes=sum(1 for k in column(record.symbols, "kind") if k in CLASS_KINDS),
            functions=sum(1 for k in column(record.symbols, "kind") if k in FUNCTION_KINDS),
            internal_imports=internal.get(path, 0),
            external_imports=external.get(path, 0),
        )
        counts[path] = FileCounts(path, folder_of(path), record.language or UNKNOWN_LANGUAGE, tally)
    return counts


def folder_summaries(counts: Mapping[str, FileCounts]) -> dict[str, FolderSummary]:
    """Every folder that has a file under it, root included, in path order.

    One walk up each file's ancestors: O(files x depth), summed in plain lists (adding Tally
    values made it 1.6x slower on 1,500 files).
    """
    width = len(fields(Tally))
    levels: dict[str, int] = {}
    children: dict[str, set[str]] = {}
    direct: dict[str, list[int]] = {}
    total: dict[str, list[int]] = {}
    languages: dict[str, dict[str, int]] = {}
    for item in counts.values():
        values = item.tally.values()
        chain = ancestors(item.path)
        _accumulate(direct.setdefault(chain[0], [0] * width), values)
        for height, folder in enumerate(chain, 1):
            if levels.get(folder, 0) < height:
                levels[folder] = height
            _accumulate(total.setdefault(folder, [0] * width), values)
            spoken = languages.setdefault(folder, {})
            spoken[item.language] = spoken.get(item.language, 0) + 1
        for child, parent in itertools.pairwise(chain):
            children.setdefault(parent, set()).add(child)
    return {
        folder: FolderSummary(
            path=folder,
            level=levels[folder],
            subfolders=len(children.get(folder, ())),
            direct=Tally(*direct[folder]) if folder in direct else Tally(),
            total=Tally(*total[folder]),
            languages=tuple(sorted(languages[folder].items(), key=lambda kv: (-kv[1], kv[0]))),
        )
        for folder in sorted(levels)
    }


def _accumulate(into: list[int], values: tuple[int, ...]) -> None:
    for i, value in enumerate(values):
        into[i] += value


def folders_at_level(
    summaries: Mapping[str, FolderSummary], level: int, *, offset: int = 0, limit: int = 50
) -> Page[FolderSummary]:
    """The folders of one level, by path."""
    ordered = [summaries[f] for f in sorted(summaries) if summaries[f].level == level]
    return paged(ordered, offset, limit)


def files_at_level(
    summaries: Mapping[str, FolderSummary],
    counts: Mapping[str, FileCounts],
    level: int,
    *,
    offset: int = 0,
    limit: int = 50,
) -> Page[FileCounts]:
    """The files directly in the folders of one level, by path."""
    ordered = [
        counts[p]
        for p in sorted(counts)
        if (s := summaries.get(counts[p].folder)) is not None and s.level == level
    ]
    return paged(ordered, offset, limit)
