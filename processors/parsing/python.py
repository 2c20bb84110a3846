"""Python symbols and imports from a tree-sitter tree (references: python_refs).

One walk over the statement levels only (module, class and function bodies and the
blocks of compound statements); expressions are never entered, which is what keeps
extraction a fraction of the parse time. Python has no block scope, so `if`, `try`,
`with`, loops and `match` are transparent: a `def` under `if TYPE_CHECKING:` at module
level is a module-level function, and an assignment there a module-level variable.
"""

from __future__ import annotations

import bisect
import inspect
import re
from collections import Counter
from collections.abc import Iterable

from tree_sitter import Node

from processors.parsing import python_refs
from processors.parsing.tree import DOC_CHARS, FileFacts
from stores.records import ImportRecord, SymbolKind, SymbolRecord

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


def extract(root: Node, facts: FileFacts, outside: frozenset[str] = frozenset()) -> None:
    """Add the module's classes, functions, methods, variables, imports and references
    to `facts`. ``outside``: the module-level names of the rest of the file, when
    `root` holds only some of its top-level statements (processors/parsing/splice.py)."""
    captures = python_refs.capture(root)
    facts.whole_file = bool(captures.get("local"))
    # Where definitions and imports start: a function body (or a block in one) holding
    # none is passed by, and most hold none.
    starts = sorted(node.start_byte for node in captures.get("declaration", ()))
    stack: list[tuple[Node, str | None, str]] = [(root, None, _MODULE)]
    while stack:
        node, parent, scope = stack.pop()
        if scope is _FUNCTION:
            at = bisect.bisect_left(starts, node.start_byte)
            if at == len(starts) or starts[at] >= node.end_byte:
                continue
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
    names = module_bindings(facts.symbols(), facts.imports()).keys() | outside
    python_refs.references(captures, facts, frozenset(names))


def module_bindings(
    symbols: Iterable[SymbolRecord], imports: Iterable[ImportRecord]
) -> Counter[str]:
    """Names bound at module level (definitions, assignments and imports), each with the
    number of statements that bind it."""
    names = Counter(symbol.name for symbol in symbols if symbol.parent is None)
    for record in imports:
        if record.alias:
            names[record.alias] += 1
        names.update(local for local, _ in record.bindings() if local != "*")
    return names


def _definition(
    node: Node, outer: Node, parent: str | None, scope: str, facts: FileFacts
) -> tuple[Node, str | None, str]:
    """Record a class or function; returns its body as the next level of the walk."""
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    name = facts.text(name_node) if name_node is not None else ""
    kind: SymbolKind
    bases: tuple[str, ...] = ()
    if node.type == "class_definition":
        kind, inner = "CLASS", _CLASS
        bases = _bases(node.child_by_field_name("superclasses"), facts)
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
        bases=bases,
        exported=_exported(name),
    )
    return (body if body is not None else node, qualname, inner)


def _bases(superclasses: Node | None, facts: FileFacts) -> tuple[str, ...]:
    """Superclasses as written, `Generic[T]` as `Generic`; keyword arguments (metaclass=)
    and what is no dotted name (a call, `*bases`) are not bases."""
    if superclasses is None:
        return ()
    bases: list[str] = []
    for argument in superclasses.named_children:
        if argument.type == "subscript":
            argument = argument.child_by_field_name("value") or argument
        if argument.type == "identifier" or argument.type == "attribute":
            dotted = _dotted(argument, facts)
            if all(part.isidentifier() for part in dotted.split(".")):
                bases.append(dotted)
    return tuple(bases)


def _exported(name: str) -> bool:
    """Python's convention: a leading underscore is private, a dunder is not."""
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


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
    """`import a.b` binds `a`, `import a.b as c` binds `c` (the alias); `from m import
    x as y` takes `x` and binds `y` (its local name)."""
    if kind == "import_statement":
        for item in node.children_by_field_name("name"):
            if item.type == "aliased_import":
                dotted, alias = item.child_by_field_name("name"), item.child_by_field_name("alias")
            else:
                dotted, alias = item, None
            if dotted is not None:
                module = _dotted(dotted, facts)
                bound = facts.text(alias) if alias is not None else module.split(".", 1)[0]
                facts.import_(module, (), node, alias=bound)
        return
    names: list[str] = []
    local_names: list[str] = []
    for item in node.children_by_field_name("name"):
        name = _dotted(item.child_by_field_name("name") or item, facts)
        alias = item.child_by_field_name("alias") if item.type == "aliased_import" else None
        names.append(name)
        local_names.append(facts.text(alias) if alias is not None else name)
    if any(child.type == "wildcard_import" for child in node.children):
        names.append("*")
        local_names.append("*")
    if kind == "future_import_statement":
        facts.import_("__future__", tuple(names), node)
        return
    source = node.child_by_field_name("module_name")
    if source is None:
        return
    level, module = 0, ""
    if source.type != "relative_import":
        module = _dotted(source, facts)
    else:
        for part in source.children:
            if part.type == "import_prefix":
                level = part.end_byte - part.start_byte
            elif part.type == "dotted_name":
                module = _dotted(part, facts)
    facts.import_(module, tuple(names), node, level, local_names=tuple(local_names))


def _dotted(node: Node, facts: FileFacts) -> str:
    # `a . b` is legal Python; the name is `a.b`.
    return "".join(facts.text(node).split())


def _assignment(statement: Node, facts: FileFacts) -> None:
    assignment = _first_named(statement)
    if assignment is None or assignment.type != "assignment":
        return
    signature = facts.header(statement, statement.start_byte, statement.end_byte)
    value_type = _constructor(assignment, facts)
    while assignment is not None and assignment.type == "assignment":  # a = b = 1
        left = assignment.child_by_field_name("left")
        for name in _targets(left, facts):
            facts.symbol(
                name,
                "VARIABLE",
                first=statement,
                last=statement,
                signature=signature,
                parent=None,
                exported=_exported(name),
                value_type=value_type if left is not None and left.type == "identifier" else None,
            )
        assignment = assignment.child_by_field_name("right")


def _constructor(assignment: Node, facts: FileFacts) -> str | None:
    """What `x = Name(...)` or `x = a.Name(...)` calls (`a = b = Name()` included): the
    class a module-level instance is made from when it names one, which lets `x.f()`
    resolve through the class (django's `router`, `apps`, signals, `register`)."""
    value: Node | None = assignment
    while value is not None and value.type == "assignment":
        value = value.child_by_field_name("right")
    if value is None or value.type != "call":
        return None
    function = value.child_by_field_name("function")
    if function is None or function.type not in ("identifier", "attribute"):
        return None
    dotted = _dotted(function, facts)
    return dotted if all(part.isidentifier() for part in dotted.split(".")) else None


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
        exported=_exported(name),
    )
