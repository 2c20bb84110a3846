"""Rust symbols from a tree-sitter tree (`use` imports and references: rust_refs).

One walk over item levels only (the file, `mod {}`, `impl`, `trait` and `extern` blocks,
the top of function bodies), never into expressions. ERROR nodes are walked through.

An `impl` block is not a symbol: its functions are methods of the type it names, without
generics or path (`impl<T> fmt::Debug for a::Foo<T>` gives `Foo.fmt`, wherever `Foo` is
declared), except that a plain name in an inline module or a function is the type
declared there (`tests.Helper`). So impls wait until the types of their level are known,
and structs, unions and enums are recorded last, with the traits their impls implement.

`exported`: a `pub` in any form; a trait's items are as visible as the trait, a trait
impl's items are exported (neither can be marked `pub`); `#[macro_export]` macro_rules.
"""

from __future__ import annotations

import textwrap

from tree_sitter import Node

from processors.parsing import rust_refs
from processors.parsing.tree import DOC_CHARS, SIGNATURE_CHARS, FileFacts, collapse
from stores.records import SymbolKind

COMMENT_MARKS = (b"//", b"/*")

# What the items of a level are: a module (the file, `mod x {}`, a function body), an
# inherent impl, a trait impl, a trait, an `extern "C"` block.
_MODULE, _IMPL, _TRAIT_IMPL, _TRAIT, _EXTERN = "module", "impl", "trait_impl", "trait", "extern"
_MEMBERS = frozenset({_IMPL, _TRAIT_IMPL, _TRAIT})
# The symbol kind of an item and the kind of level its body is (None: not walked into).
_KINDS: dict[str, tuple[SymbolKind, str | None]] = {
    "struct_item": ("STRUCT", None),
    "union_item": ("STRUCT", None),
    "enum_item": ("ENUM", None),
    "function_item": ("FUNCTION", _MODULE),
    "function_signature_item": ("FUNCTION", None),
    "trait_item": ("TRAIT", _TRAIT),
    "mod_item": ("MODULE", _MODULE),
    "macro_definition": ("FUNCTION", None),
    "type_item": ("TYPE", None),
    "associated_type": ("TYPE", None),
    "const_item": ("VARIABLE", None),
    "static_item": ("VARIABLE", None),
}
_TYPES = frozenset({"struct_item", "union_item", "enum_item"})  # recorded last
_ITEMS = frozenset([*_KINDS, "impl_item", "foreign_mod_item", "extern_crate_declaration"])
_BOUNDS = frozenset({"type_identifier", "scoped_type_identifier", "generic_type"})
_OPENERS = frozenset({"{", "(", "["})

# (node whose children are items, parent qualname, kind of level, inherited `exported`)
Level = tuple[Node, str | None, str, bool | None]


def extract(root: Node, facts: FileFacts) -> None:
    """Add the file's items, imports and references to `facts`."""
    walk = _Walk(facts)
    walk.stack.append((root, None, _MODULE, None))
    while walk.stack or walk.impls:
        while walk.stack:
            walk.level(*walk.stack.pop())
        impls, walk.impls = walk.impls, []
        for impl, parent in impls:
            walk.impl(impl, parent)
    walk.record_types()
    rust_refs.extract(root, facts, walk.spans)


class _Walk:
    """The walk over one file: levels and impls still to visit, types held back."""

    __slots__ = ("declared", "facts", "implements", "impls", "spans", "stack", "types")

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.stack: list[Level] = []
        self.impls: list[tuple[Node, str | None]] = []
        self.declared: set[str] = set()  # qualnames of the types, traits and aliases
        # type qualname -> (where, trait as written) of its trait impls
        self.implements: dict[str, list[tuple[int, str]]] = {}
        self.types: list[tuple[Node, Node, Node | None, str | None, str | None, bool, str]] = []
        self.spans: list[rust_refs.Span] = []

    def level(self, node: Node, parent: str | None, scope: str, inherited: bool | None) -> None:
        """The items of one level, with their attributes and the comments above them."""
        lead_in: list[Node] = []  # comments and attributes since the previous item
        first: Node | None = None  # the first attribute of the item that follows
        documented = False
        previous_end = -1
        for child in node.children:
            kind = child.type
            if kind == "line_comment" or kind == "block_comment":
                if child.start_point.row != previous_end:  # not trailing the item above
                    lead_in.append(child)
                    documented = documented or _is_doc(child, self.facts)
                continue
            if kind == "attribute_item":
                lead_in.append(child)
                first = first or child
                continue
            if kind in _ITEMS:
                doc = _doc(lead_in, child, self.facts) if documented else None
                self.item(child, first or child, doc, lead_in, (parent, scope, inherited))
            elif kind == "ERROR":
                self.stack.append((child, parent, scope, inherited))
            if lead_in:
                lead_in, first, documented = [], None, False
            previous_end = child.end_point.row

    def item(
        self,
        node: Node,
        first: Node,
        doc: str | None,
        attributes: list[Node],
        where: tuple[str | None, str, bool | None],
    ) -> None:
        """Record one item (`first`: its first attribute, or itself) and queue its body."""
        parent, scope, inherited = where
        kind, facts = node.type, self.facts
        if kind == "impl_item":
            self.impls.append((node, parent))
            return
        body = node.child_by_field_name("body")
        if kind == "foreign_mod_item":
            if body is not None:
                self.stack.append((body, parent, _EXTERN, None))
            return
        if kind == "extern_crate_declaration":
            rust_refs.extern_crate(node, facts)
            return
        name_node = node.child_by_field_name("name")
        name = facts.text(name_node) if name_node is not None else ""
        if not name or name == "_":  # MISSING in broken code; `const _: () = ...;`
            return
        exported = _exported(node, attributes, facts) if inherited is None else inherited
        if kind in _TYPES:
            self.declared.add(f"{parent}.{name}" if parent else name)
            self.types.append((node, first, body, parent, doc, exported, name))
            return
        symbol_kind, inner = _KINDS[kind]
        if scope in _MEMBERS and kind.startswith("function_"):
            symbol_kind = "METHOD"
        qualname = facts.symbol(
            name,
            symbol_kind,
            first=first,
            last=node,
            signature=_signature(node, body, facts),
            parent=parent,
            doc=doc,
            bases=_bases(node, facts) if kind == "trait_item" else (),
            exported=exported,
        )
        self.spans.append((first.start_byte, node.end_byte, qualname or name))
        if kind == "trait_item" or kind == "type_item" or kind == "associated_type":
            self.declared.add(f"{parent}.{name}" if parent else name)
        if kind == "mod_item" and body is None:
            facts.import_(f"self::{name}", (), node, alias=name)
        if inner is not None and body is not None:
            self.stack.append((body, qualname, inner, exported if inner == _TRAIT else None))

    def impl(self, node: Node, parent: str | None) -> None:
        """The functions of an `impl` block, as methods of the type it names."""
        target, body = node.child_by_field_name("type"), node.child_by_field_name("body")
        if target is None or body is None:
            return
        name, plain = _target_name(target, self.facts)
        qualname = f"{parent}.{name}" if parent else name
        owner = qualname if plain and qualname in self.declared else name
        trait = node.child_by_field_name("trait")
        if trait is None:
            self.stack.append((body, owner, _IMPL, None))
            return
        if not any(child.type == "!" for child in node.children):  # `impl !Send for T`
            written = (node.start_byte, _without_generics(trait, self.facts))
            self.implements.setdefault(owner, []).append(written)
        self.stack.append((body, owner, _TRAIT_IMPL, True))

    def record_types(self) -> None:
        """Structs, unions and enums, now that the impls of the file are known."""
        for node, first, body, parent, doc, exported, name in self.types:
            qualname = f"{parent}.{name}" if parent else name
            traits = (trait for _, trait in sorted(self.implements.get(qualname, ())))
            self.facts.symbol(
                name,
                _KINDS[node.type][0],
                first=first,
                last=node,
                signature=_signature(node, body, self.facts),
                parent=parent,
                doc=doc,
                implements=tuple(dict.fromkeys(traits)),
                exported=exported,
            )
            self.spans.append((first.start_byte, node.end_byte, qualname))


def _exported(node: Node, attributes: list[Node], facts: FileFacts) -> bool:
    if node.type == "macro_definition":
        return any(b"macro_export" in facts.content[a.start_byte : a.end_byte] for a in attributes)
    first = node.child(0)  # a visibility modifier comes first
    return first is not None and first.type == "visibility_modifier"


def _signature(node: Node, body: Node | None, facts: FileFacts) -> str:
    """The item's text up to its body (a tuple struct's fields are no body), no comments."""
    end = node.end_byte
    if node.type == "macro_definition":
        end = next((c.start_byte for c in node.children if c.type in _OPENERS), end)
    elif body is not None and body.type != "ordered_field_declaration_list":
        end = body.start_byte
    start = node.start_byte
    text = facts.content[start:end]
    if b"//" not in text and b"/*" not in text:
        return facts.header(node, start, end, ";")
    # FileFacts.header drops comments of type "comment"; Rust's are line_ and block_.
    signature, at = "", start
    for comment_start, comment_end in [*_comments(node, start, end), (end, end)]:
        piece = facts.header(node, at, comment_start, ";")
        if signature and piece and signature[-1] not in "([<" and piece[0] not in ")]>,":
            signature += " "
        signature, at = signature + piece, comment_end
    return collapse(signature, SIGNATURE_CHARS)


def _comments(node: Node, start: int, end: int) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.end_byte <= start or current.start_byte >= end:
            continue
        if current.type == "line_comment" or current.type == "block_comment":
            found.append((current.start_byte, current.end_byte))
        else:
            stack.extend(current.children)
    return sorted(found)


def _bases(trait: Node, facts: FileFacts) -> tuple[str, ...]:
    """The supertraits of `trait A: B + c::D<X> + 'static`: ("B", "c::D")."""
    bounds = trait.child_by_field_name("bounds")
    found = bounds.children if bounds is not None else []
    return tuple(_without_generics(bound, facts) for bound in found if bound.type in _BOUNDS)


def _without_generics(node: Node, facts: FileFacts) -> str:
    if node.type == "generic_type":
        node = node.child_by_field_name("type") or node
    return "".join(facts.text(node).split())


def _target_name(target: Node, facts: FileFacts) -> tuple[str, bool]:
    """The name of the type an `impl` is for, and whether it is written without a path."""
    wrappers = ("reference_type", "pointer_type", "generic_type")  # &T, *const T, T<U>
    while target.type in wrappers and (inner := target.child_by_field_name("type")) is not None:
        target = inner
    if target.type == "scoped_type_identifier":
        name = target.child_by_field_name("name")
        if name is not None:
            return facts.text(name), False
    return " ".join(facts.text(target).split()), target.type == "type_identifier"


def _doc(lead_in: list[Node], node: Node, facts: FileFacts) -> str | None:
    """The doc comments (`///`, `//!`, `/** */`, `/*! */`) directly above an item, through
    its attributes; plain comments in the run are passed over."""
    content, top, end = facts.content, len(lead_in), node.start_byte
    # A line comment ends with its newline: more than one newline to the next is a gap.
    while top and content.count(b"\n", lead_in[top - 1].end_byte - 1, end) <= 1:
        top -= 1
        end = lead_in[top].start_byte
    lines: list[str] = []
    size = 0
    for comment in lead_in[top:]:
        if comment.type == "attribute_item" or not _is_doc(comment, facts):
            continue
        text = facts.text(comment)
        if comment.type == "line_comment":
            lines.append(text[3:].rstrip())
        else:
            block = [
                (line.lstrip()[1:] if line.lstrip().startswith("*") else line).rstrip()
                for line in text[3:].removesuffix("*/").splitlines()
            ]
            lines.extend("\n".join(block).strip("\n").split("\n"))
        size += len(text)
        if size > 2 * DOC_CHARS:  # enough to fill the cut below
            break
    doc = textwrap.dedent("\n".join(lines)).strip()
    return doc[:DOC_CHARS].strip() or None


def _is_doc(comment: Node, facts: FileFacts) -> bool:
    opening = facts.content[comment.start_byte : comment.start_byte + 4]
    if opening.startswith((b"//!", b"/*!")):
        return True
    return opening.startswith((b"///", b"/**")) and opening not in (b"////", b"/***", b"/**/")
