"""Rust files: exact symbols, imports and references from small sources."""

from __future__ import annotations

from processors.parsing import ParseResult
from tests.unit.parsing_records import Symbols, imported, parsed, references


def parse(source: str) -> ParseResult:
    return parsed("src/lib.rs", source)


# Exported, unless a test says, when the signature starts with `pub`.
symbol = Symbols(exported=lambda name, signature: signature.startswith("pub"))


def test_items_with_kinds_parents_signatures_and_visibility() -> None:
    result = parse(
        """
        //! The crate.

        use std::fmt;

        /// A point.
        #[derive(Debug, Clone)]
        pub struct Point<T: Copy> {
            x: T,
        }
        pub(crate) struct Pair(pub u8, u8);
        union Bits { i: u32, f: f32 }
        pub enum Shape { Dot(Point<u8>), Empty }
        pub trait Named: fmt::Debug + Clone + 'static {
            /// The name.
            fn name(&self) -> String;
            fn shout(&self) -> String { self.name() }
            type Id;
            const KIND: u8;
        }
        type Grid<T> = Vec<Vec<T>>;
        mod net;
        pub mod geo {
            pub const ORIGIN: u8 = 0;
            static mut COUNT: usize = 0;
            fn helper(/* the value */ v: u8) {}
        }
        #[macro_export]
        macro_rules! square { ($x:expr) => { $x * $x }; }
        macro_rules! local { () => {} }
        extern "C" { fn abs(x: i32) -> i32; }
        pub fn outer() -> u8 {
            fn inner() {}
            const _: () = ();
            1
        }
        """
    )
    assert result.language == "rust"
    assert result.symbols == (
        symbol("Point", "STRUCT", (6, 9), "pub struct Point<T: Copy>", doc="A point."),
        symbol("Pair", "STRUCT", (10, 10), "pub(crate) struct Pair(pub u8, u8)"),
        symbol("Bits", "STRUCT", (11, 11), "union Bits"),
        symbol("Shape", "ENUM", (12, 12), "pub enum Shape"),
        symbol(
            "Named",
            "TRAIT",
            (13, 19),
            "pub trait Named: fmt::Debug + Clone + 'static",
            bases=("fmt::Debug", "Clone"),
        ),
        # A trait's items are as visible as the trait (they cannot be marked `pub`).
        symbol(
            "Named.name",
            "METHOD",
            (15, 15),
            "fn name(&self) -> String",
            doc="The name.",
            exported=True,
        ),
        symbol("Named.shout", "METHOD", (16, 16), "fn shout(&self) -> String", exported=True),
        symbol("Named.Id", "TYPE", (17, 17), "type Id", exported=True),
        symbol("Named.KIND", "VARIABLE", (18, 18), "const KIND: u8", exported=True),
        symbol("Grid", "TYPE", (20, 20), "type Grid<T> = Vec<Vec<T>>"),
        symbol("net", "MODULE", (21, 21), "mod net"),
        symbol("geo", "MODULE", (22, 26), "pub mod geo"),
        symbol("geo.ORIGIN", "VARIABLE", (23, 23), "pub const ORIGIN: u8 = 0"),
        symbol("geo.COUNT", "VARIABLE", (24, 24), "static mut COUNT: usize = 0"),
        symbol("geo.helper", "FUNCTION", (25, 25), "fn helper(v: u8)"),
        symbol("square", "FUNCTION", (27, 28), "macro_rules! square", exported=True),
        symbol("local", "FUNCTION", (29, 29), "macro_rules! local"),
        symbol("abs", "FUNCTION", (30, 30), "fn abs(x: i32) -> i32"),
        symbol("outer", "FUNCTION", (31, 35), "pub fn outer() -> u8"),
        symbol("outer.inner", "FUNCTION", (32, 32), "fn inner()"),
    )
    assert result.imports == (
        imported("std", ("fmt",), 3),
        imported("self::net", (), 21, alias="net"),
    )
    assert (result.parse_errors, result.problems) == (0, ())


def test_impl_functions_are_methods_of_the_type_they_name() -> None:
    result = parse(
        """
        pub struct Stack<T> { items: Vec<T> }
        impl<T> Stack<T> {
            pub fn push(&mut self, item: T) {}
        }
        impl<T: Clone> From<Vec<T>> for Stack<T> {
            fn from(items: Vec<T>) -> Self { Stack { items } }
        }
        impl fmt::Display for &Stack<u8> {}
        impl !Sync for Stack<u8> {}
        impl crate::other::Remote { fn far(&self) {} }
        mod tests {
            struct Helper;
            impl Helper { fn new() -> Self { Helper } }
            impl Default for super::Stack<u8> { fn default() -> Self { todo!() } }
        }
        """
    )
    assert result.symbols == (
        symbol(
            "Stack",
            "STRUCT",
            (1, 1),
            "pub struct Stack<T>",
            implements=("From", "fmt::Display", "Default"),
        ),
        symbol("Stack.push", "METHOD", (3, 3), "pub fn push(&mut self, item: T)"),
        # Methods of a trait impl are as visible as the trait and the type.
        symbol("Stack.from", "METHOD", (6, 6), "fn from(items: Vec<T>) -> Self", exported=True),
        symbol("Remote.far", "METHOD", (10, 10), "fn far(&self)"),
        symbol("tests", "MODULE", (11, 15), "mod tests"),
        symbol("tests.Helper", "STRUCT", (12, 12), "struct Helper"),
        symbol("tests.Helper.new", "METHOD", (13, 13), "fn new() -> Self"),
        symbol("Stack.default", "METHOD", (14, 14), "fn default() -> Self", exported=True),
    )


def test_doc_comments_directly_above_through_attributes() -> None:
    result = parse(
        """
        //! Crate docs are not the first item's: a blank line parts them.

        // A plain comment is no doc.
        fn plain() {}

        /**
         * Block doc,
         *   indented.
         */
        #[inline] // not a doc either
        /// And a line doc under the attribute.
        fn block() {}
        /// Lost: a blank line follows.

        fn gap() {} /// Trailing the line above: not for `next`.
        fn next() {}
        """
    )
    assert [(s.name, s.doc, s.line_start) for s in result.symbols] == [
        ("plain", None, 4),
        ("block", "Block doc,\n  indented.\nAnd a line doc under the attribute.", 10),
        ("gap", None, 15),
        ("next", None, 16),
    ]


def test_use_declarations_are_flattened_per_module_path() -> None:
    result = parse(
        """
        use std::collections::HashMap;
        use crate::a::{b, c as d, e::f, self, g::*};
        use a::b::*;
        use foo;
        use foo as bar;
        pub use self::x::Y;
        use super::{x::Z, w};
        use ::std::io::{self as stdio, Write as _};
        extern crate serde;
        extern crate alloc as core_alloc;
        mod inner;
        fn f() {
            if true { use std::mem::swap; }
        }
        """
    )
    assert result.imports == (
        imported("std::collections", ("HashMap",), 1),
        imported("crate::a", ("b", "c"), 2, alias="a", local_names=("b", "d")),
        imported("crate::a::e", ("f",), 2),
        imported("crate::a::g", ("*",), 2),
        imported("a::b", ("*",), 3),
        imported("foo", (), 4, alias="foo"),
        imported("foo", (), 5, alias="bar"),
        imported("self::x", ("Y",), 6),
        imported("super::x", ("Z",), 7),
        imported("super", ("w",), 7),
        imported("::std::io", ("Write",), 8, alias="stdio", local_names=("_",)),
        imported("serde", (), 9, alias="serde"),
        imported("alloc", (), 10, alias="core_alloc"),
        imported("self::inner", (), 11, alias="inner"),
        imported("std::mem", ("swap",), 13),
    )


def test_references_to_calls_types_and_paths() -> None:
    result = parse(
        """
        use std::io;

        #[tokio::main]
        pub fn run<T: Clone>(items: Vec<T>, out: &mut dyn io::Write) -> io::Result<usize> {
            let total: u64 = helper(items.len());
            self.inner.flush();
            items.iter().count();
            let p = geo::Point { x: 1 };
            let q = Self { x: p };
            let v = Vec::<u8>::with_capacity(limits::MAX);
            let s = x.collect::<String>();
            println!("{}", total);
            match s { Ordering::Less => {}, _ => {} }
            Ok(T::default())
        }
        impl Draw for Canvas {}
        """
    )
    assert references(result) == [
        ("type", "Clone", None, 4, 14, "run"),
        ("type", "Vec", None, 4, 28, "run"),
        ("type", "Write", "io", 4, 54, "run"),
        ("type", "Result", "io", 4, 68, "run"),
        ("call", "helper", None, 5, 21, "run"),
        ("call", "len", "items", 5, 34, "run"),
        ("call", "flush", "self.inner", 6, 15, "run"),
        ("call", "iter", "items", 7, 10, "run"),
        ("call", "count", "<expr>", 7, 17, "run"),
        ("call", "Point", "geo", 8, 17, "run"),
        ("type", "Vec", None, 10, 12, "run"),
        ("call", "with_capacity", "Vec", 10, 23, "run"),
        ("use", "MAX", "limits", 10, 45, "run"),
        ("call", "collect", "x", 11, 14, "run"),
        ("type", "String", None, 11, 24, "run"),
        ("call", "println", None, 12, 4, "run"),
        ("use", "Less", "Ordering", 13, 24, "run"),
        ("call", "Ok", None, 14, 4, "run"),
        ("call", "default", "T", 14, 10, "run"),
        ("type", "Draw", None, 16, 5, None),
        ("type", "Canvas", None, 16, 14, None),
    ]


def test_syntax_errors_keep_what_tree_sitter_recovered() -> None:
    result = parse(
        """
        fn broken() {
            let x = 1
            let y = ;
            call(x);
        }

        /// Still found.
        pub fn after() -> u8 { 1 }
        impl Thing { fn m(&self) { self.n(; } fn o() {} }
        """
    )
    assert result.parse_errors > 0
    assert f"syntax_errors:{result.parse_errors}" in result.problems
    assert [(s.qualname, s.kind, s.doc) for s in result.symbols] == [
        ("broken", "FUNCTION", None),
        ("after", "FUNCTION", "Still found."),
        ("Thing.m", "METHOD", None),
        ("Thing.o", "METHOD", None),
    ]
    assert ("call", "call", None, 4, 4, "broken") in references(result)


def test_garbage_never_raises() -> None:
    result = parse("impl<T for { fn ( -> } struct ; use ::{ mod")
    assert result.language == "rust"
    assert not any(problem.startswith("extract_failed") for problem in result.problems)
