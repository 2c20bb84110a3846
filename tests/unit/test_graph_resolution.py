"""Resolution of imports and references into edges, per language, on hand-made facts.

Facts are built directly (not parsed) so that each test pins the resolver alone: the
exact edges, their kinds, confidences and weights.
"""

from __future__ import annotations

from processors.graph.build import file_subgraph, is_test_path
from processors.graph.lookup import Lookup, RepoFacts
from stores.records import Alias, FileRecord, ImportRecord, ReferenceRecord, SymbolRecord


def sym(qualname: str, kind: str = "FUNCTION", line: int = 1, **kw: object) -> SymbolRecord:
    parent, _, name = qualname.rpartition(".")
    return SymbolRecord(
        name=name,
        qualname=qualname,
        kind=kind,  # type: ignore[arg-type]
        line_start=line,
        line_end=line,
        signature=name,
        parent=parent or None,
        **kw,  # type: ignore[arg-type]
    )


def ref(name: str, kind: str = "call", qualifier: str | None = None, scope: str | None = None):
    return ReferenceRecord(name=name, qualifier=qualifier, kind=kind, line=1, column=0, scope=scope)  # type: ignore[arg-type]


def rec(path: str, language: str, symbols=(), imports=(), refs=(), **kw: object) -> FileRecord:
    return FileRecord(
        path=path,
        language=language,
        size=1,
        lines=1,
        content_hash="h",
        skipped=None,
        parse_errors=0,
        symbols=tuple(symbols),
        imports=tuple(imports),
        references=tuple(refs),
        origin="scan",
        commit=None,
        working_tree=True,
        producer="p",
        **kw,  # type: ignore[arg-type]
    )


def graph(records: list[FileRecord], path: str) -> dict[tuple[str, str, str], tuple[str, float]]:
    """The edges ``path`` owns (not CONTAINS/DEFINED_BY/SIBLING): key -> (confidence, weight)."""
    facts = RepoFacts()
    for record in records:
        facts.replace(record.path, record)
    _, edges, _ = file_subgraph(facts.files[path], Lookup(facts))
    skip = {"CONTAINS", "DEFINED_BY", "SIBLING"}
    return {k: (e.confidence, e.weight) for k, e in edges.items() if k[2] not in skip}


def test_python_call_through_a_from_import_weighs_the_import() -> None:
    a = rec(
        "app/main.py",
        "python",
        [sym("main")],
        [ImportRecord(module="app.util", names=("helper",), line=1)],
        [ref("helper", scope="main"), ref("helper", scope="main")],
    )
    util = rec("app/util.py", "python", [sym("helper")])
    assert graph([a, util], "app/main.py") == {
        ("sym:app/main.py:main", "sym:app/util.py:helper", "CALLS"): ("import", 2.0),
        ("file:app/main.py", "file:app/util.py", "IMPORTS"): ("import", 2.0),
    }


def test_python_package_reexport_and_relative_import_and_submodule_attribute() -> None:
    init = rec(
        "pkg/__init__.py",
        "python",
        imports=[ImportRecord(module="core", names=("Engine",), level=1, line=1)],
    )
    core = rec("pkg/core.py", "python", [sym("Engine", "CLASS"), sym("Engine.start", "METHOD")])
    tools = rec("pkg/tools/run.py", "python", [sym("go")])
    app = rec(
        "app.py",
        "python",
        [sym("main")],
        [
            ImportRecord(module="pkg", names=("Engine",), line=1),
            ImportRecord(module="pkg.tools", alias="pkg", line=2),
        ],
        [
            ref("Engine", scope="main"),
            ref("start", qualifier="Engine", scope="main"),
            ref("go", qualifier="pkg.tools.run", scope="main"),
        ],
    )
    edges = graph([init, core, tools, app], "app.py")
    assert edges[("sym:app.py:main", "sym:pkg/core.py:Engine", "CALLS")] == ("import", 1.0)
    assert edges[("sym:app.py:main", "sym:pkg/core.py:Engine.start", "CALLS")] == ("import", 1.0)
    assert edges[("sym:app.py:main", "sym:pkg/tools/run.py:go", "CALLS")] == ("import", 1.0)


def test_a_module_importing_its_own_name_is_not_an_external_package() -> None:
    own = rec(
        "pkg/mod.py",
        "python",
        [sym("arg"), sym("main")],
        [ImportRecord(module="pkg.mod", names=("arg",), local_names=("argument",), line=1)],
        [ref("argument", scope="main")],
    )
    assert graph([own], "pkg/mod.py") == {
        ("sym:pkg/mod.py:main", "sym:pkg/mod.py:arg", "CALLS"): ("import", 1.0),
    }


def test_self_calls_inherited_methods_and_extends_across_files() -> None:
    base = rec("base.py", "python", [sym("Base", "CLASS"), sym("Base.save", "METHOD")])
    model = rec(
        "model.py",
        "python",
        [sym("User", "CLASS", bases=("Base",)), sym("User.run", "METHOD", line=2)],
        [ImportRecord(module="base", names=("Base",), line=1)],
        [
            ref("save", qualifier="self", scope="User.run"),
            ref("run", qualifier="self", scope="User.run"),
        ],
    )
    edges = graph([base, model], "model.py")
    assert edges == {
        ("sym:model.py:User", "sym:base.py:Base", "EXTENDS"): ("import", 1.0),
        ("sym:model.py:User.run", "sym:base.py:Base.save", "CALLS"): ("import", 1.0),
        ("file:model.py", "file:base.py", "IMPORTS"): ("import", 2.0),
    }


def test_name_match_is_marked_kind_aware_and_ambiguous_names_draw_nothing() -> None:
    caller = rec(
        "c.py",
        "python",
        [sym("f")],
        refs=[
            ref("run", qualifier="obj", scope="f"),  # a method of some receiver
            ref("stop", scope="f"),  # a bare call: never a method
            ref("append", qualifier="items", scope="f"),  # the language's own
        ],
    )
    one = rec(
        "x.py",
        "python",
        [
            sym("Runner", "CLASS"),
            sym("Runner.run", "METHOD"),
            sym("Runner.stop", "METHOD"),
            sym("Runner.append", "METHOD"),
        ],
    )
    assert graph([caller, one], "c.py") == {
        ("sym:c.py:f", "sym:x.py:Runner.run", "CALLS"): ("name_match", 1.0),
    }
    # A function nested in another is local to it: never a match from another file.
    nested = rec("n.py", "python", [sym("outer"), sym("outer.stop", line=2)])
    assert graph([caller, nested], "c.py") == {}
    many = [
        rec(f"m{i}.py", "python", [sym("K", "CLASS"), sym("K.run", "METHOD")]) for i in range(4)
    ]
    assert graph([caller, *many], "c.py") == {}


def test_go_package_import_through_go_mod_and_same_package_calls() -> None:
    mod = rec("go.mod", "go-module", aliases=(Alias(prefix="example.com/svc", target=""),))
    store = rec("store/db.go", "go", [sym("Open")], package="store")
    helper = rec("cmd/helper.go", "go", [sym("assist")], package="main")
    main = rec(
        "cmd/main.go",
        "go",
        [sym("main")],
        [
            ImportRecord(module="example.com/svc/store", alias="store", line=1),
            ImportRecord(module="fmt", alias="fmt", line=2),
        ],
        [
            ref("Open", qualifier="store", scope="main"),
            ref("assist", scope="main"),
            ref("Println", qualifier="fmt", scope="main"),
        ],
        package="main",
    )
    assert graph([mod, store, helper, main], "cmd/main.go") == {
        ("sym:cmd/main.go:main", "sym:store/db.go:Open", "CALLS"): ("import", 1.0),
        ("sym:cmd/main.go:main", "sym:cmd/helper.go:assist", "CALLS"): ("same_folder", 1.0),
        ("file:cmd/main.go", "file:store/db.go", "IMPORTS"): ("import", 1.0),
        ("file:cmd/main.go", "ext:fmt", "IMPORTS"): ("structural", 1.0),
        ("file:cmd/main.go", "file:cmd/helper.go", "REFERENCES"): ("same_folder", 1.0),
    }


def test_java_imports_same_package_and_implements() -> None:
    repo = rec(
        "src/com/acme/data/Repo.java",
        "java",
        [sym("Repo", "INTERFACE"), sym("Repo.find", "METHOD")],
        package="com.acme.data",
    )
    helper = rec(
        "src/com/acme/app/Helper.java", "java", [sym("Helper", "CLASS")], package="com.acme.app"
    )
    service = rec(
        "src/com/acme/app/Service.java",
        "java",
        [sym("Service", "CLASS", implements=("Repo",)), sym("Service.run", "METHOD")],
        [ImportRecord(module="com.acme.data", names=("Repo",), line=1)],
        [
            ref("find", qualifier="Repo", scope="Service.run"),
            ref("Helper", "type", scope="Service.run"),
        ],
        package="com.acme.app",
    )
    assert graph([repo, helper, service], "src/com/acme/app/Service.java") == {
        (
            "sym:src/com/acme/app/Service.java:Service",
            "sym:src/com/acme/data/Repo.java:Repo",
            "IMPLEMENTS",
        ): ("import", 1.0),
        (
            "sym:src/com/acme/app/Service.java:Service.run",
            "sym:src/com/acme/data/Repo.java:Repo.find",
            "CALLS",
        ): ("import", 1.0),
        (
            "sym:src/com/acme/app/Service.java:Service.run",
            "sym:src/com/acme/app/Helper.java:Helper",
            "USES",
        ): ("same_folder", 1.0),
        ("file:src/com/acme/app/Service.java", "file:src/com/acme/data/Repo.java", "IMPORTS"): (
            "import",
            2.0,
        ),
        ("file:src/com/acme/app/Service.java", "file:src/com/acme/app/Helper.java", "REFERENCES"): (
            "same_folder",
            1.0,
        ),
    }


def test_typescript_relative_index_and_tsconfig_paths() -> None:
    config = rec("tsconfig.json", "tsconfig", aliases=(Alias(prefix="@app/", target="src/app/"),))
    util = rec("src/app/util/index.ts", "typescript", [sym("fmt")])
    view = rec(
        "src/web/view.tsx",
        "tsx",
        [sym("View")],
        [
            ImportRecord(module="@app/util", names=("fmt",), line=1),
            ImportRecord(module="react", names=("default",), local_names=("React",), line=2),
        ],
        [ref("fmt", scope="View")],
    )
    assert graph([config, util, view], "src/web/view.tsx") == {
        ("sym:src/web/view.tsx:View", "sym:src/app/util/index.ts:fmt", "CALLS"): ("import", 1.0),
        ("file:src/web/view.tsx", "file:src/app/util/index.ts", "IMPORTS"): ("import", 1.0),
        ("file:src/web/view.tsx", "ext:react", "IMPORTS"): ("structural", 1.0),
    }


def test_rust_use_through_the_crate_root_and_a_child_module() -> None:
    cargo = rec("core/Cargo.toml", "cargo", aliases=(Alias(prefix="crate", target="core/src"),))
    lib = rec(
        "core/src/lib.rs",
        "rust",
        imports=[ImportRecord(module="self::store", alias="store", line=1)],
    )
    store = rec("core/src/store.rs", "rust", [sym("Db", "STRUCT"), sym("Db.open", "METHOD")])
    api = rec(
        "core/src/api.rs",
        "rust",
        [sym("serve")],
        [ImportRecord(module="crate::store", names=("Db",), line=1)],
        [ref("open", qualifier="Db", scope="serve")],
    )
    assert graph([cargo, lib, store, api], "core/src/api.rs") == {
        ("sym:core/src/api.rs:serve", "sym:core/src/store.rs:Db.open", "CALLS"): ("import", 1.0),
        ("file:core/src/api.rs", "file:core/src/store.rs", "IMPORTS"): ("import", 1.0),
    }
    assert graph([cargo, lib, store, api], "core/src/lib.rs") == {
        ("file:core/src/lib.rs", "file:core/src/store.rs", "IMPORTS"): ("import", 1.0),
    }


def test_tests_edges_from_test_files_and_test_functions() -> None:
    util = rec("app/util.py", "python", [sym("helper")])
    test = rec(
        "tests/test_util.py",
        "python",
        [sym("test_helper")],
        [ImportRecord(module="app.util", names=("helper",), line=1)],
        [ref("helper", scope="test_helper")],
    )
    edges = graph([util, test], "tests/test_util.py")
    assert edges[("sym:tests/test_util.py:test_helper", "sym:app/util.py:helper", "TESTS")] == (
        "import",
        1.0,
    )
    assert edges[("file:tests/test_util.py", "file:app/util.py", "TESTS")] == ("structural", 2.0)
    assert [is_test_path(p) for p in ("a_test.go", "FooTest.java", "x.spec.ts", "app/util.py")] == [
        True,
        True,
        True,
        False,
    ]


def test_python_super_reaches_the_bases_through_an_import_never_the_own_class() -> None:
    base = rec(
        "base.py",
        "python",
        [sym("Base", "CLASS"), sym("Base.__init__", "METHOD"), sym("Base.save", "METHOD")],
    )
    model = rec(
        "model.py",
        "python",
        [
            sym("User", "CLASS", bases=("Base",)),
            sym("User.__init__", "METHOD", line=2),
            sym("User.save", "METHOD", line=3),
            sym("User.other", "METHOD", line=4),
            sym("Mixin", "CLASS", line=5),
            sym("Mixin.save", "METHOD", line=6),
        ],
        [ImportRecord(module="base", names=("Base",), line=1)],
        [
            ref("__init__", qualifier="super", scope="User.__init__"),
            ref("save", qualifier="super", scope="User.save"),  # the override: no recursion
            ref("save", qualifier="super", scope="User.other"),  # not User's own save
            ref("save", qualifier="super", scope="Mixin.save"),  # no base: a name match
        ],
    )
    assert graph([base, model], "model.py") == {
        ("sym:model.py:User", "sym:base.py:Base", "EXTENDS"): ("import", 1.0),
        ("sym:model.py:User.__init__", "sym:base.py:Base.__init__", "CALLS"): ("import", 1.0),
        ("sym:model.py:User.save", "sym:base.py:Base.save", "CALLS"): ("import", 1.0),
        ("sym:model.py:User.other", "sym:base.py:Base.save", "CALLS"): ("import", 1.0),
        ("sym:model.py:Mixin.save", "sym:base.py:Base.save", "CALLS"): ("name_match", 1.0),
        ("file:model.py", "file:base.py", "IMPORTS"): ("import", 4.0),
    }


def test_java_and_javascript_super_skip_the_enclosing_class() -> None:
    def classes(path: str, language: str, **kw: object) -> FileRecord:
        return rec(
            path,
            language,
            [
                sym("A", "CLASS", bases=("B",)),
                sym("A.run", "METHOD", line=2),
                sym("A.other", "METHOD", line=3),
                sym("B", "CLASS", line=4),
                sym("B.run", "METHOD", line=5),
            ],
            refs=[
                ref("run", qualifier="super", scope="A.run"),
                ref("run", qualifier="super", scope="A.other"),
            ],
            **kw,
        )

    for record in (classes("A.java", "java", package="p"), classes("a.js", "javascript")):
        src = f"sym:{record.path}:"
        assert graph([record], record.path) == {
            (f"{src}A", f"{src}B", "EXTENDS"): ("same_file", 1.0),
            (f"{src}A.run", f"{src}B.run", "CALLS"): ("same_file", 1.0),
            (f"{src}A.other", f"{src}B.run", "CALLS"): ("same_file", 1.0),
        }
    # Rust's super:: names the parent module, never the methods of the impl it is in
    rust = rec(
        "src/a.rs",
        "rust",
        [sym("S", "STRUCT"), sym("S.run", "METHOD", line=2), sym("S.helper", "METHOD", line=3)],
        refs=[ref("helper", qualifier="super", scope="S.run")],
    )
    assert graph([rust], "src/a.rs") == {}


def test_python_members_of_module_level_instances_resolve_through_their_class() -> None:
    utils = rec(
        "db/utils.py",
        "python",
        [sym("ConnectionRouter", "CLASS"), sym("ConnectionRouter.allow_migrate", "METHOD")],
    )
    init = rec(
        "db/__init__.py",
        "python",
        [
            sym("router", "VARIABLE", value_type="ConnectionRouter"),
            sym("made", "VARIABLE", value_type="factory"),  # a function's result: unknown
            sym("factory", line=2),
            sym("factory.allow_migrate", line=3),
            sym("migrate", line=4),
        ],
        [ImportRecord(module="db.utils", names=("ConnectionRouter",), line=1)],
        [ref("allow_migrate", qualifier="router", scope="migrate")],
    )
    library = rec(
        "template/library.py", "python", [sym("Library", "CLASS"), sym("Library.tag", "METHOD")]
    )
    tags = rec(
        "template/tags.py",
        "python",
        [sym("register", "VARIABLE", value_type="library.Library"), sym("now", line=2)],
        [
            ImportRecord(module="template", names=("library",), line=1),
            ImportRecord(module="db", names=("router", "made"), line=2),
            ImportRecord(module="db", alias="db", line=3),
        ],
        [
            ref("tag", qualifier="register", scope="now"),
            ref("allow_migrate", qualifier="router", scope="now"),
            ref("allow_migrate", qualifier="db.router", scope="now"),
            ref("allow_migrate", qualifier="made", scope="now"),
        ],
    )
    files = [utils, init, library, tags]
    assert graph(files, "db/__init__.py") == {
        (
            "sym:db/__init__.py:migrate",
            "sym:db/utils.py:ConnectionRouter.allow_migrate",
            "CALLS",
        ): ("import", 1.0),
        ("file:db/__init__.py", "file:db/utils.py", "IMPORTS"): ("import", 1.0),
    }
    assert graph(files, "template/tags.py") == {
        ("sym:template/tags.py:now", "sym:template/library.py:Library.tag", "CALLS"): (
            "import",
            1.0,
        ),
        ("sym:template/tags.py:now", "sym:db/utils.py:ConnectionRouter.allow_migrate", "CALLS"): (
            "import",
            2.0,
        ),
        ("file:template/tags.py", "file:template/library.py", "IMPORTS"): ("import", 1.0),
        ("file:template/tags.py", "file:db/__init__.py", "IMPORTS"): ("import", 1.0),
        ("file:template/tags.py", "file:db/utils.py", "REFERENCES"): ("same_folder", 2.0),
    }


def test_module_level_values_that_name_each_other_end_instead_of_recursing() -> None:
    # x = x.make() in one file; a = b.y.f() and y = a.x.g() across two modules: found
    # in a real code base as a RecursionError. Each value followed counts toward the
    # depth limit, so resolution ends with no edge rather than never.
    selfish = rec(
        "pkg/selfish.py",
        "python",
        [sym("x", "VARIABLE", value_type="x.make"), sym("use", line=2)],
        [],
        [ref("go", qualifier="x", scope="use")],
    )
    a = rec(
        "pkg/a.py",
        "python",
        [sym("x", "VARIABLE", value_type="b.y.f"), sym("run", line=3)],
        [ImportRecord(module="pkg", names=("b",), line=1)],
        [ref("go", qualifier="x", scope="run")],
    )
    b = rec(
        "pkg/b.py",
        "python",
        [sym("y", "VARIABLE", value_type="a.x.g")],
        [ImportRecord(module="pkg", names=("a",), line=1)],
    )
    files = [selfish, a, b]
    assert graph(files, "pkg/selfish.py") == {}
    assert graph(files, "pkg/a.py") == {
        ("file:pkg/a.py", "file:pkg/b.py", "IMPORTS"): ("import", 1.0)
    }
