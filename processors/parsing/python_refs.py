"""References of a Python file: calls, type positions and reads of module-level names.

One compiled query finds every candidate in a single pass over the tree (a Python walk
over every node would cost more than the parse):

    f(), a.b.f(), self.m(), f().g()      -> call f, call f "a.b", call m "self", call g "<expr>"
    super().m(), super(C, self).m()      -> call m "super"
    @d, @a.d(...)                        -> call d, call d "a"
    x: list[User], -> models.User        -> type list, type User, type User "models"
    class A(Base), except E              -> type Base, type E
    mod.NAME (not called, not assigned)  -> use NAME "mod"
    NAME (imported or module-level)      -> use NAME

Types are referenced as written, builtins included (`list`, `int`, `ValueError`);
string annotations are not parsed; type parameters (`T` of `def f[T]`) are local names.
For bare names the query captures the identifiers of the contexts that read or bind a
name, not every identifier: half as many nodes (attributes alone hold a third of them). A
read is not a use where a function, lambda or comprehension binds the same name (a
parameter, an assignment, a loop target) unless the function declares it `global`.

Cost, against a bare parse of site-packages' 3,800 .py files: the query 0.5x of the parse
(0.33x of it the traversal any query costs), its 710,000 references 0.75x more (0.3x of it
building their pydantic records).
"""

from __future__ import annotations

import bisect

from tree_sitter import Node, Query, QueryCursor

from processors.parsing.tree import FileFacts, language
from stores.records import ReferenceKind

EXPRESSION = "<expr>"
"""The qualifier of a call on something that is not a dotted name: f().g(), x[0].g()."""
SUPER = "super"
"""The qualifier of `super().f()`: resolved in the bases of the enclosing class."""

Found = dict[int, tuple[str, ReferenceKind, "str | None", Node]]
"""References found so far, by the start byte of the name: (name, kind, qualifier, node).
Keyed by position so that a name two patterns match is referenced once, the first way."""
Captures = dict[str, list[Node]]

# Parents whose identifier children are reads.
_READS = (
    "argument_list keyword_argument return_statement binary_operator comparison_operator "
    "boolean_operator not_operator unary_operator subscript slice list tuple set pair "
    "expression_list conditional_expression expression_statement parenthesized_expression "
    "list_splat dictionary_splat await yield raise_statement assert_statement if_statement "
    "elif_clause while_statement if_clause with_item lambda interpolation format_expression "
    "match_statement as_pattern generator_expression list_comprehension set_comprehension"
).split()
# Parents whose identifier children all bind a name in the enclosing scope.
_BINDS = frozenset(
    "parameters lambda_parameters typed_parameter list_splat_pattern dictionary_splat_pattern "
    "pattern_list tuple_pattern list_pattern as_pattern_target".split()
)
# Parents whose first child binds (`x = ...`, `x=1` as a parameter default, `x := ...`).
_BINDS_FIRST = frozenset(
    "assignment augmented_assignment default_parameter typed_default_parameter "
    "named_expression".split()
)
_LOOPS = frozenset({"for_statement", "for_in_clause"})
_DEFINITIONS = frozenset({"function_definition", "class_definition"})
_NAME_CONTEXTS = (*_READS, *sorted(_BINDS_FIRST | _LOOPS))
# How a name is bound, told by the pattern that captures it rather than by asking each
# name's parent: tree-sitter finds a node's parent from the root down, and in a long
# expression (sympy's generated bench_solvers.py: 29,000 names, sums of hundreds of terms)
# asking every name's cost 0.54 s of a 0.75 s extraction.
_BINDINGS = "\n".join(
    [
        *(f"({context} (identifier) @bind)" for context in sorted(_BINDS)),
        *(f"({context} . (identifier) @bind)" for context in sorted(_BINDS_FIRST)),
        *(f"({loop} left: (identifier) @bind)" for loop in sorted(_LOOPS)),
        *(f"({definition} name: (identifier) @bind.definition)" for definition in _DEFINITIONS),
        "(keyword_argument . (identifier) @keyword)",
        "(global_statement (identifier) @global)",
    ]
)
_QUERY = Query(
    language("python"),
    """
    (call function: (identifier) @call)
    (call function: (attribute attribute: (identifier) @call.member))
    (decorator (identifier) @call)
    (decorator (attribute attribute: (identifier) @call.member))
    (type (identifier) @type)
    (generic_type (identifier) @type)
    (splat_type (identifier) @type)
    (type [(attribute) (subscript) (binary_operator) (list) (tuple) (parenthesized_expression)]
      @type.expression)
    (except_clause value: (_) @type.expression)
    (class_definition superclasses: (argument_list) @bases)
    (type_alias_statement left: (type) @definition)
    (function_definition type_parameters: (_) @definition)
    (class_definition type_parameters: (_) @definition)
    (type_alias_statement left: (type (generic_type (type_parameter (type (identifier) @local)))))
    (function_definition type_parameters: (type_parameter (type (identifier) @local)))
    (class_definition type_parameters: (type_parameter (type (identifier) @local)))
    (type_parameter (type (constrained_type . (type (identifier) @local))))
    (attribute object: (identifier) attribute: (identifier) @member)
    (assignment left: (attribute attribute: (identifier) @store))
    (assignment left: (pattern_list (attribute attribute: (identifier) @store)))
    [(function_definition) (class_definition) (import_statement) (import_from_statement)]
      @declaration
    """
    + "\n".join(f"({context} (identifier) @name)" for context in _NAME_CONTEXTS)
    + "\n"
    + _BINDINGS,
)
# Inside a type expression the walk enters these (a `type` node in it the query captures
# itself); a call or a string in it is not a type.
_TYPE_PARTS = frozenset(
    "subscript binary_operator list tuple parenthesized_expression as_pattern "
    "expression_list".split()
)
_NOT_BASES = frozenset({"keyword_argument", "comment", "list_splat", "dictionary_splat"})
_SCOPES = frozenset(
    "function_definition lambda list_comprehension set_comprehension "
    "dictionary_comprehension generator_expression".split()
)
_QUALIFIER_BYTES = 200  # a longer object is no dotted name


def capture(root: Node) -> Captures:
    """Run the query once; `captures["declaration"]` are the definitions and imports
    anywhere, which lets the symbol walk skip the function bodies that hold none."""
    return QueryCursor(_QUERY).captures(root)


def references(captures: Captures, facts: FileFacts, module_names: frozenset[str]) -> None:
    """Add the file's references to `facts`. `module_names` are the names bound at module
    level (definitions, assignments, imports), the only bare names worth a reference."""
    content = facts.content
    found: Found = {}
    for node in captures.get("call", []):
        found[node.start_byte] = (_text(node, content), "call", None, node)
    for node in captures.get("call.member", []):
        qualifier = _qualifier(_object(node), content)
        found[node.start_byte] = (_text(node, content), "call", qualifier, node)
    for node in captures.get("type", []):
        found[node.start_byte] = (_text(node, content), "type", None, node)
    for node in captures.get("type.expression", []):
        _types(node, content, found)
    for node in captures.get("bases", []):
        for base in node.named_children:
            if base.type not in _NOT_BASES:
                _types(base, content, found)
    if "definition" in captures:  # `type A[T] = ...`, `def f[T: int]()`: T is local
        _drop_definitions(captures, content, found)
    stores = {node.start_byte for node in captures.get("store", [])}
    for node in captures.get("member", []):
        start = node.start_byte
        if start not in found and start not in stores:
            found[start] = (_text(node, content), "use", _text(_object(node), content), node)
    if module_names:
        _names(captures, content, module_names, found)
    record(facts, found)


def record(facts: FileFacts, found: Found) -> None:
    """Record `found` in source order (past its cap FileFacts keeps the first ones); it
    works out each one's scope from the symbol spans."""
    for at in sorted(found):
        name, kind, qualifier, node = found[at]
        facts.reference(name, kind, node, qualifier=qualifier)


def _types(node: Node, content: bytes, found: Found) -> None:
    """Type references in a type expression, a base class or an except clause."""
    stack = [node]
    while stack:
        current = stack.pop()
        kind = current.type
        if kind == "identifier":
            found[current.start_byte] = (_text(current, content), "type", None, current)
        elif kind == "attribute":
            name = current.child_by_field_name("attribute")
            qualifier = _qualifier(current.child_by_field_name("object"), content)
            if name is not None and qualifier not in (EXPRESSION, SUPER):
                found[name.start_byte] = (_text(name, content), "type", qualifier, name)
        elif kind in _TYPE_PARTS:
            stack.extend(current.named_children)


def _drop_definitions(captures: Captures, content: bytes, found: Found) -> None:
    """A type alias's own name and the type parameters of a definition are no references,
    nor are the uses of those parameters (`T` of `def f[T](x: T)`), in the whole file."""
    for node in captures["definition"]:
        for start in [at for at in found if node.start_byte <= at < node.end_byte]:
            del found[start]
    local = {_text(node, content) for node in captures.get("local", [])}
    for start, (name, kind, qualifier, _) in list(found.items()):
        if kind == "type" and qualifier is None and name in local:
            del found[start]


def _names(captures: Captures, content: bytes, module_names: frozenset[str], found: Found) -> None:
    """Reads of module-level names, less those a function binds locally."""
    wanted = {name.encode() for name in module_names}

    def named(capture: str) -> list[tuple[Node, bytes]]:
        return [
            (node, text)
            for node in captures.get(capture, ())
            if node.start_byte not in found
            and (text := content[node.start_byte : node.end_byte]) in wanted
        ]

    # (identifier, where it is bound)
    bindings: list[tuple[Node, Node | None]] = [(node, node) for node, _ in named("bind")]
    # A def's own name is bound where the def is.
    bindings += [(node, _grandparent(node)) for node, _ in named("bind.definition")]
    globals_: set[tuple[int, bytes]] = set()  # (scope start, name) declared global
    for node, text in named("global"):
        scope = _scope(node)
        if scope is not None:
            globals_.add((scope.start_byte, text))
    not_reads = {node.start_byte for node, _ in bindings}
    not_reads.update(node.start_byte for node in captures.get("keyword", ()))  # its name
    reads = [(node, text) for node, text in named("name") if node.start_byte not in not_reads]
    shadows: dict[bytes, list[tuple[int, int]]] = {}
    for node, holder in bindings:
        scope = _scope(holder)
        name = content[node.start_byte : node.end_byte]
        if scope is not None and (scope.start_byte, name) not in globals_:
            shadows.setdefault(name, []).append((scope.start_byte, scope.end_byte))
    spans = {name: Spans(scopes) for name, scopes in shadows.items()}
    for node, name in reads:
        at = node.start_byte
        held = spans.get(name)
        if held is None or at not in held:
            found[at] = (name.decode("utf-8", "replace"), "use", None, node)


class Spans:
    """A union of byte ranges [start, end), asked whether it holds a position in log
    time, not by a scan of every range per read: a name bound in many functions read
    many times is quadratic that way (sympy's generated bench_solvers.py, 29,000
    reads: 30 ms of its 670 ms)."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        for start, end in sorted(ranges):
            if self._ends and start <= self._ends[-1]:
                self._ends[-1] = max(self._ends[-1], end)
            else:
                self._starts.append(start)
                self._ends.append(end)

    def __contains__(self, at: int) -> bool:
        i = bisect.bisect_right(self._starts, at) - 1
        return i >= 0 and at < self._ends[i]


def _scope(node: Node | None) -> Node | None:
    """The function, lambda or comprehension `node` is in (or is); None at module level.
    A class body is no scope here: its names are not seen by its methods."""
    while node is not None and node.type not in _SCOPES:
        node = node.parent
    return node


def _grandparent(node: Node) -> Node | None:
    parent = node.parent
    return parent.parent if parent is not None else None


def _object(name: Node) -> Node:
    """The object of the attribute whose name is `name`."""
    previous = name.prev_named_sibling
    if previous is None or previous.type == "comment":
        parent = name.parent
        found = parent.child_by_field_name("object") if parent is not None else None
        return found if found is not None else name
    return previous


def _text(node: Node, content: bytes) -> str:
    return content[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _qualifier(node: Node | None, content: bytes) -> str:
    """A dotted name as written, without whitespace; SUPER for `super()`; EXPRESSION for
    anything else."""
    if node is None:
        return EXPRESSION
    if node.type == "identifier":
        return _text(node, content)
    if node.type == "call":
        return SUPER if _is_super(node, content) else EXPRESSION
    if node.type != "attribute" or node.end_byte - node.start_byte > _QUALIFIER_BYTES:
        return EXPRESSION
    dotted = "".join(_text(node, content).split())
    return dotted if all(part.isidentifier() for part in dotted.split(".")) else EXPRESSION


def _is_super(call: Node, content: bytes) -> bool:
    """`super()`, or `super(C, self)` in the body of class C: the bases of the enclosing
    class. `super(Other, self)` starts elsewhere in the MRO and stays an EXPRESSION."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "identifier" or _text(function, content) != "super":
        return False
    arguments = call.child_by_field_name("arguments")
    given = [] if arguments is None else arguments.named_children
    first = next((child for child in given if child.type != "comment"), None)
    if first is None:
        return True
    if first.type != "identifier":
        return False
    holder = call.parent
    while holder is not None and holder.type != "class_definition":
        holder = holder.parent
    name = holder.child_by_field_name("name") if holder is not None else None
    return name is not None and _text(name, content) == _text(first, content)
