"""Folder summaries by level, external libraries and the repository overview on a small tree."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from query.overview.folder_summary import (
    FolderSummary,
    Tally,
    file_counts,
    files_at_level,
    folder_summaries,
    folders_at_level,
)
from query.overview.libraries import LibraryUse, external_libraries, library_name
from query.overview.overview import (
    LanguageShare,
    NeighborhoodBrief,
    RepoSizes,
    major_neighborhoods,
    repository_overview,
)
from stores.projections.file_graph import build_file_graph
from stores.projections.importance import rank_files
from stores.projections.page import paged
from stores.records import EdgeRecord, FileRecord, SymbolRecord


def sym(kind: str, qualname: str) -> SymbolRecord:
    return SymbolRecord.model_validate(
        {
            "name": qualname.rsplit(".", 1)[-1],
            "qualname": qualname,
            "kind": kind,
            "line_start": 1,
            "line_end": 2,
            "signature": qualname,
            "parent": qualname.rsplit(".", 1)[0] if "." in qualname else None,
        }
    )


def record(
    path: str, language: str | None, lines: int, size: int, *symbols: SymbolRecord, **facts: object
) -> FileRecord:
    fields: dict[str, object] = {
        "path": path,
        "language": language,
        "size": size,
        "lines": lines,
        "content_hash": "h",
        "skipped": None,
        "parse_errors": 0,
        "symbols": symbols,
        "origin": "scan",
        "commit": None,
        "working_tree": True,
        "producer": "p1",
    }
    fields.update(facts)
    return FileRecord.model_validate(fields)


def edge(src: str, dst: str, kind: str = "IMPORTS") -> EdgeRecord:
    return EdgeRecord(src=src, dst=dst, kind=kind)


FILES = {
    r.path: r
    for r in [
        record("README.md", None, 5, 50),
        record("setup.py", "python", 20, 400, sym("FUNCTION", "setup_all")),
        record("pkg/__init__.py", "python", 1, 0),
        record(
            "pkg/core.py",
            "python",
            100,
            3000,
            sym("CLASS", "Engine"),
            sym("METHOD", "Engine.run"),
            sym("METHOD", "Engine.stop"),
            sym("FUNCTION", "helper"),
            sym("VARIABLE", "LIMIT"),
            sym("TYPE", "Alias"),
        ),
        record("pkg/sub/util.py", "python", 30, 900, sym("FUNCTION", "util")),
        record(
            "pkg/sub/deep/x.go",
            "go",
            40,
            1000,
            sym("STRUCT", "Server"),
            sym("INTERFACE", "Handler"),
            sym("METHOD", "Server.Serve"),
        ),
        record("docs/guide.md", None, 10, 200, skipped="unsupported"),
        record(
            "web/app.ts",
            "typescript",
            50,
            1500,
            sym("CLASS", "App"),
            sym("ENUM", "Mode"),
            sym("FUNCTION", "main"),
        ),
    ]
}
EDGES = {
    e.key: e
    for e in [
        edge("file:pkg/core.py", "file:pkg/sub/util.py"),
        edge("file:pkg/core.py", "ext:django"),
        edge("file:pkg/core.py", "ext:requests"),
        edge("file:pkg/sub/util.py", "ext:django"),
        edge("file:setup.py", "file:pkg/core.py"),
        edge("file:setup.py", "ext:setuptools"),
        edge("file:pkg/sub/deep/x.go", "ext:github.com/go-chi/chi/v5/middleware"),
        edge("file:pkg/sub/deep/x.go", "ext:net/http"),
        edge("file:web/app.ts", "ext:@scope/pkg"),
        edge("file:web/app.ts", "ext:react"),
        edge("dir:", "file:setup.py", "CONTAINS"),
        edge("dir:pkg", "file:pkg/core.py", "CONTAINS"),
        edge("sym:setup.py:setup_all", "sym:pkg/core.py:helper", "CALLS"),
    ]
}


# -- folder summaries --------------------------------------------------------------------


def test_folder_levels_and_counts_of_a_small_tree() -> None:
    summaries = folder_summaries(file_counts(FILES, EDGES))
    assert list(summaries) == ["", "docs", "pkg", "pkg/sub", "pkg/sub/deep", "web"]
    assert summaries["pkg/sub/deep"] == FolderSummary(
        "pkg/sub/deep", 1, 0, Tally(1, 40, 1000, 2, 1, 0, 2), Tally(1, 40, 1000, 2, 1, 0, 2),
        (("go", 1),),
    )  # fmt: skip
    assert summaries["pkg/sub"] == FolderSummary(
        "pkg/sub", 2, 1, Tally(1, 30, 900, 0, 1, 0, 1), Tally(2, 70, 1900, 2, 2, 0, 3),
        (("go", 1), ("python", 1)),
    )  # fmt: skip
    assert summaries["pkg"] == FolderSummary(
        "pkg", 3, 1, Tally(2, 101, 3000, 1, 3, 1, 2), Tally(4, 171, 4900, 3, 5, 1, 5),
        (("python", 3), ("go", 1)),
    )  # fmt: skip
    assert summaries["docs"].level == summaries["web"].level == 1
    assert summaries["docs"].languages == (("unknown", 1),)
    assert summaries[""] == FolderSummary(
        "", 4, 3, Tally(2, 25, 450, 0, 1, 1, 1), Tally(8, 256, 7050, 5, 7, 2, 8),
        (("python", 4), ("unknown", 2), ("go", 1), ("typescript", 1)),
    )  # fmt: skip


def test_a_repository_of_root_files_only_is_level_one() -> None:
    files = {"a.py": record("a.py", "python", 1, 1)}
    assert folder_summaries(file_counts(files, {}))[""].level == 1


def test_folders_and_files_by_level_are_paged_with_the_true_total() -> None:
    counts = file_counts(FILES, EDGES)
    summaries = folder_summaries(counts)
    page = folders_at_level(summaries, 1, offset=1, limit=1)
    assert [s.path for s in page.items] == ["pkg/sub/deep"]
    assert (page.total, page.offset, page.limit, page.truncated) == (3, 1, 1, True)
    assert [s.path for s in folders_at_level(summaries, 1).items] == [
        "docs",
        "pkg/sub/deep",
        "web",
    ]
    leaves = files_at_level(summaries, counts, 1)
    assert [f.path for f in leaves.items] == ["docs/guide.md", "pkg/sub/deep/x.go", "web/app.ts"]
    assert (leaves.total, leaves.truncated) == (3, False)
    top = files_at_level(summaries, counts, 4, offset=1, limit=5)
    assert ([f.path for f in top.items], top.total) == (["setup.py"], 2)
    assert files_at_level(summaries, counts, 9).total == 0


def test_paging_rejects_negative_bounds() -> None:
    assert paged([1, 2, 3], 5, 2).items == ()
    with pytest.raises(ValueError):
        paged([1], -1, 2)


# -- external libraries ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "language", "library"),
    [
        ("django.db.models", "python", "django"),
        ("@scope/pkg/sub", "typescript", "@scope/pkg"),
        ("@scope/pkg", "javascript", "@scope/pkg"),
        ("lodash/fp", "tsx", "lodash"),
        ("./x", "javascript", None),
        ("../x", "typescript", None),
        ("/abs/x", "javascript", None),
        ("github.com/go-chi/chi/v5/middleware", "go", "github.com/go-chi/chi"),
        ("go.uber.org/zap/zapcore", "go", "go.uber.org/zap"),
        ("net/http", "go", "net/http"),
        ("java.util.List", "java", "java.util"),
        ("org.junit.jupiter.api.Assertions.assertEquals", "java", "org.junit.jupiter.api"),
        ("serde::de", "rust", "serde"),
        ("@scope/pkg/x", None, "@scope/pkg"),
        ("left-pad", None, "left-pad"),
    ],
)
def test_library_name_groups_modules_by_package(
    module: str, language: str | None, library: str | None
) -> None:
    assert library_name(module, language) == library


def test_external_libraries_count_distinct_importing_files() -> None:
    files = {p: record(p, "python", 1, 1) for p in ["a.py", "b.py", "c.py"]}
    edges = {
        e.key: e
        for e in [
            edge("file:a.py", "ext:django.db"),
            edge("file:a.py", "ext:django.http"),
            edge("file:b.py", "ext:django"),
            edge("file:b.py", "ext:yaml"),
            edge("file:c.py", "ext:attr"),
            edge("file:c.py", "file:a.py"),
            edge("sym:c.py:f", "ext:numpy", "USES"),
        ]
    }
    assert external_libraries(files, edges) == (
        LibraryUse("django", 2),
        LibraryUse("attr", 1),
        LibraryUse("yaml", 1),
    )


# -- the overview --------------------------------------------------------------------------

NEIGHBORHOODS = [
    NeighborhoodBrief("n1", "pkg", 3, 0.5),
    NeighborhoodBrief("n2", "web", 1, 1.0),
    NeighborhoodBrief("n3", "docs", 3, 0.9),
    NeighborhoodBrief("n4", "x", 2, 0.2),
]


def test_overview_contents() -> None:
    view = repository_overview("app-1", FILES, EDGES, neighborhoods=NEIGHBORHOODS, limit=3)
    assert view.repo == "app-1"
    assert view.sizes == RepoSizes(
        files=8,
        source_files=6,
        skipped_files=1,
        folders=6,
        lines=256,
        bytes=7050,
        symbols=14,
        symbols_by_kind=(
            ("CLASS", 2),
            ("ENUM", 1),
            ("FUNCTION", 4),
            ("INTERFACE", 1),
            ("METHOD", 3),
            ("STRUCT", 1),
            ("TYPE", 1),
            ("VARIABLE", 1),
        ),
        edges=13,
        edges_by_kind=(("CALLS", 1), ("CONTAINS", 2), ("IMPORTS", 10)),
        external_modules=7,
    )
    assert view.languages.items == (
        LanguageShare("python", 4, 151, 4300),
        LanguageShare("unknown", 2, 15, 250),
        LanguageShare("typescript", 1, 50, 1500),
    )
    assert view.languages.total == 4
    assert [n.id for n in view.neighborhoods.items] == ["n3", "n1", "n4"]
    assert view.neighborhoods.total == 3  # the singleton is not a neighborhood worth showing
    assert [(h.path, h.degree) for h in view.hubs.items] == [
        ("pkg/core.py", 2),
        ("pkg/sub/util.py", 1),
        ("setup.py", 1),
    ]
    assert (view.hubs.total, view.hub_threshold) == (3, 50.0)
    assert view.libraries.items == (
        LibraryUse("django", 2),
        LibraryUse("@scope/pkg", 1),
        LibraryUse("github.com/go-chi/chi", 1),
    )
    assert view.libraries.total == 7
    graph = build_file_graph(FILES, EDGES)
    assert view.importance.items == rank_files(graph, FILES)[:3]
    assert view.importance.total == 6
    assert view.importance.items[0].path == "pkg/sub/util.py"  # the end of the import chain


def test_overview_is_deterministic_and_reuses_what_it_is_given() -> None:
    view = repository_overview("app-1", FILES, EDGES, neighborhoods=NEIGHBORHOODS)
    reordered = repository_overview(
        "app-1",
        dict(reversed(FILES.items())),
        dict(reversed(EDGES.items())),
        neighborhoods=list(reversed(NEIGHBORHOODS)),
    )
    assert reordered == view
    graph = build_file_graph(FILES, EDGES)
    given = repository_overview(
        "app-1",
        FILES,
        EDGES,
        neighborhoods=NEIGHBORHOODS,
        graph=graph,
        ranking=rank_files(graph, FILES),
    )
    assert given == view


def test_overview_of_an_empty_repository() -> None:
    view = repository_overview("empty", {}, {}, limit=5)
    assert view.sizes.files == view.sizes.folders == view.sizes.edges == 0
    assert view.languages.total == view.hubs.total == view.importance.total == 0
    assert view.libraries.items == view.neighborhoods.items == ()


@dataclass(frozen=True)
class Cluster:
    """Any clustering result with an id, a label, a size and a cohesion will do."""

    id: str
    label: str
    size: int
    cohesion: float
    members: tuple[str, ...]


def test_major_neighborhoods_keep_four_facts_of_any_neighborhood_shape() -> None:
    clusters = [Cluster("c2", "pkg", 2, 0.5, ("a", "b")), Cluster("c1", "web", 2, 0.5, ("c", "d"))]
    page = major_neighborhoods(clusters, limit=1)
    assert page.items == (NeighborhoodBrief("c1", "web", 2, 0.5),)  # equal size and cohesion
    assert page.total == 2
