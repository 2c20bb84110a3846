"""Imports of JavaScript, TypeScript and TSX files, and the names a module exports by list.

Names are the exported names a file takes from the module, so that they can be matched
against the other file's symbols; `local_names` are the bindings they get when any differs,
and `alias` the binding of the module itself:

    import React, {a, b as c} from "m"   -> ("default", "a", "b"), local ("React", "a", "c")
    import * as ns from "m"              -> ("*",), alias "ns"
    import "m"                           -> ()
    export {a, b as c} from "m"          -> ("a", "b")      (a re-export binds nothing)
    export * from "m", export * as n ... -> ("*",)
    const {a, b: c} = require("m")       -> ("a", "b"), local ("a", "c")
    const m = require("m"), import("m")  -> (), alias "m" for the first
    import fs = require("fs")            -> (), alias "fs"  (TypeScript)

`require(...)` and `import(...)` may sit in any expression: the reference query finds
them (javascript_refs) and hands each to `call`.
"""

from __future__ import annotations

from tree_sitter import Node

from processors.parsing.tree import FileFacts


def import_statement(node: Node, facts: FileFacts) -> None:
    source = node.child_by_field_name("source")
    names: list[str] = []
    local_names: list[str] = []
    alias: str | None = None
    for child in node.named_children:
        if child.type == "import_clause":
            alias = _clause(child, facts, names, local_names)
        elif child.type == "import_require_clause":
            source = child.child_by_field_name("source")
            bound = _first_named(child)
            if bound is not None and bound.type == "identifier":
                alias = facts.text(bound)
    if source is not None:
        facts.import_(
            _unquote(facts.text(source)),
            tuple(names),
            node,
            alias=alias,
            local_names=tuple(local_names),
        )


def export_from(node: Node, source: Node, facts: FileFacts) -> None:
    """`export ... from "m"`: a re-export is an import of the names it re-exports."""
    names: list[str] = []
    for child in node.children:
        if child.type == "export_clause":
            for spec in child.named_children:
                name = spec.child_by_field_name("name")
                if spec.type == "export_specifier" and name is not None:
                    names.append(_unquote(facts.text(name)))
        elif child.type == "*" or child.type == "namespace_export":
            names.append("*")
    facts.import_(_unquote(facts.text(source)), tuple(names), node)


def export_names(root: Node, facts: FileFacts) -> frozenset[str]:
    """Local names the module exports by name: `export { a, b as c }`, `export default a`."""
    names: set[str] = set()
    for child in root.children:
        if child.type != "export_statement" or child.child_by_field_name("source") is not None:
            continue
        value = child.child_by_field_name("value")
        if value is not None and value.type == "identifier":
            names.add(facts.text(value))
        for clause in child.named_children:
            if clause.type == "export_clause":
                for spec in clause.named_children:
                    name = spec.child_by_field_name("name")
                    if spec.type == "export_specifier" and name is not None:
                        names.add(facts.text(name))
    return frozenset(names)


def call(function: Node, facts: FileFacts) -> None:
    """`require("m")` or `import("m")` with a string literal; `function` is the callee."""
    call = function.parent
    if call is None or call.type != "call_expression":
        return
    source = _first_named(call.child_by_field_name("arguments"))
    if source is None or source.type != "string":
        return
    names, local_names, alias = _bindings(call, facts)
    facts.import_(_unquote(facts.text(source)), names, call, alias=alias, local_names=local_names)


def is_require(node: Node | None, facts: FileFacts) -> bool:
    """A bare `require(...)` call: a declaration of it is an import, not a variable."""
    if node is None or node.type != "call_expression":
        return False
    function = node.child_by_field_name("function")
    return function is not None and facts.text(function) == "require"


def _clause(clause: Node, facts: FileFacts, names: list[str], local_names: list[str]) -> str | None:
    """Add the names of `import a, {b as c}` to the lists; returns `* as ns`'s `ns`."""
    alias: str | None = None
    for part in clause.named_children:
        if part.type == "identifier":
            names.append("default")
            local_names.append(facts.text(part))
        elif part.type == "namespace_import":
            names.append("*")
            local_names.append("*")
            bound = _first_named(part)
            alias = facts.text(bound) if bound is not None else None
        elif part.type == "named_imports":
            for spec in part.named_children:
                name = spec.child_by_field_name("name")
                if spec.type == "import_specifier" and name is not None:
                    local = spec.child_by_field_name("alias") or name
                    names.append(_unquote(facts.text(name)))
                    local_names.append(facts.text(local))
    return alias


def _bindings(call: Node, facts: FileFacts) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
    """What `const m = require("m")` binds (alias "m"), or the property names and local
    names of `const {a, b: c} = require("m")` (also through `await import(...)`)."""
    holder = call.parent
    if holder is not None and holder.type == "await_expression":
        holder = holder.parent
    if holder is None or holder.type != "variable_declarator":
        return (), (), None
    pattern = holder.child_by_field_name("name")
    if pattern is None:
        return (), (), None
    if pattern.type == "identifier":
        return (), (), facts.text(pattern)
    if pattern.type != "object_pattern":
        return (), (), None
    names: list[str] = []
    local_names: list[str] = []
    for part in pattern.named_children:
        if part.type == "shorthand_property_identifier_pattern":
            names.append(facts.text(part))
            local_names.append(names[-1])
        elif part.type == "pair_pattern":
            key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
            if key is not None:
                names.append(_unquote(facts.text(key)))
                if value is not None and value.type == "assignment_pattern":  # {b: c = 1}
                    value = value.child_by_field_name("left")
                bound = value if value is not None and value.type == "identifier" else key
                local_names.append(facts.text(bound))
        elif part.type == "object_assignment_pattern":  # {a = 1}
            left = part.child_by_field_name("left")
            if left is not None:
                names.append(facts.text(left))
                local_names.append(names[-1])
    return tuple(names), tuple(local_names), None


def _first_named(node: Node | None) -> Node | None:
    # Node.named_child raises IndexError past the end instead of returning None.
    return node.named_child(0) if node is not None and node.named_child_count else None


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1]
    return text
