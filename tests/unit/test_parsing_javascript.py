"""JavaScript, TypeScript and TSX files: exact symbols, imports and references."""

from __future__ import annotations

from tests.unit.parsing_records import Symbols, imported, references
from tests.unit.parsing_records import parsed as parse

# Not exported unless a test says so: only `export` exports in JavaScript.
symbol = Symbols(exported=lambda name, signature: False)


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
        symbol("Animal", "CLASS", (13, 22), "class Animal extends Base", bases=("Base",)),
        symbol("Animal.speak", "METHOD", (16, 16), "speak = () =>"),
        symbol("Animal.constructor", "METHOD", (17, 17), "constructor(name)"),
        symbol("Animal.name", "METHOD", (18, 18), "get name()"),
        symbol("Animal.walk", "METHOD", (19, 19), "static async *walk()"),
        symbol("Animal.walk.step", "FUNCTION", (19, 19), "function step()"),
        symbol("Animal.#hide", "METHOD", (20, 20), "#hide()"),
        symbol('Animal.["computed"]', "METHOD", (21, 21), '["computed"]()'),
    )
    assert result.imports == (imported("fs", (), 10, alias="fs"),)
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
        symbol("named", "FUNCTION", (1, 1), "export function named()", exported=True),
        symbol(
            "handler",
            "FUNCTION",
            (2, 4),
            "export const handler = async (event) =>",
            exported=True,
        ),
        symbol("counter", "VARIABLE", (5, 5), "export let counter = 0", exported=True),
        symbol("default", "CLASS", (6, 8), "export default class", exported=True),
        symbol("default.render", "METHOD", (7, 7), "render()", exported=True),
    )
    assert parse("d.js", "export default function () {}\n").symbols == (
        symbol("default", "FUNCTION", (1, 1), "export default function ()", exported=True),
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
        imported(
            "react",
            ("default", "useState", "useEffect"),
            1,
            local_names=("React", "useState", "effect"),
        ),
        imported("node:path", ("*",), 2, alias="path"),
        imported("./polyfill", (), 3),
        imported("./types", ("Props",), 4),
        imported("fs", (), 5, alias="fs"),
        imported("./helpers", ("helper", "other"), 6),
        imported("./all", ("*",), 7),
        imported("./namespaced", ("*",), 8),
        imported("path", ("join", "resolve"), 9, local_names=("join", "res")),
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
        symbol("Shape", "INTERFACE", (1, 4), "export interface Shape", exported=True),
        symbol("Shape.area", "METHOD", (2, 2), "area(): number", exported=True),
        symbol("Id", "TYPE", (5, 5), "type Id = string | number"),
        symbol("Color", "ENUM", (6, 6), "export enum Color", exported=True),
        symbol(
            "Geometry.Solid",
            "NAMESPACE",
            (7, 10),
            "namespace Geometry.Solid",
            name="Geometry.Solid",
        ),
        symbol("Geometry.Solid.unit", "VARIABLE", (8, 8), "export const unit = 1", exported=True),
        symbol(
            "Geometry.Solid.volume",
            "FUNCTION",
            (9, 9),
            "export function volume(s: Shape): number",
            exported=True,
        ),
        symbol("legacy", "NAMESPACE", (11, 13), 'declare module "legacy"'),
        symbol("legacy.old", "FUNCTION", (12, 12), "function old(): void"),
        symbol("ambient", "FUNCTION", (14, 14), "declare function ambient(x: number): void"),
        symbol(
            "Base",
            "CLASS",
            (15, 21),
            "export abstract class Base<T> implements Shape",
            exported=True,
            implements=("Shape",),
        ),
        symbol("Base.area", "METHOD", (16, 16), "abstract area(): number", exported=True),
        symbol("Base.name", "METHOD", (17, 18), "name(): string", exported=True),
        symbol("Base.overload", "METHOD", (19, 19), "overload(a: string): void", exported=True),
        symbol("Base.overload", "METHOD", (20, 20), "overload(a: any)", exported=True),
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
        symbol(
            "App",
            "FUNCTION",
            (3, 6),
            "export function App({ n }: { n: number })",
            "The app.",
            exported=True,
        ),
        symbol("Button", "FUNCTION", (7, 7), "export const Button = (p: Props) =>", exported=True),
    )
    assert result.imports == (imported("react", ("default",), 1, local_names=("React",)),)
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
    assert result.symbols == (
        symbol("AppComponent", "CLASS", (1, 4), "export class AppComponent", exported=True),
    )


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
        symbol("Hello", "FUNCTION", (1, 1), "export const Hello = ({ name }) =>", exported=True),
    )


def test_references_of_javascript_and_jsx() -> None:
    result = parse(
        "web/Panel.jsx",
        """
        import React, { useState as useLocal } from "react";
        import * as api from "./api";
        const { format } = require("./format");
        const LIMIT = 10;

        export default class Panel extends React.Component {
          render() {
            const [value] = useLocal(LIMIT);
            this.props.onLoad(api.endpoint, format(value));
            f().g();
            return <api.Frame size={LIMIT}><Row /><div /></api.Frame>;
          }
        }

        function load(LIMIT, api) {
          return new api.Client(LIMIT) && new Map();
        }
        """,
    )
    assert references(result) == [
        ("call", "require", None, 3, 19, None),
        ("type", "Component", "React", 6, 41, "Panel"),
        ("call", "useLocal", None, 8, 20, "Panel.render"),
        ("use", "LIMIT", None, 8, 29, "Panel.render"),
        ("call", "onLoad", "this.props", 9, 15, "Panel.render"),
        ("use", "endpoint", "api", 9, 26, "Panel.render"),
        ("call", "format", None, 9, 36, "Panel.render"),
        ("call", "f", None, 10, 4, "Panel.render"),
        ("call", "g", "<expr>", 10, 8, "Panel.render"),
        ("call", "Frame", "api", 11, 16, "Panel.render"),
        ("use", "LIMIT", None, 11, 28, "Panel.render"),
        ("call", "Row", None, 11, 36, "Panel.render"),
        # load's parameters shadow LIMIT and api: no reads of the module's
        ("call", "Client", "api", 16, 17, "load"),
        ("call", "Map", None, 16, 38, "load"),
    ]
    assert result.imports == (
        imported("react", ("default", "useState"), 1, local_names=("React", "useLocal")),
        imported("./api", ("*",), 2, alias="api"),
        imported("./format", ("format",), 3),
    )
    assert [(s.qualname, s.bases, s.exported) for s in result.symbols] == [
        ("LIMIT", (), False),
        ("Panel", ("React.Component",), True),
        ("Panel.render", (), True),
        ("load", (), False),
    ]


def test_typescript_type_references_and_heritage() -> None:
    result = parse(
        "src/repo.ts",
        """
        import { Store } from "./store";
        import type * as schema from "./schema";

        interface Named extends Base, schema.Entity<Id> {
          name: string;
        }
        type Lookup = Map<string, schema.Row[]> | undefined;

        export class Repo<T extends Named> extends Store<T> implements Named, schema.Paged {
          find(id: Id): Promise<T | null> {
            const row = this.cache.get(id) as schema.Row;
            return Store.wrap<Lookup>(row);
          }
        }
        export { Lookup };
        """,
    )
    # Predefined types (string, null, undefined) and the type parameter T are not references.
    assert references(result) == [
        ("type", "Base", None, 4, 24, "Named"),
        ("type", "Entity", "schema", 4, 37, "Named"),
        ("type", "Id", None, 4, 44, "Named"),
        ("type", "Map", None, 7, 14, "Lookup"),
        ("type", "Row", "schema", 7, 33, "Lookup"),
        ("type", "Named", None, 9, 28, "Repo"),
        ("type", "Store", None, 9, 43, "Repo"),
        ("type", "Named", None, 9, 63, "Repo"),
        ("type", "Paged", "schema", 9, 77, "Repo"),
        ("type", "Id", None, 10, 11, "Repo.find"),
        ("type", "Promise", None, 10, 16, "Repo.find"),
        ("call", "get", "this.cache", 11, 27, "Repo.find"),
        ("type", "Row", "schema", 11, 45, "Repo.find"),
        ("call", "wrap", "Store", 12, 17, "Repo.find"),
        ("type", "Lookup", None, 12, 22, "Repo.find"),
    ]
    assert [(s.qualname, s.bases, s.implements, s.exported) for s in result.symbols] == [
        ("Named", ("Base", "schema.Entity"), (), False),
        ("Lookup", (), (), True),  # named in the export list
        ("Repo", ("Store",), ("Named", "schema.Paged"), True),
        ("Repo.find", (), (), True),
    ]


def test_reads_of_module_names_and_import_members_in_typescript() -> None:
    result = parse(
        "src/use.tsx",
        """
        import config, { mode } from "./config";
        export const DEFAULTS = { mode, level: config.level };
        export function pick(key = mode): string {
          const config = load();
          return config.get(key) ?? DEFAULTS[key] ?? <Badge.Item on={mode} />;
        }
        """,
    )
    assert references(result) == [
        ("use", "mode", None, 2, 26, "DEFAULTS"),
        ("use", "level", "config", 2, 46, "DEFAULTS"),
        ("use", "mode", None, 3, 27, "pick"),
        ("call", "load", None, 4, 17, "pick"),
        ("call", "get", "config", 5, 16, "pick"),  # the local `config`: no use of the import
        ("use", "DEFAULTS", None, 5, 28, "pick"),
        ("call", "Item", "Badge", 5, 52, "pick"),
        ("use", "mode", None, 5, 61, "pick"),
    ]
