"""Java files: exact symbols, imports and references from small sources."""

from __future__ import annotations

from processors.parsing import ParseResult, parse_file
from stores.records import ImportRecord
from tests.unit.parsing_records import Symbols, cuts, parsed, ref

SHAPE = """
    /* Copyright: not a doc. */
    package com.acme.shapes;

    import java.util.List;
    import java.util.*;
    import static org.junit.Assert.assertEquals;
    import static com.acme.Util.*;

    /**
     * A shape.
     *
     * @param <T> the unit
     */
    @Deprecated
    public abstract class Shape<T extends Number> extends java.util.AbstractList<T>
            implements Comparable<Shape<T>>, com.acme.Named {
        public static final int SIDES = Limits.MAX;
        private String label;
        static Map<String, Shape<?>> registry = new HashMap<>();

        /** Builds a shape. */
        public Shape(String label) { super(); this.label = label; }

        @Override
        public <U> List<U> map(java.util.function.Function<T, U> f) throws IOException {
            Point p = new Point(1, 2);
            var q = new com.acme.geo.Point<>();
            registry.put(label, this);
            this.label.trim(); super.clear(); helper().run(); draw();
            Object o = (Circle) p;
            if (o instanceof Square s) { return List.of(); }
            return Collections.<U>emptyList();
        }

        static class Inner implements Runnable { public void run() {} }

        interface Visitor extends Base, Other { int LIMIT = 1; void visit(Shape<?> s); }

        enum Color { RED, GREEN; void paint() {} }

        record Pair(int a, Point b) {}

        @interface Tag { String value() default ""; }
    }
"""


def parse(source: str) -> ParseResult:
    return parsed("src/com/acme/shapes/Shape.java", source)


# Not exported unless a test says so.
symbol = Symbols(exported=lambda name, signature: False)


def test_package_types_members_and_static_fields() -> None:
    result = parse(SHAPE)
    assert (result.language, result.package, result.problems) == ("java", "com.acme.shapes", ())
    assert result.symbols == (
        symbol(
            "Shape",
            "CLASS",
            (14, 44),
            "public abstract class Shape<T extends Number> extends java.util.AbstractList<T>"
            " implements Comparable<Shape<T>>, com.acme.Named",
            "A shape.\n\n@param <T> the unit",
            exported=True,
            bases=("java.util.AbstractList",),
            implements=("Comparable", "com.acme.Named"),
        ),
        symbol(
            "Shape.SIDES",
            "VARIABLE",
            (17, 17),
            "public static final int SIDES = Limits.MAX",
            exported=True,
        ),
        # `label` is an instance field: not a symbol.
        symbol(
            "Shape.registry",
            "VARIABLE",
            (19, 19),
            "static Map<String, Shape<?>> registry = new HashMap<>()",
        ),
        symbol(
            "Shape.Shape",
            "METHOD",
            (22, 22),
            "public Shape(String label)",
            "Builds a shape.",
            exported=True,
        ),
        symbol(
            "Shape.map",
            "METHOD",
            (24, 33),
            "public <U> List<U> map(java.util.function.Function<T, U> f) throws IOException",
            exported=True,
        ),
        symbol(
            "Shape.Inner",
            "CLASS",
            (35, 35),
            "static class Inner implements Runnable",
            implements=("Runnable",),
        ),
        symbol("Shape.Inner.run", "METHOD", (35, 35), "public void run()", exported=True),
        symbol(
            "Shape.Visitor",
            "INTERFACE",
            (37, 37),
            "interface Visitor extends Base, Other",
            bases=("Base", "Other"),
        ),
        symbol("Shape.Visitor.LIMIT", "VARIABLE", (37, 37), "int LIMIT = 1", exported=True),
        symbol("Shape.Visitor.visit", "METHOD", (37, 37), "void visit(Shape<?> s)", exported=True),
        symbol("Shape.Color", "ENUM", (39, 39), "enum Color"),
        symbol("Shape.Color.RED", "VARIABLE", (39, 39), "RED", exported=True),
        symbol("Shape.Color.GREEN", "VARIABLE", (39, 39), "GREEN", exported=True),
        symbol("Shape.Color.paint", "METHOD", (39, 39), "void paint()"),
        symbol("Shape.Pair", "CLASS", (41, 41), "record Pair(int a, Point b)"),
        symbol("Shape.Tag", "INTERFACE", (43, 43), "@interface Tag"),
        symbol("Shape.Tag.value", "METHOD", (43, 43), 'String value() default ""', exported=True),
    )


def test_imports_single_wildcard_and_static() -> None:
    assert parse(SHAPE).imports == (
        ImportRecord(module="java.util", names=("List",), line=4),
        ImportRecord(module="java.util", names=("*",), line=5),
        ImportRecord(module="org.junit.Assert", names=("assertEquals",), line=6),
        ImportRecord(module="com.acme.Util", names=("*",), line=7),
    )


def test_references_invocations_constructions_types_and_field_reads() -> None:
    assert parse(SHAPE).references == (
        ref("type", "Deprecated", None, (14, 1), "Shape"),
        # `T` and `U` are type parameters: not references.
        ref("type", "Number", None, (15, 38), "Shape"),
        ref("type", "AbstractList", "java.util", (15, 64), "Shape"),
        ref("type", "Comparable", None, (16, 19), "Shape"),
        ref("type", "Shape", None, (16, 30), "Shape"),
        ref("type", "Named", "com.acme", (16, 50), "Shape"),
        ref("use", "MAX", "Limits", (17, 43), "Shape.SIDES"),
        ref("type", "String", None, (18, 12), "Shape"),
        ref("type", "Map", None, (19, 11), "Shape.registry"),
        ref("type", "String", None, (19, 15), "Shape.registry"),
        ref("type", "Shape", None, (19, 23), "Shape.registry"),
        ref("call", "HashMap", None, (19, 48), "Shape.registry"),
        ref("type", "String", None, (22, 17), "Shape.Shape"),
        ref("type", "Override", None, (24, 5), "Shape.map"),
        ref("type", "List", None, (25, 15), "Shape.map"),
        ref("type", "Function", "java.util.function", (25, 46), "Shape.map"),
        ref("type", "IOException", None, (25, 71), "Shape.map"),
        ref("type", "Point", None, (26, 8), "Shape.map"),
        ref("call", "Point", None, (26, 22), "Shape.map"),
        ref("call", "Point", "com.acme.geo", (27, 33), "Shape.map"),
        ref("call", "put", "registry", (28, 17), "Shape.map"),
        ref("call", "trim", "this.label", (29, 19), "Shape.map"),
        ref("call", "clear", "super", (29, 33), "Shape.map"),
        ref("call", "helper", None, (29, 42), "Shape.map"),
        ref("call", "run", "<expr>", (29, 51), "Shape.map"),
        ref("call", "draw", None, (29, 58), "Shape.map"),
        ref("type", "Object", None, (30, 8), "Shape.map"),
        ref("type", "Circle", None, (30, 20), "Shape.map"),
        ref("type", "Square", None, (31, 25), "Shape.map"),
        ref("call", "of", "List", (31, 49), "Shape.map"),
        ref("call", "emptyList", "Collections", (32, 30), "Shape.map"),
        ref("type", "Runnable", None, (35, 34), "Shape.Inner"),
        ref("type", "Base", None, (37, 30), "Shape.Visitor"),
        ref("type", "Other", None, (37, 36), "Shape.Visitor"),
        ref("type", "Shape", None, (37, 70), "Shape.Visitor.visit"),
        ref("type", "Point", None, (41, 23), "Shape.Pair"),
        ref("type", "String", None, (43, 21), "Shape.Tag.value"),
    )


def test_qualified_annotations_chained_objects_and_nested_generics() -> None:
    result = parse(
        """
        class A extends Base<Map<String, List<B>>> {
            @javax.inject.Inject Outer.Inner<C> field;
            void m() { a.b.c.d(); a.b.c.e.f = Config.DEBUG; java.util.Objects.hash(x.y); }
        }
        """
    )
    assert result.symbols[0].bases == ("Base",)
    assert [(r.kind, r.name, r.qualifier) for r in result.references] == [
        ("type", "Base", None),
        ("type", "Map", None),
        ("type", "String", None),
        ("type", "List", None),
        ("type", "B", None),
        ("type", "Inject", "javax.inject"),
        ("type", "Inner", "Outer"),
        ("type", "C", None),
        # `a.b`, `java.util` and `x.y` read fields of variables (or packages): not uses.
        ("call", "d", "a.b.c"),
        ("use", "DEBUG", "Config"),
        ("call", "hash", "java.util.Objects"),
    ]


def test_syntax_errors_keep_what_tree_sitter_recovered() -> None:
    result = parse(
        """
        package p;

        public class Broken {
            void ok() { a.b(); }
            void broken( { int x = ; }
            public int after() { return helper(); }
        }

        class Second extends Base {
        """
    )
    assert result.problems == ("syntax_errors:3",)
    assert [(s.qualname, s.kind, s.line_start) for s in result.symbols] == [
        ("Broken", "CLASS", 3),
        ("Broken.ok", "METHOD", 4),
        ("Broken.broken", "METHOD", 5),
        ("Broken.after", "METHOD", 6),
        ("Second", "CLASS", 9),
    ]
    assert [(r.kind, r.name, r.qualifier, r.scope) for r in result.references] == [
        ("call", "b", "a", "Broken.ok"),
        ("call", "helper", None, "Broken.after"),
        ("type", "Base", None, "Second"),
    ]


def test_any_cut_of_a_valid_file_still_extracts() -> None:
    for cut in cuts(SHAPE):
        result = parse_file("Cut.java", cut)
        assert not any(p.startswith("extract_failed") for p in result.problems)
        assert all(1 <= s.line_start <= s.line_end for s in result.symbols)
