"""Patching a dependent's edges (build.file_patch) equals resolving it afresh.

A file whose record did not change is re-edged from the answers that changed only: a
dependent losing and regaining what it imports, a test file's TESTS edges, a
module-level reference and a base class. Each expected delta is spelled out, and each
state is also compared with a fresh build.
"""

from __future__ import annotations

from processors.graph.build import file_patch, file_subgraph
from processors.graph.lookup import Lookup, RepoFacts
from processors.graph.tally import file_edge, tally_edge
from processors.indexer import RepoIndex
from stores.records import EdgeRecord
from tests.factories import Stamp

FILES = {
    "pkg/__init__.py": "",
    "pkg/util.py": "def helper():\n    return 1\n\n\nclass Base:\n    pass\n",
    "pkg/app.py": (
        "from pkg.util import helper, Base\n\nhelper()\n\n\n"
        "def run():\n    return helper()\n\n\nclass App(Base):\n    pass\n"
    ),
    "tests/test_app.py": (
        "from pkg.app import run\nfrom pkg import util\n\n\n"
        "def test_run():\n    run()\n    util.helper()\n"
    ),
}
APP, TEST = "file:pkg/app.py", "file:tests/test_app.py"
HELPER, BASE = "sym:pkg/util.py:helper", "sym:pkg/util.py:Base"
RUN, TEST_RUN = "sym:pkg/app.py:run", "sym:tests/test_app.py:test_run"
APP_CLASS = "sym:pkg/app.py:App"
DEPENDENTS = ("pkg/app.py", "tests/test_app.py")
# (src, dst, kind, weight, confidence): app.py imports util.py for 4 structural
# references (helper() at module level and in run, Base as a base and as a type)
UTIL_EDGES = {
    (APP, "file:pkg/util.py", "IMPORTS", 4.0, "import"),
    (APP, HELPER, "CALLS", 1.0, "import"),
    (RUN, HELPER, "CALLS", 1.0, "import"),
    (APP_CLASS, BASE, "EXTENDS", 1.0, "import"),
    (APP_CLASS, BASE, "USES", 1.0, "import"),
    (TEST, "file:pkg/util.py", "IMPORTS", 1.0, "import"),
    (TEST, "file:pkg/util.py", "TESTS", 2.0, "structural"),  # the import and the call
    (TEST_RUN, HELPER, "CALLS", 1.0, "import"),
    (TEST_RUN, HELPER, "TESTS", 1.0, "import"),
}
# without util.py: `pkg.util` is nowhere (an external `pkg`), `from pkg import util`
# a member of pkg/__init__.py
NO_UTIL_EDGES = {
    (APP, "ext:pkg", "IMPORTS", 1.0, "structural"),
    (TEST, "file:pkg/__init__.py", "IMPORTS", 1.0, "import"),
    (TEST, "file:pkg/__init__.py", "TESTS", 1.0, "structural"),
}


def scanned(files: dict[str, str]) -> tuple[RepoIndex, Stamp]:
    index, s = RepoIndex("r"), Stamp(repo="r", producer="p")
    s.claimed(index)
    for path, text in sorted(files.items()):
        index.handle(s.changed(path, text, origin="scan"), now=0.0)
    index.handle(s.scan_completed(), now=0.0)
    return index, s


def graph(index: RepoIndex) -> tuple[list[str], list[str]]:
    state = index.state
    return (
        sorted(n.model_dump_json() for n in state.nodes.values()),
        sorted(e.model_dump_json() for e in state.edges.values()),
    )


def of_dependents(edges: set[tuple[str, str, str, float, str]]) -> set[tuple[str, ...]]:
    return {e[:3] for e in edges if e[0].split(":")[1] in DEPENDENTS}


def test_dependents_lose_and_regain_an_import_target_exactly() -> None:
    index, s = scanned(FILES)
    files = dict(FILES)
    deleted = index.handle(s.deleted("pkg/util.py"), now=1.0)
    assert deleted is not None
    del files["pkg/util.py"]
    upserted = {(e.src, e.dst, e.kind, e.weight, e.confidence) for e in deleted.edges_upserted}
    assert upserted == NO_UTIL_EDGES
    assert {k for k in deleted.edges_removed if k[0].split(":")[1] in DEPENDENTS} == (
        of_dependents(UTIL_EDGES)
    )
    assert graph(index) == graph(scanned(files)[0])

    files["pkg/util.py"] = FILES["pkg/util.py"]
    back = index.handle(s.changed("pkg/util.py", files["pkg/util.py"]), now=2.0)
    assert back is not None
    regained = {
        (e.src, e.dst, e.kind, e.weight, e.confidence)
        for e in back.edges_upserted
        if e.src.split(":")[1] in DEPENDENTS
    }
    assert regained == UTIL_EDGES
    assert set(back.edges_removed) == of_dependents(NO_UTIL_EDGES)
    assert graph(index) == graph(scanned(files)[0])


def test_a_patched_file_equals_its_fresh_resolution() -> None:
    """file_patch on the facts after util.py's deletion, against file_subgraph there."""
    facts = RepoFacts()
    index, _ = scanned(FILES)
    for path in FILES:
        facts.replace(path, index.state.files[path])
    before = {p: file_subgraph(facts.files[p], Lookup(facts)) for p in DEPENDENTS}
    dirty = facts.replace("pkg/util.py", None)
    effective = {}
    for path in DEPENDENTS:
        _, old_edges, answers = before[path]
        assert answers is not None
        lookup = Lookup(facts)
        changes, patched = file_patch(facts.files[path], lookup, {}, answers, dirty)
        edges = dict(old_edges)
        for key, edge in changes.items():
            if edge is None:
                edges.pop(key, None)
            else:
                edges[key] = edge
        fresh_lookup = Lookup(facts)
        _, fresh, fresh_answers = file_subgraph(facts.files[path], fresh_lookup)
        assert edges == fresh, path
        assert fresh_answers is not None and fresh_answers.tally is not None
        assert patched.tally is not None
        assert patched.tally.tally == fresh_answers.tally.tally
        assert patched.tally.into == fresh_answers.tally.into
        assert patched.tally.tested == fresh_answers.tally.tested
        asked_before = answers.base.union(*(a.keys for a in answers.answers.values()))
        assert fresh_lookup.keys <= lookup.keys | asked_before, "recorded keys: a superset"
        effective.update({k: e for k, e in changes.items() if old_edges.get(k) != e})
    # pkg/app.py's questions all changed answers, tests/test_app.py's call through util
    assert {(k, e.weight if e else None) for k, e in effective.items()} == {
        ((APP, "file:pkg/util.py", "IMPORTS"), None),
        ((APP, "ext:pkg", "IMPORTS"), 1.0),
        ((APP, HELPER, "CALLS"), None),
        ((RUN, HELPER, "CALLS"), None),
        ((APP_CLASS, BASE, "EXTENDS"), None),
        ((APP_CLASS, BASE, "USES"), None),
        ((TEST, "file:pkg/util.py", "IMPORTS"), None),
        ((TEST, "file:pkg/util.py", "TESTS"), None),
        ((TEST, "file:pkg/__init__.py", "IMPORTS"), 1.0),
        ((TEST, "file:pkg/__init__.py", "TESTS"), 1.0),
        ((TEST_RUN, HELPER, "CALLS"), None),
        ((TEST_RUN, HELPER, "TESTS"), None),
    }


def test_a_body_edit_patches_the_references_it_adds() -> None:
    """A call added at module level (the signatures alike): one CALLS edge more, the
    IMPORTS weight up by one, nothing else of the file."""
    index, s = scanned(FILES)
    files = dict(FILES, **{"pkg/app.py": FILES["pkg/app.py"] + "\nhelper()\nrun()\n"})
    delta = index.handle(s.changed("pkg/app.py", files["pkg/app.py"]), now=1.0)
    assert delta is not None
    assert {(e.src, e.dst, e.kind, e.weight) for e in delta.edges_upserted} == {
        (APP, HELPER, "CALLS", 2.0),
        (APP, "file:pkg/util.py", "IMPORTS", 5.0),
        (APP, RUN, "CALLS", 1.0),  # same_file: no file edge
    }
    assert delta.edges_removed == ()
    assert graph(index) == graph(scanned(files)[0])


def test_an_edge_built_from_a_tally_sums_its_counts_at_the_strongest_confidence() -> None:
    key = (APP, HELPER, "CALLS")
    packed = (2 << 64) + (3 << 32) + 7  # 3 by import, 2 in the same file, first at line 7
    built = tally_edge(key, packed)
    validated = EdgeRecord(
        src=APP, dst=HELPER, kind="CALLS", weight=5.0, confidence="import", line=7
    )
    assert built == validated and validated == built
    assert hash(built) == hash(validated)
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_dump() == validated.model_dump()


def test_a_re_export_changing_one_name_re_edges_its_readers_exactly() -> None:
    """use.py reaches f and g through pkg/__init__.py's re-exports: deleting pkg/a.py
    rebinds f there (its reader loses the call), renaming g in pkg/b.py changes g
    only; each step equals a fresh build."""
    files = {
        "pkg/__init__.py": "from pkg.a import f\nfrom pkg.b import g\n",
        "pkg/a.py": "def f():\n    return 1\n",
        "pkg/b.py": "def g():\n    return 2\n",
        "use.py": "import pkg\n\npkg.f()\npkg.g()\n",
    }
    use, f, g = "file:use.py", "sym:pkg/a.py:f", "sym:pkg/b.py:g"
    index, s = scanned(files)

    def calls() -> set[str]:
        return {e.dst for e in index.state.edges.values() if e.src == use and e.kind == "CALLS"}

    assert calls() == {f, g}
    steps: list[tuple[str, str | None, set[str]]] = [
        ("pkg/a.py", None, {g}),
        ("pkg/a.py", files["pkg/a.py"], {f, g}),
        ("pkg/b.py", "def g2():\n    return 2\n", {f}),
        ("pkg/b.py", files["pkg/b.py"], {f, g}),
    ]
    for step, (path, text, expected) in enumerate(steps):
        if text is None:
            del files[path]
            index.handle(s.deleted(path), now=1.0)
        else:
            files[path] = text
            index.handle(s.changed(path, text), now=1.0)
        assert calls() == expected, f"step {step}"
        assert graph(index) == graph(scanned(files)[0]), f"step {step}"


def test_a_definition_added_or_renamed_re_resolves_what_read_its_name() -> None:
    """app.py defines its own helper: its calls now mean it (same_file), not util's;
    renaming it back out of the way restores them; each step is exact."""
    index, s = scanned(FILES)
    files = dict(FILES)
    local = "sym:pkg/app.py:helper"

    def app_calls() -> set[tuple[str, str, str, float]]:
        return {
            (e.src, e.dst, e.confidence, e.weight)
            for e in index.state.edges.values()
            if e.kind == "CALLS" and e.src.startswith(("file:pkg/app.py", "sym:pkg/app.py"))
        }

    steps = [
        (
            FILES["pkg/app.py"] + "\n\ndef helper():\n    return 3\n",
            {(APP, local, "same_file", 1.0), (RUN, local, "same_file", 1.0)},
        ),
        (
            FILES["pkg/app.py"] + "\n\ndef helper_renamed():\n    return 3\n",
            {(APP, HELPER, "import", 1.0), (RUN, HELPER, "import", 1.0)},
        ),
    ]
    for step, (text, expected) in enumerate(steps):
        files["pkg/app.py"] = text
        index.handle(s.changed("pkg/app.py", text), now=1.0)
        assert app_calls() == expected, f"step {step}"
        assert graph(index) == graph(scanned(files)[0]), f"step {step}"


def test_a_restored_index_follows_later_changes_exactly() -> None:
    """An index restored from another's deltas (answers and kept bindings not carried)
    re-resolves once, then patches alike: both equal a fresh build."""
    files = dict(FILES, **{"pkg/__init__.py": "from pkg.util import helper\n"})
    index, s = RepoIndex("r"), Stamp(repo="r", producer="p")
    deltas = [s.claimed(index)]
    deltas += [
        index.handle(s.changed(path, text, origin="scan"), now=0.0)
        for path, text in sorted(files.items())
    ]
    deltas.append(index.handle(s.scan_completed(), now=0.0))
    deltas.append(index.handle(s.deleted("pkg/util.py"), now=1.0))
    del files["pkg/util.py"]
    restored = RepoIndex("r")
    for delta in deltas:
        assert delta is not None and restored.apply(delta)
    steps = [
        ("pkg/util.py", FILES["pkg/util.py"]),
        ("pkg/util.py", "def helper():\n    return 1\n\n\nclass Base2:\n    pass\n"),
        ("pkg/app.py", FILES["pkg/app.py"] + "\nrun()\n"),
    ]
    for step, (path, text) in enumerate(steps):
        files[path] = text
        event = s.changed(path, text)
        assert index.handle(event, now=2.0) == restored.handle(event, now=2.0)
        assert graph(restored) == graph(index) == graph(scanned(files)[0]), f"step {step}"


def test_an_edge_between_files_is_the_record_its_attributes_say() -> None:
    built = file_edge((TEST, "ext:pkg", "IMPORTS"), (1.0, "structural"))
    validated = EdgeRecord(src=TEST, dst="ext:pkg", kind="IMPORTS")
    assert built == validated and hash(built) == hash(validated)
    assert built.model_dump_json() == validated.model_dump_json()


SITES = {
    "pkg/__init__.py": "",
    "pkg/util.py": "def helper():\n    return 1\n",
    "pkg/app.py": (
        "from pkg.util import helper\n"
        "from pkg import util\n"
        "\n\n"
        "def run():\n"
        "    helper()\n"  # line 6: the first call
        "    return util.helper()\n"  # line 7: the same edge, another question
    ),
}


def test_a_call_edge_carries_its_first_call_site_and_follows_it_exactly() -> None:
    """run calls helper twice (``helper()`` at line 6, ``util.helper()`` at 7): one CALLS
    edge of weight 2 at line 6. Lines inserted above the call move it, and the delta
    upserts the edge whose only change is its line (patched: the imports alike; and
    resolved afresh: lines inserted above the imports); deleting the first call gives the
    edge the second's line (the use its line came from taken back). Each step equals a
    fresh build."""
    index, s = scanned(SITES)
    files = dict(SITES)

    def run_calls() -> set[tuple[str, str, str, float, int | None]]:
        return {
            (e.src, e.dst, e.kind, e.weight, e.line)
            for e in index.state.edges.values()
            if e.src == RUN and e.kind == "CALLS"
        }

    assert run_calls() == {(RUN, HELPER, "CALLS", 2.0, 6)}
    app = SITES["pkg/app.py"]
    steps = [
        (app.replace("\n\ndef run", "\n\n# one\n# two\ndef run"), 2.0, 8),  # patched
        ("# above the imports\n" + app, 2.0, 7),  # the imports moved: resolved afresh
        (app.replace("    helper()\n", "    pass\n"), 1.0, 7),  # the second call's line
        (app, 2.0, 6),
    ]
    for step, (text, weight, line) in enumerate(steps):
        files["pkg/app.py"] = text
        delta = index.handle(s.changed("pkg/app.py", text), now=1.0)
        assert delta is not None
        assert [
            (e.src, e.dst, e.kind, e.weight, e.line)
            for e in delta.edges_upserted
            if e.kind == "CALLS"
        ] == [(RUN, HELPER, "CALLS", weight, line)], f"step {step}"
        assert run_calls() == {(RUN, HELPER, "CALLS", weight, line)}, f"step {step}"
        assert graph(index) == graph(scanned(files)[0]), f"step {step}"


def test_a_dependent_whose_first_site_resolves_elsewhere_takes_the_next_site() -> None:
    """app.py's run calls helper at line 6 (through pkg's re-export) and util.helper at
    7: one edge, line 6. When pkg re-exports another helper, app.py (unchanged) is
    patched: the edge keeps the second call only, so its line is 7, and the first call
    makes an edge of its own at 6; re-exporting util's again joins them at 6."""
    files = {
        "pkg/__init__.py": "from pkg.util import helper\n",
        "pkg/util.py": "def helper():\n    return 1\n",
        "pkg/other.py": "def helper():\n    return 2\n",
        "app.py": (
            "from pkg import helper\nfrom pkg import util\n\n\n"
            "def run():\n    helper()\n    return util.helper()\n"
        ),
    }
    run, other = "sym:app.py:run", "sym:pkg/other.py:helper"
    index, s = scanned(files)
    steps = [
        ("from pkg.other import helper\n", [(run, other, 1.0, 6), (run, HELPER, 1.0, 7)]),
        ("from pkg.util import helper\n", [(run, HELPER, 2.0, 6)]),
    ]
    for step, (text, calls) in enumerate(steps):
        files["pkg/__init__.py"] = text
        delta = index.handle(s.changed("pkg/__init__.py", text), now=1.0)
        assert delta is not None
        upserted = [
            (e.src, e.dst, e.weight, e.line) for e in delta.edges_upserted if e.kind == "CALLS"
        ]
        assert upserted == calls, f"step {step}"
        assert graph(index) == graph(scanned(files)[0]), f"step {step}"
