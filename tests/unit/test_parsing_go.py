"""Go files: exact symbols, imports and references from small sources."""

from __future__ import annotations

from processors.parsing import ParseResult, parse_file
from processors.parsing.tree import MAX_REFERENCES
from stores.records import ImportRecord
from tests.unit.parsing_records import Symbols, cuts, parsed, ref

SHAPES = """
    // Package shapes draws.
    package shapes

    import (
    \t"fmt"
    \tm "math"
    \t_ "embed"
    \t. "strings"
    \t"github.com/acme/geo/v2"
    )

    // Shape is anything with an area.
    //
    //go:generate stringer -type=Shape
    type Shape interface {
    \tfmt.Stringer
    \tgeo.Bounded[int]
    \tArea() float64
    }

    // Square has a side.
    type Square[T any] struct {
    \t*Base
    \tgeo.Point
    \tSide, Pad T `json:"side"`
    \tlabel     string
    }

    type (
    \t// ID names a shape.
    \tID int
    \tAlias = geo.Point
    \thidden func(int) error
    )

    const Pi, tau = 3.14, 6.28 // trailing, not a doc

    var (
    \t// Default is the unit square.
    \tDefault = Square[float64]{Side: 1}
    \t_       Shape = (*Square[int])(nil)
    )

    // Area of the square.
    func (s *Square[T]) Area() float64 {
    \treturn m.Sqrt(float64(s.Side))
    }

    func New(side float64, opts ...geo.Option) *Square[float64] {
    \tsq := &Square[float64]{Side: side}
    \tsq.Base.init(geo.Origin, Join(nil, ""))
    \t_ = fmt.Sprintf("%v", geo.Unit.Scale(2), g()().h())
    \treturn sq
    }

    func asm(x int) int
"""


def parse(source: str) -> ParseResult:
    return parsed("shapes/shapes.go", source)


# Go exports a capitalized name.
symbol = Symbols(exported=lambda name, signature: name[0].isupper())


def test_package_and_symbols_with_parents_signatures_docs_and_embeddings() -> None:
    result = parse(SHAPES)
    assert (result.language, result.package, result.problems) == ("go", "shapes", ())
    assert result.symbols == (
        symbol(
            "Shape",
            "INTERFACE",
            (15, 19),
            "type Shape interface",
            "Shape is anything with an area.",
            bases=("fmt.Stringer", "geo.Bounded"),
        ),
        symbol(
            "Square",
            "STRUCT",
            (22, 27),
            "type Square[T any] struct",
            "Square has a side.",
            bases=("Base", "geo.Point"),
        ),
        symbol("ID", "TYPE", (31, 31), "type ID int", "ID names a shape."),
        symbol("Alias", "TYPE", (32, 32), "type Alias = geo.Point"),
        symbol("hidden", "TYPE", (33, 33), "type hidden func(int) error"),
        symbol("Pi", "VARIABLE", (36, 36), "const Pi, tau = 3.14, 6.28"),
        symbol("tau", "VARIABLE", (36, 36), "const Pi, tau = 3.14, 6.28"),
        symbol(
            "Default",
            "VARIABLE",
            (40, 40),
            "var Default = Square[float64]{Side: 1}",
            "Default is the unit square.",
        ),
        symbol(
            "Square.Area",
            "METHOD",
            (45, 47),
            "func (s *Square[T]) Area() float64",
            "Area of the square.",
        ),
        symbol(
            "New",
            "FUNCTION",
            (49, 54),
            "func New(side float64, opts ...geo.Option) *Square[float64]",
        ),
        symbol("asm", "FUNCTION", (56, 56), "func asm(x int) int"),
    )


def test_imports_bind_their_alias_or_the_package_name_of_the_path() -> None:
    assert parse(SHAPES).imports == (
        ImportRecord(module="fmt", line=5, alias="fmt"),
        ImportRecord(module="math", line=6, alias="m"),
        ImportRecord(module="embed", line=7, alias="_"),
        ImportRecord(module="strings", line=8, alias="."),
        ImportRecord(module="github.com/acme/geo/v2", line=9, alias="geo"),
    )


def test_versioned_and_prefixed_paths_bind_the_conventional_package_name() -> None:
    result = parse(
        """
        package p

        import (
            "gopkg.in/yaml.v3"
            "github.com/mattn/go-sqlite3"
            "net/http"
        )
        """
    )
    assert [i.alias for i in result.imports] == ["yaml", "sqlite3", "http"]


def test_references_calls_constructions_types_and_package_reads() -> None:
    assert parse(SHAPES).references == (
        ref("type", "Stringer", "fmt", (16, 5), "Shape"),
        ref("type", "Bounded", "geo", (17, 5), "Shape"),
        ref("type", "Base", None, (23, 2), "Square"),
        ref("type", "Point", "geo", (24, 5), "Square"),
        # `T` is Square's type parameter, `string` a predeclared type: neither is recorded.
        ref("type", "Point", "geo", (32, 13), "Alias"),
        ref("call", "Square", None, (40, 11), "Default"),
        ref("type", "Shape", None, (41, 9), None),
        ref("type", "Square", None, (41, 19), None),
        ref("type", "Square", None, (45, 9), "Square.Area"),
        ref("call", "Sqrt", "m", (46, 10), "Square.Area"),
        ref("type", "Option", "geo", (49, 35), "New"),
        ref("type", "Square", None, (49, 44), "New"),
        ref("call", "Square", None, (50, 8), "New"),
        ref("call", "init", "sq.Base", (51, 9), "New"),
        ref("use", "Origin", "geo", (51, 18), "New"),
        ref("call", "Join", None, (51, 26), "New"),
        ref("call", "Sprintf", "fmt", (52, 9), "New"),
        ref("use", "Unit", "geo", (52, 27), "New"),
        ref("call", "Scale", "geo.Unit", (52, 32), "New"),
        ref("call", "g", None, (52, 42), "New"),
        ref("call", "h", "<expr>", (52, 48), "New"),
    )


def test_generic_calls_conversions_and_local_reads() -> None:
    result = parse(
        """
        package p

        import "example.com/lib"

        func F[K comparable, V any](m map[K]V) []V {
            out := make([]V, 0, len(m))
            x := lib.Map[int](out)
            y := Ptr[string](nil)
            z := []Item(nil)
            w := any(x).(lib.Named)
            return out.field + local.field + lib.Const + append(y, z, w)
        }
        """
    )
    # Type parameters, predeclared names and fields of locals are not references.
    assert result.references == (
        ref("call", "Map", "lib", (7, 13), "F"),
        ref("call", "Ptr", None, (8, 9), "F"),
        ref("type", "Item", None, (9, 11), "F"),
        ref("type", "Named", "lib", (10, 21), "F"),
        ref("use", "Const", "lib", (11, 41), "F"),
    )


def test_method_receivers_name_the_base_type_wherever_it_is_declared() -> None:
    result = parse(
        """
        package p

        func (t T) Value() {}
        func (l *List[K, V]) push(k K) {}
        func (Named) Anonymous() {}
        """
    )
    assert [(s.qualname, s.parent, s.kind, s.exported) for s in result.symbols] == [
        ("T.Value", "T", "METHOD", True),
        ("List.push", "List", "METHOD", False),
        ("Named.Anonymous", "Named", "METHOD", True),
    ]
    assert [(r.name, r.scope) for r in result.references] == [
        ("T", "T.Value"),
        ("List", "List.push"),
        ("Named", "Named.Anonymous"),
    ]


def test_syntax_errors_keep_what_tree_sitter_recovered() -> None:
    result = parse(
        """
        package broken

        import "fmt"

        func ok() { fmt.Println("a") }

        func broken( {
            x :=
        }

        func (r *T) M() int { return r.a }
        """
    )
    assert result.problems == ("syntax_errors:2",)
    assert [(s.qualname, s.kind, s.line_start) for s in result.symbols] == [
        ("ok", "FUNCTION", 5),
        ("broken", "FUNCTION", 7),
        ("T.M", "METHOD", 11),
    ]
    assert [(r.kind, r.name, r.qualifier) for r in result.references] == [
        ("call", "Println", "fmt"),
        ("type", "T", None),
    ]


def test_references_over_the_cap_keep_the_first_in_source_order() -> None:
    calls = "\n".join(f"\tf{i}()" for i in range(MAX_REFERENCES))
    result = parse(f"package p\n\nfunc main() {{\n\tvar x Item\n{calls}\n}}\n")
    assert "references_truncated" in result.problems
    assert len(result.references) == MAX_REFERENCES
    assert (result.references[0].name, result.references[-1].name) == ("Item", "f4998")


def test_any_cut_of_a_valid_file_still_extracts() -> None:
    for cut in cuts(SHAPES):
        result = parse_file("cut.go", cut)
        assert not any(p.startswith("extract_failed") for p in result.problems)
        assert all(1 <= s.line_start <= s.line_end for s in result.symbols)
