"""An edit inside one number or comment of a function body: no fact of the file changes.

The commonest save of a large file changes a constant or a comment, and inside a
function's body neither is a symbol, an import or a reference: the facts stay, but for
the columns of the references after it on its line. The region splice
(processors/parsing/splice.py) cannot take such an edit when one function is most of the
file: sympy's generated `polys/benchmarks/bench_solvers.py` (446 kB) is a few functions
each returning one list, and a save of it was a whole-file extraction, 0.54 s.

`literal_span` asks tree-sitter. The file is re-parsed from its previous tree
(processors/parsing/reuse.py), which also hands back that tree edited to the new
positions; the edit is a literal one when, in both trees, the smallest node holding the
changed bytes is the same token (an integer, a float or a comment: none spans lines) at
the same place, `Tree.changed_ranges` finds no structure changed outside it, and the
token lies in the body of the function that holds it, not in a header (a signature
holds its default values), a decorator, an import, or at module or class level (where an
assignment's text is a variable's signature). A token of the same kind lexed at the same
place leaves the parser the same tokens, so the trees agree everywhere else.
tests/unit/test_parsing_literals.py compares the facts kept this way with a whole-file
parse's over random edits of numbers and comments in real files.
"""

from __future__ import annotations

from tree_sitter import Node, Tree

from processors.parsing.reuse import Previous

TOKENS = frozenset({"integer", "float", "comment"})
"""Tokens that carry no fact in a function body, and never span lines."""
_DEFINITIONS = frozenset({"function_definition", "class_definition", "decorated_definition"})
_IMPORTS = frozenset({"import_statement", "import_from_statement", "future_import_statement"})
_MAX_DEPTH = 10_000  # a tree deeper than this is left to the whole-file parse


def literal_span(previous: Previous, tree: Tree, same: int, new_end: int) -> tuple[int, int] | None:
    """The byte range [start, end) of the new contents' token that holds the whole edit
    (new bytes [same, new_end) in place of the previous contents' differing bytes), when
    the edit is a literal one; else None."""
    root = tree.root_node
    if root.has_error or previous.tree.root_node.has_error:
        return None
    new = _token(root, same, new_end)
    old = _token(previous.tree.root_node, same, new_end)
    if new is None or old is None or new.type not in TOKENS or new.child_count:
        return None
    start, end = new.start_byte, new.end_byte
    if (old.type, old.start_byte, old.end_byte, old.child_count) != (new.type, start, end, 0):
        return None
    if not start <= same <= new_end <= end or new.start_point.row != new.end_point.row:
        return None
    for changed in previous.tree.changed_ranges(tree):
        if changed.start_byte < start or changed.end_byte > end:
            return None
    return (start, end) if in_function_body(root, new) else None


def _token(root: Node, same: int, new_end: int) -> Node | None:
    """The smallest node holding new bytes [same, new_end); for bytes deleted at a token's
    end (nothing new), the token they ended."""
    node = root.descendant_for_byte_range(same, new_end)
    if same == new_end and same and (node is None or node.type not in TOKENS):
        node = root.descendant_for_byte_range(same - 1, same)
    return node


def in_function_body(root: Node, token: Node) -> bool:
    """Whether the nearest definition holding ``token`` is a function entered through its
    body, with no import statement in between. The path is walked down from the root (a
    node's parent is found from the root too, and at the depth of a long expression
    asking each one's would cost the square of it)."""
    cursor = root.walk()
    nearest_definition_body: bool | None = None
    for _ in range(_MAX_DEPTH):
        node = cursor.node
        if node is None:
            return False
        if node.start_byte == token.start_byte and node.end_byte == token.end_byte:
            if node.type == token.type and node.child_count == 0:
                return bool(nearest_definition_body)
        if node.type in _IMPORTS:
            return False
        if cursor.goto_first_child_for_byte(token.start_byte) is None:
            return False
        if node.type in _DEFINITIONS:
            nearest_definition_body = (
                node.type == "function_definition" and cursor.field_name == "body"
            )
    return False
