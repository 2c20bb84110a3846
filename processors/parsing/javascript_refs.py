"""References of JavaScript, TypeScript and TSX files, and their `require`/`import()` calls.

One compiled query per grammar finds every candidate in a single pass over the tree:

    f(), a.b.c(), this.m(), f().g()      -> call f, call c "a.b", call m "this", call g "<expr>"
    new X(), new ns.X(), <Foo />, <ns.Foo> -> call X, call X "ns", call Foo, call Foo "ns"
    x: Foo<ns.Bar>, extends B, as T      -> type Foo, type Bar "ns", type B, type T
    ns.NAME (ns an import, not called)   -> use NAME "ns"
    NAME (an import or module-level)     -> use NAME

Predefined types (string, number, ...) are their own node type and never referenced; nor
are the type parameters a file declares (`T` of `f<T>()`), which are local. A bare name is
not a use inside a function or block that binds the same name (a parameter, a `const`).
The same pass finds the `require("m")` and `import("m")` calls, which are imports.
"""

from __future__ import annotations

from tree_sitter import Node, Query, QueryCursor

from processors.parsing import javascript_imports as imports
from processors.parsing.python_refs import EXPRESSION, Captures, Found, record
from processors.parsing.tree import FileFacts, language

_COMMON = """
(call_expression function: (identifier) @call)
(call_expression function: (member_expression
  property: [(property_identifier) (private_property_identifier)] @call.member))
(call_expression function: (import) @import)
(new_expression constructor: (identifier) @call)
(new_expression constructor: (member_expression property: (property_identifier) @call.member))
(decorator (identifier) @call)
(decorator (member_expression property: (property_identifier) @call.member))
(member_expression object: (identifier) property: (property_identifier) @member)
(assignment_expression left: (member_expression property: (property_identifier) @store))
(identifier) @name
(shorthand_property_identifier) @name
[(function_declaration) (generator_function_declaration) (class_declaration)] @declaration
"""
_JSX = """
([(jsx_opening_element name: (identifier) @jsx)
  (jsx_self_closing_element name: (identifier) @jsx)])
([(jsx_opening_element name: (member_expression property: (property_identifier) @jsx.member))
  (jsx_self_closing_element
    name: (member_expression property: (property_identifier) @jsx.member))])
(jsx_closing_element name: (member_expression property: (property_identifier) @store))
"""
_HERITAGE_JS = """
(class_heritage (identifier) @type)
(class_heritage (member_expression property: (property_identifier) @type.member))
"""
_TYPES = """
(extends_clause value: (identifier) @type)
(extends_clause value: (member_expression property: (property_identifier) @type.member))
(type_identifier) @type
(nested_type_identifier name: (type_identifier) @type.nested)
(type_parameter name: (type_identifier) @type.local)
(infer_type (type_identifier) @type.local)
(mapped_type_clause name: (type_identifier) @type.local)
(class_declaration name: (type_identifier) @type.declared)
(abstract_class_declaration name: (type_identifier) @type.declared)
(interface_declaration name: (type_identifier) @type.declared)
(type_alias_declaration name: (type_identifier) @type.declared)
[(abstract_class_declaration) (interface_declaration) (enum_declaration)
 (type_alias_declaration) (function_signature)] @declaration
"""
_SOURCES = {
    "javascript": _COMMON + _JSX + _HERITAGE_JS,
    "typescript": _COMMON + _TYPES,
    "tsx": _COMMON + _JSX + _TYPES,
}
# Parents of an identifier that make it no read: it is referenced otherwise, or it is
# declared, imported, exported or assigned to.
_NOT_READS = frozenset(
    "import_specifier import_clause namespace_import namespace_export export_specifier "
    "export_statement jsx_opening_element jsx_closing_element jsx_self_closing_element "
    "nested_identifier nested_type_identifier labeled_statement internal_module module "
    "enum_declaration".split()
)
# Parents whose identifier children all bind a name in the enclosing function or block.
_BINDS = frozenset("formal_parameters rest_pattern array_pattern catch_clause".split())
_PARAMETERS = frozenset({"required_parameter", "optional_parameter"})  # TypeScript
# Parents whose first child (their `name`, `left` or `pattern`) binds.
_BINDS_FIRST = frozenset({"variable_declarator", "assignment_pattern"})
_DECLARATIONS = frozenset(
    "function_declaration generator_function_declaration class_declaration "
    "function_expression generator_function class".split()
)
_SCOPES = frozenset(
    "statement_block arrow_function function_expression function_declaration "
    "generator_function generator_function_declaration method_definition for_statement "
    "for_in_statement catch_clause".split()
)
_QUALIFIER_BYTES = 200  # a longer object is no dotted name
_TYPE_NAMES = frozenset(
    {"identifier", "type_identifier", "member_expression", "nested_type_identifier"}
)
_QUERIES = {grammar: Query(language(grammar), source) for grammar, source in _SOURCES.items()}
# The extractor is registered for the three grammars alike; the root node's symbol tells
# which one parsed the file (each grammar numbers `program` differently).
_GRAMMAR_OF_ROOT = {
    language(grammar).id_for_node_kind("program", True): grammar for grammar in _SOURCES
}


def capture(root: Node) -> Captures:
    """Run the file's grammar's query once; `captures["declaration"]` are the declarations
    (of functions, classes, types) anywhere, which lets the symbol walk skip the blocks
    that hold none."""
    grammar = _GRAMMAR_OF_ROOT.get(root.kind_id, "javascript")
    return QueryCursor(_QUERIES[grammar]).captures(root)


def references(captures: Captures, facts: FileFacts) -> None:
    """Add the `require`/`import()` imports and then the references of the file to `facts`."""
    content = facts.content
    found: Found = {}
    for node in captures.get("call", []):
        name = _text(node, content)
        found[node.start_byte] = (name, "call", None, node)
        if name == "require":
            imports.call(node, facts)
    for node in captures.get("import", []):
        imports.call(node, facts)
    for node in captures.get("call.member", []):
        qualifier = _qualifier(_object(node), content)
        found[node.start_byte] = (_text(node, content), "call", qualifier, node)
    for node in captures.get("jsx", []):  # <div> is an element, <Foo> a component
        name = _text(node, content)
        if name[:1].isupper():
            found[node.start_byte] = (name, "call", None, node)
    for node in captures.get("jsx.member", []):
        name = _text(node, content)
        if name[:1].isupper():
            found[node.start_byte] = (name, "call", _qualifier(_object(node), content), node)
    _types(captures, content, found)
    module_names, bound = _module_names(facts)
    shadows = _names(captures.get("name", []), content, module_names, bound, found)
    stores = {node.start_byte for node in captures.get("store", [])}
    for node in captures.get("member", []) if bound else []:
        start = node.start_byte
        if start in found or start in stores:
            continue
        holder = _object(node)
        held = content[holder.start_byte : holder.end_byte]
        if held in bound and not _shadowed(shadows, held, start):
            found[start] = (_text(node, content), "use", _text(holder, content), node)
    record(facts, found)


def heritage(node: Node, facts: FileFacts) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a class or interface extends and implements, as written: `React.Component`,
    `Base` of `Base<T>`; what is no name (`extends mixin(A)`) is left out."""
    bases: list[str] = []
    implements: list[str] = []
    for child in node.children:
        if child.type == "class_heritage":
            for clause in child.named_children:
                if clause.type == "extends_clause":
                    bases.extend(_type_names(clause.children_by_field_name("value"), facts))
                elif clause.type == "implements_clause":
                    implements.extend(_type_names(clause.named_children, facts))
                else:  # the JavaScript grammar: `extends <expression>`
                    bases.extend(_type_names([clause], facts))
        elif child.type == "extends_type_clause":
            bases.extend(_type_names(child.children_by_field_name("type"), facts))
    return tuple(bases), tuple(implements)


def _type_names(nodes: list[Node], facts: FileFacts) -> list[str]:
    names: list[str] = []
    for node in nodes:
        if node.type == "generic_type":
            node = node.child_by_field_name("name") or node
        if node.type in _TYPE_NAMES:
            names.append("".join(facts.text(node).split()))
    return names


def _types(captures: Captures, content: bytes, found: Found) -> None:
    """Type references: heritage clauses and every type identifier but declared names."""
    for node in (*captures.get("type.member", []), *captures.get("type.nested", [])):
        qualifier = _qualifier(_object(node), content)
        found[node.start_byte] = (_text(node, content), "type", qualifier, node)
    declared = {node.start_byte for node in captures.get("type.declared", [])}
    local = {_text(node, content) for node in captures.get("type.local", [])}
    for node in captures.get("type", []):
        start = node.start_byte
        if start not in found and start not in declared:
            name = _text(node, content)
            if name not in local:
                found[start] = (name, "type", None, node)


def _module_names(facts: FileFacts) -> tuple[set[bytes], set[bytes]]:
    """The names bound at module level, and those of them an import binds."""
    bound: set[bytes] = set()
    for record_ in facts.imports():
        if record_.alias:
            bound.add(record_.alias.encode())
        bound.update(local.encode() for local, _ in record_.bindings() if local != "*")
    names = {symbol.name.encode() for symbol in facts.symbols() if symbol.parent is None}
    return names | bound, bound


def _names(
    nodes: list[Node], content: bytes, module_names: set[bytes], bound: set[bytes], found: Found
) -> dict[bytes, list[tuple[int, int]]]:
    """Record reads of module-level names; returns where functions and blocks shadow them.
    An import as the object of a member is no read of its own: the member is a use."""
    reads: list[Node] = []
    bindings: list[tuple[Node, Node | None]] = []
    for node in nodes:
        start = node.start_byte
        if start in found or content[start : node.end_byte] not in module_names:
            continue
        parent = node.parent
        if parent is None:
            continue
        kind = parent.type
        if kind in _NOT_READS:
            continue
        if kind == "member_expression":
            if parent.start_byte == start and content[start : node.end_byte] not in bound:
                reads.append(node)  # a module-level object, unless it is called on
        elif kind in _BINDS_FIRST and parent.start_byte == start:
            bindings.append((node, parent))
        elif kind in _BINDS or kind == "pair_pattern":
            bindings.append((node, parent))
        elif kind in _PARAMETERS:  # its `pattern` binds, its default `value` reads
            if parent.child_by_field_name("value") == node:
                reads.append(node)
            else:
                bindings.append((node, parent))
        elif kind in _DECLARATIONS:
            bindings.append((node, parent.parent))
        elif kind == "arrow_function" and parent.child_by_field_name("body") != node:
            bindings.append((node, parent))
        elif kind == "assignment_expression" and parent.start_byte == start:
            continue  # assigned to
        else:
            reads.append(node)
    shadows: dict[bytes, list[tuple[int, int]]] = {}
    for node, holder in bindings:
        scope = _scope(holder)
        if scope is not None:
            name = content[node.start_byte : node.end_byte]
            shadows.setdefault(name, []).append((scope.start_byte, scope.end_byte))
    for node in reads:
        at = node.start_byte
        name = content[at : node.end_byte]
        if _shadowed(shadows, name, at):
            continue
        if node.parent is not None and node.parent.type == "member_expression":
            member = node.next_named_sibling
            if member is not None and member.start_byte in found:
                continue  # `name.f()` is a call on it
        found[at] = (name.decode("utf-8", "replace"), "use", None, node)
    return shadows


def _shadowed(shadows: dict[bytes, list[tuple[int, int]]], name: bytes, at: int) -> bool:
    return any(start <= at < end for start, end in shadows.get(name, ()))


def _scope(node: Node | None) -> Node | None:
    """The function or block `node` is in (or is); None at the top of the module."""
    while node is not None and node.type not in _SCOPES:
        node = node.parent
    return node


def _object(name: Node) -> Node:
    """The object of the member expression (or nested type) whose name is `name`."""
    previous = name.prev_named_sibling
    if previous is None or previous.type == "comment" or previous.type == "optional_chain":
        parent = name.parent
        found = None
        if parent is not None:
            found = parent.child_by_field_name("object") or parent.child_by_field_name("module")
        return found if found is not None else name
    return previous


def _text(node: Node, content: bytes) -> str:
    return content[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _qualifier(node: Node, content: bytes) -> str:
    """`a`, `this`, `a.b` or `this.props` as written (`a?.b` as `a.b`); EXPRESSION else."""
    kind = node.type
    if kind == "identifier" or kind == "this" or kind == "super":
        return _text(node, content)
    if kind not in ("member_expression", "nested_identifier"):
        return EXPRESSION
    if node.end_byte - node.start_byte > _QUALIFIER_BYTES:
        return EXPRESSION
    dotted = "".join(_text(node, content).split()).replace("?.", ".")
    parts = dotted.split(".")
    if all(part.replace("$", "_").removeprefix("#").isidentifier() for part in parts):
        return dotted
    return EXPRESSION
