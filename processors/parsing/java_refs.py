"""References of a Java file: invocations, constructions, type positions and field reads.

One compiled query finds every candidate in a single pass over the tree (a Python walk
over every node would cost more than the parse); its captures are paired by byte offsets
rather than by asking each node for its parent or fields:

    f(), a.b.f(), this.x.f(), g().h()   -> call f, call f "a.b", call f "this.x", call h "<expr>"
    new T(), new a.b.T<>()              -> call T, call T "a.b"
    T x, List<a.b.T>, (T) e, throws T   -> type T, type List, type T "a.b", ...
    @Inject, @javax.inject.Inject       -> type Inject, type Inject "javax.inject"
    Type.FIELD (not called)             -> use FIELD "Type"

`Type.FIELD` is a use only when `Type` is a capitalized identifier, a type by Java's naming
convention: `local.field` and `array.length` would flood the references with reads the
resolver could never place. Annotations are type references: `@Inject` ties a class to
the annotation type as much as a field type does. Primitive types, `var` and type
parameters inside their declaration are never references.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from operator import itemgetter

from tree_sitter import Node, Query, QueryCursor

from processors.parsing.tree import MAX_REFERENCES, FileFacts, language
from stores.records import ReferenceKind

EXPRESSION = "<expr>"
_QUERY = Query(
    language("java"),
    """
    (method_invocation object: (_) @call.object name: (identifier) @call.member)
    (method_invocation !object name: (identifier) @call)
    (object_creation_expression type: [(type_identifier) (scoped_type_identifier)] @new)
    (object_creation_expression
      type: (generic_type [(type_identifier) (scoped_type_identifier)] @new))
    (type_identifier) @type
    (scoped_type_identifier) @scoped
    (field_access object: (identifier) @use.object field: (identifier) @use)
    (type_parameter . (type_identifier) @type_parameter)
    (marker_annotation name: (_) @annotation)
    (annotation name: (_) @annotation)
    """,
)
_CHAIN = re.compile(r"(?:[^\W\d]|\$)[\w$]*(?:\.(?:[^\W\d]|\$)[\w$]*)*")
_NONE: tuple[Node, ...] = ()

_Found = tuple[int, str, ReferenceKind, Node, str | None]


def references(root: Node, facts: FileFacts) -> None:
    """Invocations, constructions, type positions, annotations and `Name.FIELD` reads.
    Recorded in source order when there are more than the cap, so that the file keeps its
    first ones."""
    get = QueryCursor(_QUERY).captures(root).get
    content = facts.content
    found: list[_Found] = []
    add = found.append

    for node in get("call", _NONE):
        add((node.start_byte, _text(node, content), "call", node, None))
    # An invocation's object is the last object to end before its name.
    objects = sorted(get("call.object", _NONE), key=_end)
    at, count, current = 0, len(objects), None
    for node in sorted(get("call.member", _NONE), key=_start):
        start = node.start_byte
        while at < count and objects[at].end_byte <= start:
            current, at = objects[at], at + 1
        qualifier = _qualifier(current, content) if current is not None else EXPRESSION
        add((start, _text(node, content), "call", node, qualifier))

    constructed = {node.end_byte for node in get("new", _NONE)}
    _types(
        get("type", _NONE),
        get("scoped", _NONE),
        get("type_parameter", _NONE),
        constructed,
        content,
        add,
    )

    for node in get("annotation", _NONE):
        qualifier, _, name = _text(node, content).rpartition(".")
        add((node.start_byte, name, "type", node, "".join(qualifier.split()) or None))
    for object_, node in zip(
        sorted(get("use.object", _NONE), key=_start),
        sorted(get("use", _NONE), key=_start),
        strict=False,
    ):  # `a.b` with an identifier `a` cannot nest: the n-th object goes with the n-th field
        type_name = _text(object_, content)
        if type_name[:1].isupper():  # `Type.FIELD`, not `local.field` nor `array.length`
            add((node.start_byte, _text(node, content), "use", node, type_name))

    if len(found) > MAX_REFERENCES:
        found.sort(key=itemgetter(0))
    reference = facts.reference
    for _, name, kind, node, through in found:
        reference(name, kind, node, qualifier=through)


def _types(
    names: Sequence[Node],
    scoped: Sequence[Node],
    parameters: Sequence[Node],
    constructed: set[int],
    content: bytes,
    add: Callable[[_Found], None],
) -> None:
    """Type names, `a.b.C` as ("C", "a.b"); a constructed one (`new C()`) as a call, and
    none that names a type parameter of a declaration around it."""
    # Outermost `a.b.C` spans only: `a.b` inside `a.b.C` is a part of its name.
    spans: list[tuple[int, int, str]] = []  # (start, end, qualifier)
    for node in sorted(scoped, key=_outermost_first):
        start, end = node.start_byte, node.end_byte
        if spans and start < spans[-1][1]:
            continue
        dotted = "".join(_text(node, content).split())
        if _CHAIN.fullmatch(dotted):  # not `Outer<T>.Inner`: its parts are read one by one
            spans.append((start, end, dotted.rpartition(".")[0]))
    scopes: dict[str, list[tuple[int, int]]] = {}
    for node in parameters:  # type_identifier < type_parameter < type_parameters < owner
        owner = node.parent
        for _ in range(2):
            owner = owner.parent if owner is not None else None
        if owner is not None:
            scopes.setdefault(_text(node, content), []).append((owner.start_byte, owner.end_byte))
    starts = [span[0] for span in spans]
    for node in names:
        start, end = node.start_byte, node.end_byte
        qualifier = None
        if starts:
            at = bisect_right(starts, start) - 1
            if at >= 0 and start < spans[at][1]:
                if end != spans[at][1]:
                    continue  # a qualifying part
                qualifier = spans[at][2]
        name = content[start:end].decode("utf-8", "replace")
        if name == "var":
            continue
        owners = scopes.get(name)
        if owners is not None and any(low <= start < high for low, high in owners):
            continue
        add((start, name, "call" if end in constructed else "type", node, qualifier))


def _qualifier(node: Node, content: bytes) -> str:
    """The dotted text of an invocation's object (`a.b`, `this.x`), or '<expr>'."""
    text = content[node.start_byte : node.end_byte].decode("utf-8", "replace")
    if _CHAIN.fullmatch(text):
        return text
    dotted = "".join(text.split())  # `a\n    .b()`
    return dotted if _CHAIN.fullmatch(dotted) else EXPRESSION


def _text(node: Node, content: bytes) -> str:
    return content[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _start(node: Node) -> int:
    return node.start_byte


def _end(node: Node) -> int:
    return node.end_byte


def _outermost_first(node: Node) -> tuple[int, int]:
    return node.start_byte, -node.end_byte
