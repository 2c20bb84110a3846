"""JavaScript, TypeScript and TSX symbols from a tree-sitter tree (imports:
javascript_imports, references: javascript_refs).

One walk over statement lists and class/interface bodies; expressions are entered only
for the bodies of functions bound at the top of a scope. Functions and classes are found
in every scope (nested ones get the enclosing symbol as parent); variables only at the top
level of the module or of a namespace, since `let`/`const` in a block are block-scoped.
An anonymous `export default function` or class is named "default", the name an importer
uses. A declaration whose value is a bare `require(...)` is an import, not a variable.

A symbol is exported when it is declared with `export` (or `export default`) or named in
an `export { ... }` list of the module; a class or interface member is exported with its
class; what is declared inside a function or a block is not.

The reference query runs first (javascript_refs.capture): the declarations it finds let the
walk pass by the function bodies and blocks that declare nothing, most of them.
"""

from __future__ import annotations

import bisect

from tree_sitter import Node

from processors.parsing import javascript_imports as imports
from processors.parsing import javascript_refs
from processors.parsing.tree import DOC_CHARS, SIGNATURE_CHARS, FileFacts, collapse
from stores.records import SymbolKind

COMMENT_MARKS = (b"//", b"/*")

# Scopes: the top of a module or namespace; a block of one; a class or interface body;
# the body of a function.
_TOP, _BLOCK, _MEMBERS, _FUNCTION = "top", "block", "members", "function"

_TRANSPARENT = frozenset(
    "statement_block if_statement else_clause try_statement catch_clause finally_clause "
    "for_statement for_in_statement while_statement do_statement labeled_statement "
    "switch_statement switch_body switch_case switch_default ERROR".split()
)
# What a declaration declares, and how the walk goes on into its body, if it does.
_DECLARES: dict[str, tuple[SymbolKind, str]] = {
    "function_declaration": ("FUNCTION", _FUNCTION),
    "generator_function_declaration": ("FUNCTION", _FUNCTION),
    "function_signature": ("FUNCTION", _FUNCTION),
    "class_declaration": ("CLASS", _MEMBERS),
    "abstract_class_declaration": ("CLASS", _MEMBERS),
    "interface_declaration": ("INTERFACE", _MEMBERS),
    "internal_module": ("NAMESPACE", _TOP),
    "module": ("NAMESPACE", _TOP),
    "enum_declaration": ("ENUM", ""),
    "type_alias_declaration": ("TYPE", ""),
}
# Values that make `const f = ...` or `export default ...` a function or a class.
_VALUES: dict[str, tuple[SymbolKind, str]] = {
    "arrow_function": ("FUNCTION", _FUNCTION),
    "function_expression": ("FUNCTION", _FUNCTION),
    "generator_function": ("FUNCTION", _FUNCTION),
    "class": ("CLASS", _MEMBERS),
}
_VARIABLE: tuple[SymbolKind, str] = ("VARIABLE", "")
_METHOD: tuple[SymbolKind, str] = ("METHOD", _FUNCTION)
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "generator_function"})
_VARIABLES = frozenset({"lexical_declaration", "variable_declaration"})
_METHODS = frozenset({"method_definition", "abstract_method_signature", "method_signature"})
_FIELDS = frozenset({"field_definition", "public_field_definition"})
_BODIES = frozenset({"statement_block", "class_body", "interface_body"})
_PATTERN_NAMES = frozenset({"identifier", "shorthand_property_identifier_pattern"})

Level = tuple[Node, str | None, str]


def extract(root: Node, facts: FileFacts) -> None:
    """Add the file's functions, classes, methods, types, variables, imports and references
    to `facts`."""
    captures = javascript_refs.capture(root)
    declarations = sorted(node.start_byte for node in captures.get("declaration", ()))
    walk = _Walk(facts, imports.export_names(root, facts), declarations)
    walk.stack.append((root, None, _TOP))
    while walk.stack:
        walk.level(*walk.stack.pop())
    javascript_refs.references(captures, facts)


class _Walk:
    """The walk over one file: levels still to visit and the facts found so far."""

    __slots__ = ("declarations", "export_list", "exported", "facts", "stack")

    def __init__(
        self, facts: FileFacts, export_list: frozenset[str], declarations: list[int]
    ) -> None:
        self.facts = facts
        self.stack: list[Level] = []
        self.export_list = export_list  # names of `export { ... }` lists
        self.declarations = declarations  # start bytes of every declaration, in order
        self.exported: set[str] = set()  # qualnames of the exported classes and interfaces

    def level(self, node: Node, parent: str | None, scope: str) -> None:
        """The children of a statement list or a class body, with their leading comments."""
        comments: list[Node] = []
        lead: Node | None = None  # the first decorator of the member that follows
        previous: Node | None = None
        for child in node.children:
            kind = child.type
            if kind == "comment":
                if lead is None and (
                    previous is None or child.start_point.row != previous.end_point.row
                ):
                    comments.append(child)  # not a trailing comment of the line above
                continue
            if kind == "decorator":
                if lead is None:
                    lead = child
                continue
            first = child if lead is None else lead
            doc = _doc(comments, first, self.facts) if comments else None
            if scope is _MEMBERS:
                self.member(child, first, parent, doc)
            else:
                self.statement(child, parent, scope, doc)
            if comments:
                comments = []
            lead, previous = None, child

    def statement(self, node: Node, parent: str | None, scope: str, doc: str | None) -> None:
        kind = node.type
        if kind in _TRANSPARENT:
            if self.declares(node):  # a block declares nothing else we record
                self.stack.append((node, parent, _BLOCK if scope is _TOP else scope))
        elif kind == "import_statement":
            imports.import_statement(node, self.facts)
        elif kind == "export_statement":
            self.export(node, parent, scope, doc)
        elif kind == "ambient_declaration":  # `declare function f(): void;`, `declare module`
            for inner in node.named_children:
                if inner.type != "comment":
                    self.declaration(inner, node, parent, scope, doc)
                    break
        elif kind == "expression_statement":  # the TypeScript grammar's `namespace N {}`
            namespace = _first_named(node)
            if namespace is not None and namespace.type == "internal_module":
                self.declaration(namespace, node, parent, scope, doc)
        else:
            self.declaration(node, node, parent, scope, doc)

    def export(self, node: Node, parent: str | None, scope: str, doc: str | None) -> None:
        source = node.child_by_field_name("source")
        if source is not None:
            imports.export_from(node, source, self.facts)
            return
        declaration = node.child_by_field_name("declaration")
        if declaration is None:
            declaration = node.child_by_field_name("value")  # export default <expression>
            if declaration is None or declaration.type not in _VALUES:
                return
        self.declaration(declaration, node, parent, scope, doc)

    def declaration(
        self, node: Node, outer: Node, parent: str | None, scope: str, doc: str | None
    ) -> None:
        """A declaration `node`, written as `outer` (`export ...`, `declare ...`)."""
        kind = node.type
        if kind in _VARIABLES:
            if scope is _TOP:
                self.variables(node, outer, parent, doc)
            return
        declares = _DECLARES.get(kind)
        if declares is None and outer.type == "export_statement":  # export default <value>
            declares = _VALUES.get(kind)
        if declares is None:
            return
        name_node = node.child_by_field_name("name")
        name = _name(name_node, self.facts) if name_node is not None else "default"
        body = node.child_by_field_name("body")
        header = _header(outer, body, self.facts)
        heritage = javascript_refs.heritage(node, self.facts)
        self.define(name, declares, outer, outer, body, header, parent, doc, scope, heritage)

    def variables(self, node: Node, outer: Node, parent: str | None, doc: str | None) -> None:
        facts = self.facts
        declarators = [
            child for child in node.named_children if child.type == "variable_declarator"
        ]
        if not declarators:
            return
        keyword = facts.header(outer, _start(outer), declarators[0].start_byte)  # "export const"
        for declarator in declarators:
            name_node = declarator.child_by_field_name("name")
            value = declarator.child_by_field_name("value")
            if name_node is None or imports.is_require(value, facts):
                continue
            if value is not None and value.type in _VALUES and name_node.type == "identifier":
                body = value.child_by_field_name("body")
                signature = _header(declarator, body, facts, keyword)
                name, declares = facts.text(name_node), _VALUES[value.type]
                heritage = javascript_refs.heritage(value, facts)
                self.define(
                    name, declares, outer, declarator, body, signature, parent, doc, _TOP, heritage
                )
                continue
            signature = _header(declarator, None, facts, keyword)
            for name in _pattern_names(name_node, facts):
                self.define(name, _VARIABLE, outer, declarator, None, signature, parent, doc, _TOP)

    def member(self, node: Node, first: Node, parent: str | None, doc: str | None) -> None:
        """A member of a class or interface body: methods, and fields holding functions."""
        kind = node.type
        if kind == "ERROR":
            self.stack.append((node, parent, _MEMBERS))
            return
        if kind in _METHODS:
            name_node, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        elif kind in _FIELDS:
            value = node.child_by_field_name("value")
            if value is None or value.type not in _FUNCTION_VALUES:
                return
            name_node = node.child_by_field_name("property") or node.child_by_field_name("name")
            body = value.child_by_field_name("body")
        else:
            return
        if name_node is not None:
            name, signature = _name(name_node, self.facts), _header(node, body, self.facts)
            self.define(name, _METHOD, first, node, body, signature, parent, doc, _MEMBERS)

    def define(
        self,
        name: str,
        declares: tuple[SymbolKind, str],
        first: Node,
        last: Node,
        body: Node | None,
        signature: str,
        parent: str | None,
        doc: str | None,
        scope: str,
        heritage: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
    ) -> None:
        """Record a symbol and, if it has a body of statements or members, walk into it."""
        kind, inner = declares
        if scope is _MEMBERS:
            exported = parent in self.exported
        else:  # `first` is the declaration as written: `export ...`, `declare ...`
            exported = scope is _TOP and (
                first.type == "export_statement" or (parent is None and name in self.export_list)
            )
        qualname = self.facts.symbol(
            name,
            kind,
            first=first,
            last=last,
            signature=signature,
            parent=parent,
            doc=doc,
            bases=heritage[0],
            implements=heritage[1],
            exported=exported,
        )
        if not name:
            return
        if exported and inner is _MEMBERS:
            self.exported.add(qualname or name)
        if inner and body is not None and body.type in _BODIES:
            if inner is not _FUNCTION or self.declares(body):
                self.stack.append((body, qualname, inner))

    def declares(self, node: Node) -> bool:
        """Whether a declaration starts inside `node`: a function body or a block without
        one holds no symbol, and the walk (a third of the extraction time) passes it by."""
        at = bisect.bisect_left(self.declarations, node.start_byte)
        return at < len(self.declarations) and self.declarations[at] < node.end_byte


def _name(node: Node, facts: FileFacts) -> str:
    text = facts.text(node)
    if node.type == "string" and len(text) >= 2:
        return text[1:-1]
    return "".join(text.split())  # `namespace A . B`


def _first_named(node: Node) -> Node | None:
    # Node.named_child raises IndexError past the end instead of returning None.
    return node.named_child(0) if node.named_child_count else None


def _pattern_names(node: Node | None, facts: FileFacts) -> list[str]:
    """Names bound by `x`, `{a, b: c, ...d}` or `[e, [f], g = 1]`."""
    if node is None:
        return []
    if node.type in _PATTERN_NAMES:
        return [facts.text(node)]
    if node.type == "pair_pattern" or node.type == "object_assignment_pattern":
        part = node.child_by_field_name("value") or node.child_by_field_name("left")
        return _pattern_names(part, facts)
    if node.type == "assignment_pattern":
        return _pattern_names(node.child_by_field_name("left"), facts)
    return [name for child in node.named_children for name in _pattern_names(child, facts)]


def _header(outer: Node, body: Node | None, facts: FileFacts, keyword: str = "") -> str:
    end = body.start_byte if body is not None else outer.end_byte
    header = facts.header(outer, _start(outer), end, ";")
    return collapse(f"{keyword} {header}", SIGNATURE_CHARS) if keyword else header


def _start(node: Node) -> int:
    """Where the declaration's own text starts: after any decorators it carries."""
    for child in node.children:
        if child.type != "decorator":
            return child.start_byte
    return node.start_byte


def _doc(comments: list[Node], first: Node, facts: FileFacts) -> str | None:
    """The `/** */` or `//` comments directly above `first`, without comment markers."""
    run: list[str] = []
    row = first.start_point.row
    for comment in reversed(comments):
        text = facts.text(comment)
        if comment.end_point.row < row - 1 or not text.startswith(("/**", "//")):
            break
        run.append(text)
        row = comment.start_point.row
    lines: list[str] = []
    for text in reversed(run):
        if text.startswith("//"):
            lines.append(text.lstrip("/").strip())
            continue
        for line in text[3:].removesuffix("*/").splitlines():
            stripped = line.strip()
            lines.append(stripped[1:].strip() if stripped.startswith("*") else stripped)
    doc = "\n".join(lines).strip()
    return doc[:DOC_CHARS].strip() or None
