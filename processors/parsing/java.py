"""Java symbols and imports from a tree-sitter tree (references: java_refs).

One walk over the file's top level and the bodies of its types; method bodies are never
entered, so local and anonymous classes are not symbols. Fields are symbols only when
`static` (interface constants and enum constants are), since an instance field is reached
through an object the resolver cannot type. Names in `extends` and `implements` are kept
as written, without type arguments. A doc is the `/** */` comment directly above.
"""

from __future__ import annotations

import re

from tree_sitter import Node

from processors.parsing import java_refs
from processors.parsing.tree import DOC_CHARS, FileFacts
from stores.records import SymbolKind

COMMENT_MARKS = (b"//", b"/*")

_TYPES: dict[str, SymbolKind] = {
    "class_declaration": "CLASS",
    "record_declaration": "CLASS",
    "interface_declaration": "INTERFACE",
    "annotation_type_declaration": "INTERFACE",
    "enum_declaration": "ENUM",
}
_METHODS = frozenset(
    {
        "method_declaration",
        "constructor_declaration",
        "compact_constructor_declaration",
        "annotation_type_element_declaration",
    }
)
_OPEN_MEMBERS = frozenset({"interface_body", "annotation_type_body"})  # implicitly public
_ANNOTATIONS = frozenset({"marker_annotation", "annotation"})
_TYPE_ARGUMENTS = re.compile(r"<[^<>]*>")
_JAVADOC_MARGIN = re.compile(r"\n[ \t]*\*?[ \t]*")
_DOC_SCAN_BYTES = 4 * DOC_CHARS  # ` * ` margins and indentation


def extract(root: Node, facts: FileFacts) -> None:
    """Add the file's package, types, methods, static fields, imports and references."""
    _level(root, None, False, facts)
    java_refs.references(root, facts)


def _level(node: Node, parent: str | None, members_public: bool, facts: FileFacts) -> None:
    """The declarations of a file or of a type body, each with the Javadoc above it."""
    javadoc: Node | None = None
    for child in node.children:
        kind = child.type
        if kind == "block_comment":
            opening = facts.content[child.start_byte : child.start_byte + 4]
            javadoc = child if opening.startswith(b"/**") and opening != b"/**/" else None
            continue
        if kind == "line_comment":
            continue
        doc, javadoc = (_javadoc(javadoc, facts) if javadoc is not None else None), None
        if kind in _METHODS:
            _member(child, "METHOD", parent, members_public, doc, facts)
        elif kind in _TYPES:
            _type(child, _TYPES[kind], parent, members_public, doc, facts)
        elif kind == "field_declaration" or kind == "constant_declaration":
            _fields(child, parent, members_public, doc, facts)
        elif kind == "enum_constant":
            _member(child, "VARIABLE", parent, True, doc, facts)
        elif kind == "enum_body_declarations" or kind == "ERROR":
            _level(child, parent, members_public, facts)
        elif kind == "import_declaration":
            _import(child, facts)
        elif kind == "package_declaration":
            for part in child.named_children:
                if part.type == "scoped_identifier" or part.type == "identifier":
                    facts.package = _dotted(part, facts)


def _type(
    node: Node,
    kind: SymbolKind,
    parent: str | None,
    members_public: bool,
    doc: str | None,
    facts: FileFacts,
) -> None:
    name = body = None
    bases: tuple[str, ...] = ()
    implements: tuple[str, ...] = ()
    for child in node.children:
        part = child.type
        if part == "identifier":
            name = facts.text(child)
        elif part == "superclass":
            bases = _type_names(child, facts)
        elif part == "extends_interfaces":
            bases = _type_names(_first_named(child), facts)
        elif part == "super_interfaces":
            implements = _type_names(_first_named(child), facts)
        elif part.endswith("body"):
            body = child
    public, _, start = _modifiers(node)
    qualname = facts.symbol(
        name or "",
        kind,
        first=node,
        last=node,
        signature=facts.header(node, start, body.start_byte if body else node.end_byte),
        parent=parent,
        doc=doc,
        bases=bases,
        implements=implements,
        exported=members_public or public,
    )
    if body is not None:
        _level(body, qualname, body.type in _OPEN_MEMBERS, facts)


def _member(
    node: Node,
    kind: SymbolKind,
    parent: str | None,
    members_public: bool,
    doc: str | None,
    facts: FileFacts,
) -> None:
    """A method, constructor, annotation element or enum constant."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    public, _, start = _modifiers(node)
    facts.symbol(
        facts.text(name_node) if name_node is not None else "",
        kind,
        first=node,
        last=node,
        signature=facts.header(node, start, body.start_byte if body else node.end_byte, ";"),
        parent=parent,
        doc=doc,
        exported=members_public or public,
    )


def _fields(
    node: Node, parent: str | None, members_public: bool, doc: str | None, facts: FileFacts
) -> None:
    """Static fields (all fields of an interface are) as variables of their type."""
    public, static, start = _modifiers(node)
    if not static and not members_public:
        return
    signature = facts.header(node, start, node.end_byte, ";")
    for declarator in node.children_by_field_name("declarator"):
        name_node = declarator.child_by_field_name("name")
        if name_node is not None:
            facts.symbol(
                facts.text(name_node),
                "VARIABLE",
                first=node,
                last=node,
                signature=signature,
                parent=parent,
                doc=doc,
                exported=members_public or public,
            )


def _modifiers(node: Node) -> tuple[bool, bool, int]:
    """(public, static, where the declaration's text starts after its annotations)."""
    modifiers = node.child(0) if node.child_count else None
    if modifiers is None or modifiers.type != "modifiers":
        return False, False, node.start_byte
    public = static = False
    start = -1
    for child in modifiers.children:
        kind = child.type
        if kind in _ANNOTATIONS or kind.endswith("comment"):
            continue
        if start < 0:
            start = child.start_byte  # `public @Nullable String f()` keeps its annotation
        public = public or kind == "public"
        static = static or kind == "static"
    if start < 0:
        following = modifiers.next_sibling
        start = following.start_byte if following is not None else modifiers.end_byte
    return public, static, start


def _type_names(node: Node | None, facts: FileFacts) -> tuple[str, ...]:
    """The types of an `extends` or `implements` list as written, without type arguments."""
    if node is None:
        return ()
    names = []
    for child in node.named_children:
        if not child.type.endswith("comment"):
            text = "".join(facts.text(child).split())
            while "<" in text:
                stripped = _TYPE_ARGUMENTS.sub("", text)
                if stripped == text:
                    break
                text = stripped
            names.append(text)
    return tuple(names)


def _first_named(node: Node) -> Node | None:
    # Node.named_child raises IndexError past the end instead of returning None.
    return node.named_child(0) if node.named_child_count else None


def _dotted(node: Node, facts: FileFacts) -> str:
    return "".join(facts.text(node).split())  # `a . b` is legal Java; the name is `a.b`


def _import(node: Node, facts: FileFacts) -> None:
    """`import a.b.C;` -> ("a.b", ("C",)); `import static a.b.C.*;` -> ("a.b.C", ("*",))."""
    dotted, wildcard = "", False
    for child in node.children:
        if child.type == "scoped_identifier" or child.type == "identifier":
            dotted = _dotted(child, facts)
        elif child.type == "asterisk":
            wildcard = True
    if not dotted:
        return
    if wildcard:
        facts.import_(dotted, ("*",), node)
    else:
        module, _, name = dotted.rpartition(".")
        facts.import_(module, (name,), node)


def _javadoc(comment: Node, facts: FileFacts) -> str | None:
    """The text of a `/** */` comment without its markers and leading `*`s, capped."""
    end = min(comment.end_byte - 2, comment.start_byte + _DOC_SCAN_BYTES)
    text = facts.content[comment.start_byte + 3 : end].decode("utf-8", "replace")
    doc = _JAVADOC_MARGIN.sub("\n", text).strip()
    return doc[:DOC_CHARS].strip() or None
