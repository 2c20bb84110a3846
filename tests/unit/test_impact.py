"""Impact analysis as a plain `QueryService` method (issue 20), on a small hand-built
state whose every edge and confidence is written out below: a diff's lines mapped onto
symbols, dependents direct and transitive with the weakest confidence on their path,
hubs and guesses listed but not walked through, tests by graph, by name and by calls,
neighborhoods and entry points, the risk level by its rule, the token budget, and the
refusals."""

from __future__ import annotations

import pytest

from query.read_model import ReadModel
from query.search.impact_risk import RULE
from query.service import BadRequest, InvalidArguments, NotFound, QueryService
from stores.records import EdgeRecord, FileRecord, NodeRecord, SymbolRecord
from tests.factories import graph_delta, neighborhood_snapshot

SPOKES = 51
"""Symbols calling ``Base``: 52 connections, above the hub floor (50)."""

# path -> (lines, ((qualname, kind, start, end, exported), ...))
FILES: dict[str, tuple[int, tuple[tuple[str, str, int, int, bool], ...]]] = {
    "lib/core.py": (
        14,
        (
            ("Core", "CLASS", 1, 10, True),
            ("Core.run", "METHOD", 3, 6, True),
            ("Core.stop", "METHOD", 8, 10, True),
        ),
    ),
    "lib/util.py": (6, (("helper", "FUNCTION", 1, 3, True), ("_private", "FUNCTION", 5, 6, False))),
    "app/service.py": (5, (("serve", "FUNCTION", 3, 5, True),)),
    "app/api.py": (6, (("handler", "FUNCTION", 1, 4, True), ("route", "FUNCTION", 5, 6, True))),
    "app/base.py": (3, (("Base", "CLASS", 1, 3, True),)),
    "web/view.py": (2, (("render", "FUNCTION", 1, 2, True),)),
    "tests/test_service.py": (4, (("test_serve", "FUNCTION", 3, 4, True),)),
    "tests/test_core.py": (2, (("test_run", "FUNCTION", 1, 2, True),)),
    "tests/check_util.py": (2, (("test_helper", "FUNCTION", 1, 2, True),)),
    "tests/test_view.py": (2, (("test_render", "FUNCTION", 1, 2, True),)),
    **{f"spoke/s{i:02}.py": (2, (("f", "FUNCTION", 1, 2, True),)) for i in range(SPOKES)},
}


def calls(src: str, dst: str, confidence: str) -> EdgeRecord:
    return EdgeRecord(src=f"sym:{src}", dst=f"sym:{dst}", kind="CALLS", confidence=confidence)  # type: ignore[arg-type]


EDGES = (
    calls("app/service.py:serve", "lib/core.py:Core.run", "import"),
    calls("lib/core.py:Core.stop", "lib/core.py:Core.run", "same_file"),
    calls("app/api.py:handler", "app/service.py:serve", "same_folder"),
    calls("app/api.py:handler", "lib/core.py:Core.stop", "name_match"),
    calls("web/view.py:render", "app/api.py:handler", "import"),
    calls("tests/test_service.py:test_serve", "app/service.py:serve", "import"),
    calls("app/base.py:Base", "lib/util.py:helper", "import"),
    *(calls(f"spoke/s{i:02}.py:f", "app/base.py:Base", "import") for i in range(SPOKES)),
    EdgeRecord(
        src="file:app/service.py", dst="file:lib/core.py", kind="IMPORTS", confidence="import"
    ),
    EdgeRecord(
        src="file:tests/test_service.py", dst="file:app/service.py", kind="TESTS", weight=2.0
    ),
    EdgeRecord(src="file:tests/check_util.py", dst="file:lib/util.py", kind="TESTS"),
)
GROUPS = {
    "n-lib": ("lib/core.py", "lib/util.py"),
    "n-app": ("app/base.py", "app/service.py", "app/api.py"),
    "n-web": ("web/view.py",),
}


def records() -> tuple[list[FileRecord], list[NodeRecord]]:
    files, nodes = [], []
    for path, (lines, symbols) in FILES.items():
        files.append(
            FileRecord(
                path=path,
                language="python",
                size=10 * lines,
                lines=lines,
                content_hash=f"h-{path}",
                skipped=None,
                parse_errors=0,
                symbols=tuple(
                    SymbolRecord(
                        name=q.rsplit(".", 1)[-1],
                        qualname=q,
                        kind=kind,  # type: ignore[arg-type]
                        line_start=a,
                        line_end=b,
                        signature=f"def {q}():",
                        exported=exported,
                    )
                    for q, kind, a, b, exported in symbols
                ),
                origin="scan",
                commit="c1",
                working_tree=False,
                producer="p1",
            )
        )
        name = path.rsplit("/", 1)[-1]
        nodes.append(
            NodeRecord(
                id=f"file:{path}", kind="FILE", name=name, path=path, line_start=1, line_end=lines
            )
        )
        nodes += [
            NodeRecord(
                id=f"sym:{path}:{q}",
                kind=kind,
                name=q.rsplit(".", 1)[-1],
                path=path,
                line_start=a,
                line_end=b,
            )
            for q, kind, a, b, _ in symbols
        ]
    return files, nodes


@pytest.fixture(scope="module")
def service() -> QueryService:
    model = ReadModel(clock=lambda: 1002.0)
    files, nodes = records()
    model.apply_delta(
        graph_delta(
            "shop",
            1,
            files_upserted=tuple(files),
            nodes_upserted=tuple(nodes),
            edges_upserted=EDGES,
            indexed_commit="c1",
            barrier="scan_completed",
        )
    )
    model.apply_snapshot(neighborhood_snapshot("shop", 1, 1, GROUPS))
    model.apply_delta(
        graph_delta("bare", 1, files_upserted=tuple(files[:1]), nodes_upserted=tuple(nodes[:4]))
    )
    return QueryService(model)


def hunk(path: str, header: str, *body: str) -> str:
    return f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n{header}\n" + "".join(
        line + "\n" for line in body
    )


RUN = hunk(
    "lib/core.py",
    "@@ -4,3 +4,3 @@ class Core:",
    "     a = 1",
    "-    b = 2",
    "+    b = 3",
    "     c = 4",
)


def test_a_diff_inside_a_method_reaches_its_callers_and_theirs(service: QueryService) -> None:
    answer = service.impact("shop", diff=RUN)
    assert [
        (f.path, f.status, f.lines, f.whole, f.module_level, f.indexed)
        for f in answer.changed_files
    ] == [("lib/core.py", "modified", ["L5"], False, False, True)]
    # Line 5 lies in Core (1-10) and Core.run (3-6): the innermost one changed.
    assert [(s.id, s.line_start, s.line_end, s.exported) for s in answer.changed_symbols] == [
        ("sym:lib/core.py:Core.run", 3, 6, True)
    ]
    assert [
        (d.id, d.hop, d.confidence, d.via, d.edge_kind, d.neighborhood) for d in answer.dependents
    ] == [
        ("sym:app/service.py:serve", 1, "import", "sym:lib/core.py:Core.run", "CALLS", "n-app"),
        ("sym:lib/core.py:Core.stop", 1, "same_file", "sym:lib/core.py:Core.run", "CALLS", "n-lib"),
        # Two shortest paths: through serve (same_folder) beats through Core.stop (a guess).
        ("sym:app/api.py:handler", 2, "same_folder", "sym:app/service.py:serve", "CALLS", "n-app"),
    ]
    assert (answer.dependents_total, answer.dependents_capped) == (3, False)
    assert [(t.path, t.link, t.hop, t.of) for t in answer.tests] == [
        ("tests/test_core.py", "name", 0, "lib/core.py"),
        ("tests/test_service.py", "graph", 1, "app/service.py"),
    ]
    assert [
        (n.id, n.changed, n.dependents, n.entry_points, n.entry_points_touched)
        for n in answer.neighborhoods
    ] == [
        ("n-lib", 1, 0, ["lib/core.py", "lib/util.py"], ["lib/core.py"]),
        ("n-app", 0, 2, ["app/base.py", "app/service.py"], ["app/service.py"]),
    ]
    risk = answer.risk
    assert (risk.level, risk.direct, risk.transitive, risk.other_neighborhoods, risk.untested) == (
        "medium",
        2,
        1,
        2,
        [],
    )
    assert risk.reasons == [
        "2 direct and 1 transitive dependents",
        "2 dependents in 1 other neighborhood",
    ]
    assert risk.rule == RULE
    assert (answer.left_out, answer.budget_tokens) == ({}, 4000)
    assert answer.freshness == service.model.freshness("shop")
    assert answer.freshness.indexed_commit == "c1"


def test_depth_bounds_the_walk_and_a_test_calling_the_change_is_a_test(
    service: QueryService,
) -> None:
    near = service.impact("shop", diff=RUN, depth=1)
    assert [(d.id, d.hop) for d in near.dependents] == [
        ("sym:app/service.py:serve", 1),
        ("sym:lib/core.py:Core.stop", 1),
    ]
    far = service.impact("shop", symbols=["Core.run"], depth=3)
    assert [(d.id, d.hop, d.confidence) for d in far.dependents][2:] == [
        ("sym:app/api.py:handler", 2, "same_folder"),
        ("sym:web/view.py:render", 3, "same_folder"),  # the weakest on its path
    ]
    # test_serve calls serve: a test of the change at hop 2, graph-linked at hop 1 first.
    assert [(t.path, t.link, t.hop) for t in far.tests] == [
        ("tests/test_core.py", "name", 0),
        ("tests/test_service.py", "graph", 1),
        ("tests/test_view.py", "name", 3),
    ]


def test_a_guess_and_a_hub_are_listed_but_not_walked_through(service: QueryService) -> None:
    guessed = service.impact("shop", symbols=["lib/core.py:Core.stop"])
    # handler calls Core.stop by name only: render, which calls handler, is not reached.
    assert [(d.id, d.hop, d.confidence) for d in guessed.dependents] == [
        ("sym:app/api.py:handler", 1, "name_match")
    ]
    hub = service.impact("shop", symbols=["helper"])
    assert [(d.id, d.hop, d.hub) for d in hub.dependents] == [("sym:app/base.py:Base", 1, True)]
    assert [(t.path, t.link, t.hop) for t in hub.tests] == [("tests/check_util.py", "graph", 0)]


def test_module_level_lines_and_the_top_of_a_file_count_for_the_file(service: QueryService) -> None:
    diff = hunk("lib/core.py", "@@ -0,0 +1 @@", "+import os") + (
        "@@ -2,1 +3,1 @@\n-    x = 1\n+    x = 2\n@@ -13,1 +14,1 @@\n-VERSION = 1\n+VERSION = 2\n"
    )
    answer = service.impact("shop", diff=diff)
    (changed,) = answer.changed_files
    assert (changed.lines, changed.module_level) == (["L0", "L2", "L13"], True)
    assert [s.id for s in answer.changed_symbols] == ["sym:lib/core.py:Core"]  # line 2
    assert [(d.id, d.hop, d.edge_kind, d.confidence) for d in answer.dependents] == [
        ("file:app/service.py", 1, "IMPORTS", "import")
    ]
    assert [(t.path, t.link, t.hop) for t in answer.tests] == [
        ("tests/test_core.py", "name", 0),
        ("tests/test_service.py", "graph", 1),
    ]


def test_new_deleted_and_listed_files(service: QueryService) -> None:
    new = (
        "diff --git a/lib/new.py b/lib/new.py\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/lib/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    )
    added = service.impact("shop", diff=new)
    assert [(f.path, f.status, f.indexed, f.note) for f in added.changed_files] == [
        ("lib/new.py", "added", False, "new file: nothing indexed depends on it")
    ]
    assert (added.dependents, added.tests, added.risk.level) == ([], [], "low")
    gone = (
        "diff --git a/lib/util.py b/lib/util.py\ndeleted file mode 100644\n--- a/lib/util.py\n"
        "+++ /dev/null\n@@ -1,2 +0,0 @@\n-def helper():\n-    return 1\n"
    )
    deleted = service.impact("shop", diff=gone)
    assert [(f.path, f.status, f.whole) for f in deleted.changed_files] == [
        ("lib/util.py", "deleted", True)
    ]
    assert [(d.id, d.changed) for d in deleted.dependents] == [
        ("sym:app/base.py:Base", "sym:lib/util.py:helper")
    ]
    assert deleted.risk.level == "high"
    assert deleted.risk.reasons[-1] == "deleted or renamed with dependents: lib/util.py"
    listed = service.impact("shop", files=["./lib/util.py", "lib/util.py"])
    assert [(f.path, f.whole, f.lines) for f in listed.changed_files] == [("lib/util.py", True, [])]
    assert [d.id for d in listed.dependents] == ["sym:app/base.py:Base"]


@pytest.mark.parametrize(
    ("symbols", "level", "untested", "reasons"),
    [
        (["lib/util.py:_private"], "low", [], ["0 direct and 0 transitive dependents"]),
        (
            ["route"],
            "medium",
            ["sym:app/api.py:route"],
            [
                "0 direct and 0 transitive dependents",
                "1 public change no test reaches: sym:app/api.py:route",
            ],
        ),
        # render depends on handler, and tests/test_view.py is named after render's file.
        (
            ["handler"],
            "medium",
            [],
            ["1 direct and 0 transitive dependents", "1 dependent in 1 other neighborhood"],
        ),
        (
            ["app/api.py:route", "handler"],
            "high",
            ["sym:app/api.py:route"],
            [
                "1 direct and 0 transitive dependents",
                "1 dependent in 1 other neighborhood",
                "1 public change no test reaches: sym:app/api.py:route",
            ],
        ),
    ],
)
def test_the_risk_level_follows_its_rule(
    service: QueryService, symbols: list[str], level: str, untested: list[str], reasons: list[str]
) -> None:
    risk = service.impact("shop", symbols=symbols).risk
    assert (risk.level, risk.untested, risk.reasons) == (level, untested, reasons)


def test_the_budget_trims_the_longest_list_from_its_end_and_says_how_much(
    service: QueryService,
) -> None:
    whole = service.impact("shop", symbols=["Base", "Core.run", "Core.stop"], limit=200)
    # The spokes, serve, and handler (by a guess at hop 1: render, past it, is not reached).
    assert (len(whole.dependents), len(whole.tests), whole.left_out) == (SPOKES + 2, 2, {})
    limited = service.impact("shop", symbols=["Base", "Core.run", "Core.stop"], limit=10)
    assert (len(limited.dependents), limited.dependents_total) == (10, SPOKES + 2)
    assert limited.left_out == {"dependents": SPOKES + 2 - 10}
    small = service.impact(
        "shop", symbols=["Base", "Core.run", "Core.stop"], budget_tokens=1500, limit=200
    )
    assert small.tokens <= 1500 < whole.tokens
    assert (len(small.dependents), small.tokens, whole.tokens) == (14, 1427, 3877)
    assert [d.id for d in small.dependents] == [d.id for d in whole.dependents][
        : len(small.dependents)
    ]
    assert small.left_out == {"dependents": SPOKES + 2 - len(small.dependents)}
    assert small.dependents_total == SPOKES + 2
    tiny = service.impact(
        "shop", symbols=["Base", "Core.run", "Core.stop"], budget_tokens=200, limit=200
    )
    # Down to one item a list, the longest first: then over budget, as little as it can be.
    assert [len(tiny.changed_symbols), len(tiny.dependents), len(tiny.tests)] == [1, 1, 1]
    assert tiny.left_out == {
        "dependents": SPOKES + 1,
        "tests": 1,
        "changed_symbols": 2,
        "neighborhoods": 1,
        "changed_files": 1,
    }


def test_without_neighborhoods_the_answer_says_none(service: QueryService) -> None:
    answer = service.impact("bare", symbols=["Core.run"])
    assert (answer.neighborhoods, answer.risk.other_neighborhoods) == ([], 0)


@pytest.mark.parametrize(
    ("arguments", "refusal", "message"),
    [
        ({}, InvalidArguments, "give exactly one of diff, files, symbols"),
        ({"files": ["lib/core.py"], "symbols": ["x"]}, InvalidArguments, "give exactly one of"),
        ({"diff": "hello"}, BadRequest, "malformed diff: no file in the diff"),
        (
            {"diff": "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n"},
            BadRequest,
            "malformed diff: line 3: hunk @@ -1,3 +1,3 @@ ends early: 2 old and 2 new lines "
            "missing",
        ),
        (
            {
                "diff": hunk("../etc/passwd", "@@ -1 +1 @@", "-a", "+b")
                + hunk("nope.py", "@@ -1 +1 @@", "-a", "+b")
            },
            BadRequest,
            "paths outside the repository: '../etc/passwd'; files the index of 'shop' does not "
            "hold: 'nope.py' (see /repositories/shop/files)",
        ),
        (
            {"files": ["/etc/passwd", "lib/../../x"]},
            BadRequest,
            "paths outside the repository: '/etc/passwd', 'lib/../../x'",
        ),
        ({"symbols": ["nothing"]}, NotFound, "no symbol 'nothing' in repository 'shop'"),
        (
            {"symbols": ["lib/util.py:run"]},
            NotFound,
            "no symbol 'run' in 'lib/util.py' in repository 'shop'",
        ),
    ],
)
def test_refusals_name_the_problem(
    service: QueryService, arguments: dict[str, object], refusal: type[Exception], message: str
) -> None:
    with pytest.raises(refusal) as refused:
        service.impact("shop", **arguments)  # type: ignore[arg-type]
    assert str(refused.value).startswith(message)
    with pytest.raises(NotFound, match=r"unknown repository 'nope'; see /repositories"):
        service.impact("nope", files=["x.py"])
