"""Python symbols and imports from a tree-sitter tree.

One walk over the statement levels only (module, class and function bodies and the
blocks of compound statements); expressions are never entered, which is what keeps
extraction a fraction of the parse time. Python has no block scope, so `if`, `try`,
`with`, loops and `match` are transparent: a `def` under `if TYPE_CHECKING:` at module
level is a module-level function, and an assignment there a module-level variable.
"""

from __future__ import annotations

import inspect
import re

from tree_sitter import Node

from processors.parsing.tree import DOC_CHARS, FileFacts
from stores.records import SymbolKind

COMMENT_MARKS = (b"#",)

_MODULE, _CLASS, _FUNCTION = "module", "class", "function"

# Statement containers that do not open a scope. ERROR is among them: tree-sitter wraps
# what it could not fit in ERROR nodes, and the definitions it recovered sit inside.
_TRANSPARENT = frozenset(
    {
        "block",
        "if_statement",
        "elif_clause",
        "else_clause",
        "for_statement",
        "while_statement",
        "try_statement",
        "except_clause",
        "except_group_clause",
        "finally_clause",
        "with_statement",
        "match_statement",
        "case_clause",
        "ERROR",
    }
)
_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
_TARGET_LISTS = frozenset({"pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern"})
_STRING_OPENING = re.compile(r"[A-Za-z]*('''|\"\"\"|'|\")")

# A docstring is cut before it is decoded and dedented: a 100 kB one costs no more.
_DOC_SCAN_BYTES = 32 * DOC_CHARS


def extract(root: Node, facts: FileFacts) -> None:
    """Add the module's classes, functions, methods, variables and imports to `facts`."""
    stack: list[tuple[Node, str | None, str]] = [(root, None, _MODULE)]
    while stack:
        node, parent, scope = stack.pop()
        for child in node.children:
            kind = child.type
            if kind in _TRANSPARENT:
                stack.append((child, parent, scope))
            elif kind == "function_definition" or kind == "class_definition":
                stack.append(_definition(child, child, parent, scope, facts))
            elif kind == "decorated_definition":
                definition = child.child_by_field_name("definition")
                if definition is not None:
                    stack.append(_definition(definition, child, parent, scope, facts))
            elif kind in _IMPORTS:
                _import(child, kind, facts)
            elif scope is _MODULE and kind == "expression_statement":
                _assignment(child, facts)
            elif scope is _MODULE and kind == "type_alias_statement":
                _type_alias(child, facts)


def _definition(
    node: Node, outer: Node, parent: str | None, scope: str, facts: FileFacts
) -> tuple[Node, str | None, str]:
    """Record a class or function; returns its body as the next level of the walk."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    name = facts.text(name_node) if name_node is not None else ""
    kind: SymbolKind
    if node.type == "class_definition":
        kind, inner = "CLASS", _CLASS
    else:
        kind, inner = ("METHOD" if scope is _CLASS else "FUNCTION"), _FUNCTION
    qualname = facts.symbol(
        name,
        kind,
        first=outer,
        last=outer,
        signature=facts.header(node, node.start_byte, _header_end(node)),
        parent=parent,
        doc=_docstring(body, facts) if body is not None else None,
    )
    return (body if body is not None else node, qualname, inner)


def _header_end(definition: Node) -> int:
    """Where the header's final colon is: a comment after it belongs to the body."""
    end = definition.end_byte
    for child in definition.children:
        if child.type == ":":
            end = child.start_byte
    return end


def _docstring(body: Node, facts: FileFacts) -> str | None:
    first = _first_named(body)
    while first is not None and first.type == "comment":
        first = first.next_named_sibling
    if first is None or first.type != "expression_statement" or first.named_child_count != 1:
        return None
    string = _first_named(first)
    if string is None or string.type != "string":
        return None
    end = min(string.end_byte, string.start_byte + _DOC_SCAN_BYTES)
    text = facts.content[string.start_byte : end].decode("utf-8", "replace")
    opening = _STRING_OPENING.match(text)
    if opening is None:
        return None
    quote = opening.group(1)
    close = len(text) - len(quote) if text.endswith(quote) else len(text)  # or cut short
    doc = inspect.cleandoc(text[opening.end() : max(close, opening.end())])
    return doc[:DOC_CHARS].strip() or None


def _first_named(node: Node) -> Node | None:
    # Node.named_child raises IndexError past the end instead of returning None.
    return node.named_child(0) if node.named_child_count else None


def _import(node: Node, kind: str, facts: FileFacts) -> None:
    if kind == "import_statement":
        for item in node.children_by_field_name("name"):
            dotted = item.child_by_field_name("name") if item.type == "aliased_import" else item
            if dotted is not None:
                facts.import_(_dotted(dotted, facts), (), node)
        return
    names = tuple(
        _dotted(item.child_by_field_name("name") or item, facts)
        for item in node.children_by_field_name("name")
    )
    if any(child.type == "wildcard_import" for child in node.children):
        names = (*names, "*")
    if kind == "future_import_statement":
        facts.import_("__future__", names, node)
        return
    source = node.child_by_field_name("module_name")
    if source is None:
        return
    if source.type != "relative_import":
        facts.import_(_dotted(source, facts), names, node)
        return
    level, module = 0, ""
    for part in source.children:
        if part.type == "import_prefix":
            level = part.end_byte - part.start_byte
        elif part.type == "dotted_name":
            module = _dotted(part, facts)
    facts.import_(module, names, node, level)


def _dotted(node: Node, facts: FileFacts) -> str:
    # `a . b` is legal Python; the name is `a.b`.
    return "".join(facts.text(node).split())


def _assignment(statement: Node, facts: FileFacts) -> None:
    assignment = _first_named(statement)
    if assignment is None or assignment.type != "assignment":
        return
    signature = facts.header(statement, statement.start_byte, statement.end_byte)
    while assignment is not None and assignment.type == "assignment":  # a = b = 1
        for name in _targets(assignment.child_by_field_name("left"), facts):
            facts.symbol(
                name, "VARIABLE", first=statement, last=statement, signature=signature, parent=None
            )
        assignment = assignment.child_by_field_name("right")


def _targets(node: Node | None, facts: FileFacts) -> list[str]:
    """Plain names bound by an assignment target; attributes and subscripts bind none."""
    if node is None:
        return []
    if node.type == "identifier":
        name = facts.text(node)
        return [] if name == "_" else [name]
    if node.type in _TARGET_LISTS:
        return [name for child in node.named_children for name in _targets(child, facts)]
    return []


def _type_alias(statement: Node, facts: FileFacts) -> None:
    left = statement.child_by_field_name("left")
    if left is None:
        return
    name = facts.text(left).split("[", 1)[0].strip()
    facts.symbol(
        name,
        "TYPE",
        first=statement,
        last=statement,
        signature=facts.header(statement, statement.start_byte, statement.end_byte),
        parent=None,
    )
