"""Go symbols and imports from a tree-sitter tree (references: go_refs).

One walk over the top level of the file and the specs of its grouped `type`, `const`,
`var` and `import` declarations; function bodies are never entered. A method is named
"Type.Method" with the receiver's base type as parent, wherever that type is declared.
Only package-level constants and variables are symbols. A doc is the `//` block directly
above a declaration (or above a spec inside a group), without compiler directives.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tree_sitter import Node

from processors.parsing import go_refs
from processors.parsing.tree import DOC_CHARS, FileFacts
from stores.records import SymbolKind

COMMENT_MARKS = (b"//", b"/*")

_DIRECTIVE = re.compile(r"//(?:line |extern |export |[a-z0-9]+:[a-z0-9])")
_MAJOR_VERSION = re.compile(r"v\d+")
_IDENTIFIER = re.compile(r"\w*")
_SPECS = ("_spec", "_alias")
_EMBEDDABLE = frozenset({"type_identifier", "qualified_type", "generic_type"})
_DOC_SCAN_BYTES = 32 * DOC_CHARS

_SpecHandler = Callable[[Node, str, str | None], None]


def extract(root: Node, facts: FileFacts) -> None:
    """Add the file's package, functions, methods, types, package-level constants and
    variables, imports and references to `facts`."""
    walk = _Walk(facts)
    walk.level(root)
    go_refs.references(root, facts, walk.declared, walk.packages, walk.type_parameters)


class _Walk:
    """The top-level walk, and what the reference pass needs from it: the end bytes of
    declared type names, the packages the imports bind, and receiver type parameters."""

    __slots__ = ("declared", "facts", "packages", "type_parameters")

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.declared: set[int] = set()
        self.packages: set[str] = set()
        self.type_parameters: dict[str, list[tuple[int, int]]] = {}

    def level(self, node: Node) -> None:
        comments: list[Node] = []
        previous_row = -1
        for child in node.children:
            kind = child.type
            if kind == "comment":
                if child.start_point.row != previous_row:  # not trailing the line above
                    comments.append(child)
                continue
            doc = _doc(comments, child, self.facts) if comments else None
            comments, previous_row = [], child.end_point.row
            if kind == "function_declaration" or kind == "method_declaration":
                self.function(child, doc)
            elif kind == "type_declaration":
                self.specs(child, doc, self.type_spec)
            elif kind == "const_declaration" or kind == "var_declaration":
                self.specs(child, doc, self.value_spec)
            elif kind == "import_declaration":
                self.specs(child, None, self.import_spec)
            elif kind == "package_clause":
                name = child.named_child(0) if child.named_child_count else None
                self.facts.package = self.facts.text(name) if name is not None else None
            elif kind == "ERROR":
                self.level(child)

    def specs(self, node: Node, doc: str | None, handle: _SpecHandler) -> None:
        """The specs of a declaration: with the declaration's doc when it declares one, each
        with the comments above it inside a group `( ... )`."""
        children = node.children
        if len(children) < 2:
            return
        keyword = children[0].type
        if len(children) == 2:
            if not children[1].type.endswith("_list"):  # `const X = 1`
                handle(children[1], keyword, doc)
                return
            children = children[1].children  # `var ( ... )`, `import ( ... )`
        comments: list[Node] = []
        previous_row = -1
        for child in children:
            kind = child.type
            if kind == "comment":
                if child.start_point.row != previous_row:
                    comments.append(child)
                continue
            if kind.endswith(_SPECS):
                handle(child, keyword, _doc(comments, child, self.facts) if comments else None)
            comments, previous_row = [], child.end_point.row

    def function(self, node: Node, doc: str | None) -> None:
        facts = self.facts
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        parent = None
        if node.type == "method_declaration":
            parent, parameters = _receiver(node.child_by_field_name("receiver"), facts)
            for name in parameters:
                self.type_parameters.setdefault(name, []).append((node.start_byte, node.end_byte))
        name = facts.text(name_node) if name_node is not None else ""
        facts.symbol(
            name,
            "METHOD" if parent else "FUNCTION",
            first=node,
            last=node,
            signature=facts.header(
                node, node.start_byte, body.start_byte if body else node.end_byte
            ),
            parent=parent or None,
            doc=doc,
            exported=name[:1].isupper(),
        )

    def type_spec(self, spec: Node, keyword: str, doc: str | None) -> None:
        facts = self.facts
        name_node = spec.child_by_field_name("name")
        shape = spec.child_by_field_name("type")
        if name_node is None:
            return
        self.declared.add(name_node.end_byte)
        kind: SymbolKind = "TYPE"
        end = spec.end_byte
        bases: tuple[str, ...] = ()
        if spec.type == "type_spec" and shape is not None:
            if shape.type == "struct_type":
                kind, end, bases = "STRUCT", _body_start(shape), self.embedded(shape, True)
            elif shape.type == "interface_type":
                kind, end, bases = "INTERFACE", _body_start(shape), self.embedded(shape, False)
        name = facts.text(name_node)
        facts.symbol(
            name,
            kind,
            first=spec,
            last=spec,
            signature=f"{keyword} {facts.header(spec, spec.start_byte, end)}",
            parent=None,
            doc=doc,
            bases=bases,
            exported=name[:1].isupper(),
        )

    def embedded(self, shape: Node, struct: bool) -> tuple[str, ...]:
        """Embedded fields of a struct, or embedded interfaces of an interface."""
        members = shape.named_child(0) if struct and shape.named_child_count else shape
        bases: list[str] = []
        for member in members.named_children if members is not None else ():
            if struct and member.type == "field_declaration":
                embeds = member.child_by_field_name("name") is None
                base = member.child_by_field_name("type") if embeds else None
            elif not struct and member.type == "type_elem" and member.named_child_count == 1:
                base = member.named_child(0)
            else:
                continue
            if base is not None and base.type == "generic_type":
                base = base.child_by_field_name("type")
            if base is not None and base.type in _EMBEDDABLE:
                text = "".join(self.facts.text(base).split())
                if text not in go_refs.PREDECLARED_TYPES:
                    bases.append(text)
        return tuple(bases)

    def value_spec(self, spec: Node, keyword: str, doc: str | None) -> None:
        facts = self.facts
        signature = f"{keyword} {facts.header(spec, spec.start_byte, spec.end_byte)}"
        for name_node in spec.children_by_field_name("name"):
            name = facts.text(name_node)
            if name_node.type == "identifier" and name != "_":
                facts.symbol(
                    name,
                    "VARIABLE",
                    first=spec,
                    last=spec,
                    signature=signature,
                    parent=None,
                    doc=doc,
                    exported=name[:1].isupper(),
                )

    def import_spec(self, spec: Node, keyword: str, doc: str | None) -> None:
        path_node = spec.child_by_field_name("path")
        if path_node is None:
            return
        path = self.facts.text(path_node)[1:-1]
        name_node = spec.child_by_field_name("name")
        alias = self.facts.text(name_node) if name_node is not None else _package_name(path)
        self.packages.add(alias)
        self.facts.import_(path, (), spec, alias=alias)


def _body_start(shape: Node) -> int:
    """Where the `{` of a struct or interface type is."""
    for child in shape.children:
        if child.type == "{" or child.type == "field_declaration_list":
            return child.start_byte
    return shape.end_byte


def _receiver(receiver: Node | None, facts: FileFacts) -> tuple[str, list[str]]:
    """`(l *List[K, V])` -> ("List", ["K", "V"]): the base type and its type parameters."""
    declaration = receiver.named_child(0) if receiver and receiver.named_child_count else None
    shape = declaration.child_by_field_name("type") if declaration is not None else None
    if shape is None:
        return "", []
    text = "".join(facts.text(shape).split()).replace("*", "").replace("(", "").replace(")", "")
    base, _, arguments = text.partition("[")
    return base, [name for name in arguments.rstrip("]").split(",") if name]


def _package_name(path: str) -> str:
    """The name an import binds without an alias, by goimports' rule: the last element, or
    the one before a major version; without a `go-` prefix; up to a non-identifier
    character. 'net/http' -> 'http', 'gopkg.in/yaml.v3' -> 'yaml', 'github.com/go-chi/chi/v5'
    -> 'chi', 'github.com/mattn/go-sqlite3' -> 'sqlite3'."""
    parent, _, base = path.rpartition("/")
    if parent and _MAJOR_VERSION.fullmatch(base):
        base = parent.rpartition("/")[2]
    match = _IDENTIFIER.match(base.removeprefix("go-"))
    return (match.group() if match else "") or base


def _doc(comments: list[Node], first: Node, facts: FileFacts) -> str | None:
    """The run of comments ending on the line above `first`, without comment markers and
    compiler directives (`//go:generate`, `//nolint:...`)."""
    run: list[Node] = []
    row = first.start_point.row
    for comment in reversed(comments):
        if comment.end_point.row != row - 1:
            break
        run.append(comment)
        row = comment.start_point.row
    lines: list[str] = []
    for comment in reversed(run):
        end = min(comment.end_byte, comment.start_byte + _DOC_SCAN_BYTES)
        text = facts.content[comment.start_byte : end].decode("utf-8", "replace")
        if text.startswith("/*"):
            lines.extend(line.strip() for line in text[2:].removesuffix("*/").splitlines())
        elif not _DIRECTIVE.match(text):
            lines.append(text[2:].removeprefix(" ").rstrip())
    doc = "\n".join(lines).strip()
    return doc[:DOC_CHARS].strip() or None
