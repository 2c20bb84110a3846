"""Imports of JavaScript, TypeScript and TSX files.

Names are the exported names a file takes from the module, not its local bindings,
so that they can be matched against the other file's symbols:

    import React, {a, b as c} from "m"   -> ("default", "a", "b")
    import * as ns from "m"              -> ("*",)
    import "m"                           -> ()
    export {a, b as c} from "m"          -> ("a", "b")
    export * from "m", export * as n ... -> ("*",)
    const {a, b: c} = require("m")       -> ("a", "b")
    const m = require("m"), import("m")  -> ()
    import fs = require("fs")            -> ()   (TypeScript)

`require(...)` and `import(...)` may sit in any expression. Rather than walk every
expression (or run a query over the whole tree, which measured at a quarter of the parse
time on npm's sources), a regex finds where the text mentions them and tree-sitter is
asked for the node at each place, which drops those in comments and strings.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from processors.parsing.tree import FileFacts

_MENTIONS_CALL = re.compile(rb"\b(require|import)\s*\(")


def import_statement(node: Node, facts: FileFacts) -> None:
    source = node.child_by_field_name("source")
    names: list[str] = []
    for child in node.named_children:
        if child.type == "import_clause":
            names.extend(_clause_names(child, facts))
        elif child.type == "import_require_clause":
            source = child.child_by_field_name("source")
    if source is not None:
        facts.import_(_unquote(facts.text(source)), tuple(names), node)


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


def calls(root: Node, facts: FileFacts) -> None:
    """`require("m")` and `import("m")` with a string literal, anywhere in the file."""
    for mention in _MENTIONS_CALL.finditer(facts.content):
        start, end = mention.span(1)
        word = root.descendant_for_byte_range(start, end)
        if word is None or word.start_byte != start or word.end_byte != end:
            continue  # part of a longer name
        call = word.parent
        if word.type == "import" and call is not None and call.type == "import":
            word, call = call, call.parent  # the keyword token inside the `import` node
        expected = "identifier" if mention.group(1) == b"require" else "import"
        if word.type != expected or call is None or call.type != "call_expression":
            continue  # in a comment or string, or a property `x.require(...)`
        arguments = call.child_by_field_name("arguments")
        source = _first_named(arguments)
        if source is None or source.type != "string" or source.start_byte < word.end_byte:
            continue
        facts.import_(_unquote(facts.text(source)), _destructured(call, facts), call)


def is_require(node: Node | None, facts: FileFacts) -> bool:
    """A bare `require(...)` call: a declaration of it is an import, not a variable."""
    if node is None or node.type != "call_expression":
        return False
    function = node.child_by_field_name("function")
    return function is not None and facts.text(function) == "require"


def _clause_names(clause: Node, facts: FileFacts) -> list[str]:
    names: list[str] = []
    for part in clause.named_children:
        if part.type == "identifier":
            names.append("default")
        elif part.type == "namespace_import":
            names.append("*")
        elif part.type == "named_imports":
            for spec in part.named_children:
                name = spec.child_by_field_name("name")
                if spec.type == "import_specifier" and name is not None:
                    names.append(_unquote(facts.text(name)))
    return names


def _destructured(call: Node, facts: FileFacts) -> tuple[str, ...]:
    """The property names of `const {a, b: c} = require("m")` (also through `await`)."""
    holder = call.parent
    if holder is not None and holder.type == "await_expression":
        holder = holder.parent
    if holder is None or holder.type != "variable_declarator":
        return ()
    pattern = holder.child_by_field_name("name")
    if pattern is None or pattern.type != "object_pattern":
        return ()
    names: list[str] = []
    for part in pattern.named_children:
        if part.type == "shorthand_property_identifier_pattern":
            names.append(facts.text(part))
        elif part.type == "pair_pattern":
            key = part.child_by_field_name("key")
            if key is not None:
                names.append(_unquote(facts.text(key)))
        elif part.type == "object_assignment_pattern":  # {a = 1}
            left = part.child_by_field_name("left")
            if left is not None:
                names.append(facts.text(left))
    return tuple(names)


def _first_named(node: Node | None) -> Node | None:
    # Node.named_child raises IndexError past the end instead of returning None.
    return node.named_child(0) if node is not None and node.named_child_count else None


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        return text[1:-1]
    return text
