"""References of a Go file: calls, constructions, type positions and package reads.

One compiled query finds every candidate in a single pass over the tree (a Python walk
over every node would cost more than the parse); its captures are paired by byte offsets
rather than by asking each node for its parent or fields:

    f(), pkg.F(), a.b.M(), g().h()     -> call f, call F "pkg", call M "a.b", call h "<expr>"
    T{...}, pkg.T{...}, F[int](x)      -> call T, call T "pkg", call F
    x T, []pkg.T, x.(T), struct{ T }   -> type T, type T "pkg", type T, type T
    pkg.Name (not called)              -> use Name "pkg"

`pkg.Name` is a use only when `pkg` is bound by an import of the file: `x.field` on a local
would flood the references with struct field reads the resolver could never place.
Predeclared types and functions (`int`, `error`, `len`, `append`), type parameters inside
their declaration, and the names of type declarations are never references.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import itemgetter

from tree_sitter import Node, Query, QueryCursor

from processors.parsing.tree import MAX_REFERENCES, FileFacts, language
from stores.records import ReferenceKind

EXPRESSION = "<expr>"
PREDECLARED_TYPES = frozenset(
    "any bool byte comparable complex64 complex128 error float32 float64 int int8 int16"
    " int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr".split()
)
_PREDECLARED = PREDECLARED_TYPES | frozenset(
    "append cap clear close complex copy delete imag len make max min new panic print"
    " println real recover".split()
)
_QUERY = Query(
    language("go"),
    """
    (call_expression function: (identifier) @call)
    (call_expression
      function: (selector_expression field: (field_identifier) @call.field) @call.function)
    (composite_literal type: [(type_identifier) (qualified_type)] @new)
    (composite_literal type: (generic_type type: (_) @new))
    (type_conversion_expression type: (generic_type type: (_) @new))
    (type_identifier) @type
    (qualified_type package: (package_identifier) @qualified.package
      name: (type_identifier) @qualified.name)
    (selector_expression operand: (identifier) @use.package field: (field_identifier) @use)
    (type_parameter_declaration name: (identifier) @type_parameter)
    """,
)
_CHAIN = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*")
_NONE: tuple[Node, ...] = ()

Spans = dict[str, list[tuple[int, int]]]
"""Type parameter names, each with the byte spans of the declarations that declare it."""
_Found = tuple[int, str, ReferenceKind, Node, str | None]


def references(
    root: Node, facts: FileFacts, declared: set[int], packages: set[str], type_parameters: Spans
) -> None:
    """Record the file's references. `declared` holds the end bytes of the names of its
    type declarations, `packages` the names its imports bind, `type_parameters` those the
    walk found (a method's, through its receiver). Recorded in source order when there are
    more than the cap, so that the file keeps its first ones."""
    get = QueryCursor(_QUERY).captures(root).get
    content = facts.content
    _add_type_parameters(get("type_parameter", _NONE), content, type_parameters)
    constructed = {node.end_byte for node in get("new", _NONE)}
    found: list[_Found] = []
    add = found.append

    for node in get("call", _NONE):
        name = _text(node, content)
        if name not in _PREDECLARED:
            add((node.start_byte, name, "call", node, None))
    called: set[int] = set()  # start bytes of the selected names that are called
    function_start = {node.end_byte: node.start_byte for node in get("call.function", _NONE)}
    for node in get("call.field", _NONE):
        start = node.start_byte
        called.add(start)
        qualifier = _qualifier(content[function_start[node.end_byte] : start])
        add((start, _text(node, content), "call", node, qualifier))

    skipped = set(declared)  # and, below, the names of qualified types
    for package, node in _pairs(get("qualified.package", _NONE), get("qualified.name", _NONE)):
        end = node.end_byte
        skipped.add(end)
        kind: ReferenceKind = "call" if end in constructed else "type"
        add((node.start_byte, _text(node, content), kind, node, _text(package, content)))
    for node in get("type", _NONE):
        start, end = node.start_byte, node.end_byte
        if end in skipped:
            continue
        name = content[start:end].decode("utf-8", "replace")
        if name in PREDECLARED_TYPES:
            continue
        spans = type_parameters.get(name)
        if spans is None or not any(low <= start < high for low, high in spans):
            add((start, name, "call" if end in constructed else "type", node, None))

    for package, node in _pairs(get("use.package", _NONE), get("use", _NONE)):
        if node.start_byte not in called:
            qualifier = _text(package, content)
            if qualifier in packages:
                add((node.start_byte, _text(node, content), "use", node, qualifier))

    if len(found) > MAX_REFERENCES:
        found.sort(key=itemgetter(0))
    reference = facts.reference
    for _, name, kind, node, through in found:
        reference(name, kind, node, qualifier=through)


def _text(node: Node, content: bytes) -> str:
    return content[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _start(node: Node) -> int:
    return node.start_byte


def _pairs(firsts: Sequence[Node], seconds: Sequence[Node]) -> zip[tuple[Node, Node]]:
    """The two captures of each match of a pattern whose matches cannot nest (an
    identifier and the name after it), in order: captures do not come in source order."""
    return zip(sorted(firsts, key=_start), sorted(seconds, key=_start), strict=False)


def _qualifier(operand: bytes) -> str:
    """The dotted text before a selected name ('a.b.' -> 'a.b'), or '<expr>'."""
    dotted = "".join(operand.decode("utf-8", "replace").split()).removesuffix(".")
    return dotted if _CHAIN.fullmatch(dotted) else EXPRESSION


def _add_type_parameters(declared: Sequence[Node], content: bytes, spans: Spans) -> None:
    for node in declared:  # type_parameter_declaration < type_parameter_list < declaration
        owner = node.parent
        owner = owner.parent if owner is not None else None
        owner = owner.parent if owner is not None else None
        if owner is not None:
            spans.setdefault(_text(node, content), []).append((owner.start_byte, owner.end_byte))
