"""JavaScript, TypeScript and TSX files: exact symbols and imports from small sources."""

from __future__ import annotations

from textwrap import dedent

from processors.parsing import ParseResult, parse_file
from stores.records import ImportRecord, SymbolKind, SymbolRecord


def parse(path: str, source: str) -> ParseResult:
    return parse_file(path, dedent(source).lstrip("\n").encode())


def symbol(
    qualname: str,
    kind: SymbolKind,
    lines: tuple[int, int],
    signature: str,
    doc: str | None = None,
    *,
    name: str | None = None,
) -> SymbolRecord:
    """The name is the qualname's last part unless given (`namespace A.B` is named "A.B")."""
    name = name or qualname.rpartition(".")[2]
    return SymbolRecord(
        name=name,
        qualname=qualname,
        kind=kind,
        line_start=lines[0],
        line_end=lines[1],
        signature=signature,
        parent=qualname[: -len(name) - 1] or None,
        doc=doc,
    )


def imported(module: str, names: tuple[str, ...], line: int) -> ImportRecord:
    return ImportRecord(module=module, names=names, level=0, line=line)


def test_functions_classes_methods_and_module_variables() -> None:
    result = parse(
        "app.js",
        """
        function plain(a, b = 1) { return a }
        function* counter() {}
        async function load() {
          function nested() {}
          const notASymbol = 1;
        }
        const arrow = (x) => x * 2, answer = 42;
        var legacy = function () {};
        let {a, b: [c, ...d], e = 1} = source;
        const fs = require("fs");
        if (debug) { var inBlock = 1; function inIf() {} }

        class Animal extends Base {
          static count = 0;
          #secret = 1;
          speak = () => {};
          constructor(name) { super(); }
          get name() { return this._name }
          static async *walk() { function step() {} }
          #hide() {}
          ["computed"]() {}
        }
        """,
    )
    assert result.language == "javascript"
    assert result.symbols == (
        symbol("plain", "FUNCTION", (1, 1), "function plain(a, b = 1)"),
        symbol("counter", "FUNCTION", (2, 2), "function* counter()"),
        symbol("load", "FUNCTION", (3, 6), "async function load()"),
        symbol("load.nested", "FUNCTION", (4, 4), "function nested()"),
        symbol("arrow", "FUNCTION", (7, 7), "const arrow = (x) =>"),
        symbol("answer", "VARIABLE", (7, 7), "const answer = 42"),
        symbol("legacy", "FUNCTION", (8, 8), "var legacy = function ()"),
        symbol("a", "VARIABLE", (9, 9), "let {a, b: [c, ...d], e = 1} = source"),
        symbol("c", "VARIABLE", (9, 9), "let {a, b: [c, ...d], e = 1} = source"),
        symbol("d", "VARIABLE", (9, 9), "let {a, b: [c, ...d], e = 1} = source"),
        symbol("e", "VARIABLE", (9, 9), "let {a, b: [c, ...d], e = 1} = source"),
        symbol("inIf", "FUNCTION", (11, 11), "function inIf()"),
        symbol("Animal", "CLASS", (13, 22), "class Animal extends Base"),
        symbol("Animal.speak", "METHOD", (16, 16), "speak = () =>"),
        symbol("Animal.constructor", "METHOD", (17, 17), "constructor(name)"),
        symbol("Animal.name", "METHOD", (18, 18), "get name()"),
        symbol("Animal.walk", "METHOD", (19, 19), "static async *walk()"),
        symbol("Animal.walk.step", "FUNCTION", (19, 19), "function step()"),
        symbol("Animal.#hide", "METHOD", (20, 20), "#hide()"),
        symbol('Animal.["computed"]', "METHOD", (21, 21), '["computed"]()'),
    )
    assert result.imports == (imported("fs", (), 10),)
    assert (result.parse_errors, result.problems) == (0, ())


def test_exports_and_anonymous_defaults() -> None:
    result = parse(
        "lib.mjs",
        """
        export function named() {}
        export const handler = async (event) => {
          return event;
        };
        export let counter = 0;
        export default class {
          render() {}
        }
        export { named as alias };
        """,
    )
    assert result.symbols == (
        symbol("named", "FUNCTION", (1, 1), "export function named()"),
        symbol("handler", "FUNCTION", (2, 4), "export const handler = async (event) =>"),
        symbol("counter", "VARIABLE", (5, 5), "export let counter = 0"),
        symbol("default", "CLASS", (6, 8), "export default class"),
        symbol("default.render", "METHOD", (7, 7), "render()"),
    )
    assert parse("d.js", "export default function () {}\n").symbols == (
        symbol("default", "FUNCTION", (1, 1), "export default function ()"),
    )


def test_import_names_are_the_exported_names_taken() -> None:
    result = parse(
        "index.ts",
        """
        import React, { useState, useEffect as effect } from "react";
        import * as path from "node:path";
        import "./polyfill";
        import type { Props } from './types';
        import fs = require("fs");
        export { helper, other as renamed } from "./helpers";
        export * from "./all";
        export * as ns from "./namespaced";
        const { join, resolve: res } = require("path");
        const lodash = require("lodash").default;
        async function later() {
          const { parse } = await import("./parser");
          import("./no-binding");
          // require("in-a-comment")
          const s = "require('in-a-string')";
          other.require("a-method");
          requireAll("not-require");
          require(variable);
        }
        """,
    )
    assert result.imports == (
        imported("react", ("default", "useState", "useEffect"), 1),
        imported("node:path", ("*",), 2),
        imported("./polyfill", (), 3),
        imported("./types", ("Props",), 4),
        imported("fs", (), 5),
        imported("./helpers", ("helper", "other"), 6),
        imported("./all", ("*",), 7),
        imported("./namespaced", ("*",), 8),
        imported("path", ("join", "resolve"), 9),
        imported("lodash", (), 10),
        imported("./parser", ("parse",), 12),
        imported("./no-binding", (), 13),
    )
    assert result.symbols == (
        symbol("lodash", "VARIABLE", (10, 10), 'const lodash = require("lodash").default'),
        symbol("later", "FUNCTION", (11, 19), "async function later()"),
    )


def test_doc_is_the_comment_block_directly_above() -> None:
    result = parse(
        "doc.js",
        """
        /* a license header is not a doc */
        function noDoc() {}

        /** Separated by a blank line. */

        function alsoNoDoc() {}
        let x = 1; // trailing comment of x
        function notTrailing() {}
        /**
         * Loads a thing.
         *
         * @param {string} id
         */
        export function load(id) {}
        // line one
        // line two
        class Store {
          /** Saves. */
          save() {}
        }
        """,
    )
    assert [(s.qualname, s.doc) for s in result.symbols] == [
        ("noDoc", None),
        ("alsoNoDoc", None),
        ("x", None),
        ("notTrailing", None),
        ("load", "Loads a thing.\n\n@param {string} id"),
        ("Store", "line one\nline two"),
        ("Store.save", "Saves."),
    ]


def test_typescript_declarations() -> None:
    result = parse(
        "types.ts",
        """
        export interface Shape {
          area(): number;
          name: string;
        }
        type Id = string | number;
        export enum Color { Red, Green }
        namespace Geometry.Solid {
          export const unit = 1;
          export function volume(s: Shape): number { return 0 }
        }
        declare module "legacy" {
          function old(): void;
        }
        declare function ambient(x: number): void;
        export abstract class Base<T> implements Shape {
          abstract area(): number;
          @logged
          name(): string { return "" }
          overload(a: string): void;
          overload(a: any) {}
        }
        """,
    )
    assert result.language == "typescript"
    assert result.symbols == (
        symbol("Shape", "INTERFACE", (1, 4), "export interface Shape"),
        symbol("Shape.area", "METHOD", (2, 2), "area(): number"),
        symbol("Id", "TYPE", (5, 5), "type Id = string | number"),
        symbol("Color", "ENUM", (6, 6), "export enum Color"),
        symbol(
            "Geometry.Solid",
            "NAMESPACE",
            (7, 10),
            "namespace Geometry.Solid",
            name="Geometry.Solid",
        ),
        symbol("Geometry.Solid.unit", "VARIABLE", (8, 8), "export const unit = 1"),
        symbol(
            "Geometry.Solid.volume", "FUNCTION", (9, 9), "export function volume(s: Shape): number"
        ),
        symbol("legacy", "NAMESPACE", (11, 13), 'declare module "legacy"'),
        symbol("legacy.old", "FUNCTION", (12, 12), "function old(): void"),
        symbol("ambient", "FUNCTION", (14, 14), "declare function ambient(x: number): void"),
        symbol("Base", "CLASS", (15, 21), "export abstract class Base<T> implements Shape"),
        symbol("Base.area", "METHOD", (16, 16), "abstract area(): number"),
        symbol("Base.name", "METHOD", (17, 18), "name(): string"),
        symbol("Base.overload", "METHOD", (19, 19), "overload(a: string): void"),
        symbol("Base.overload", "METHOD", (20, 20), "overload(a: any)"),
    )


def test_tsx_components() -> None:
    result = parse(
        "App.tsx",
        """
        import React from "react";
        /** The app. */
        export function App({ n }: { n: number }) {
          const inner = () => <div>{n}</div>;
          return <main>{inner()}</main>;
        }
        export const Button = (p: Props) => <button {...p} />;
        """,
    )
    assert result.language == "tsx"
    assert result.symbols == (
        symbol("App", "FUNCTION", (3, 6), "export function App({ n }: { n: number })", "The app."),
        symbol("Button", "FUNCTION", (7, 7), "export const Button = (p: Props) =>"),
    )
    assert result.imports == (imported("react", ("default",), 1),)
    assert (result.parse_errors, result.problems) == (0, ())


def test_decorated_class_spans_its_decorators() -> None:
    result = parse(
        "c.ts",
        """
        @Component({
          selector: "app",
        })
        export class AppComponent {}
        """,
    )
    assert result.symbols == (symbol("AppComponent", "CLASS", (1, 4), "export class AppComponent"),)


def test_signatures_drop_comments_and_line_breaks_inside_brackets() -> None:
    result = parse(
        "multi.js",
        """
        export async function configure(
          options, // the options
          /* how often */ retries = 3,
        ) {
          // body
        }
        const url = "http://example.com/*not-a-comment*/";
        """,
    )
    assert [s.signature for s in result.symbols] == [
        "export async function configure(options, retries = 3,)",
        'const url = "http://example.com/*not-a-comment*/"',
    ]


def test_jsx_files_use_the_javascript_grammar() -> None:
    result = parse("Hello.jsx", "export const Hello = ({ name }) => <p>Hello {name}</p>;\n")
    assert (result.language, result.parse_errors) == ("javascript", 0)
    assert result.symbols == (
        symbol("Hello", "FUNCTION", (1, 1), "export const Hello = ({ name }) =>"),
    )
