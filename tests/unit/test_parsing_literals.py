"""Facts carried over an edit of a number or a comment equal a whole-file parse's: random
edits of real files' numbers and comments (in function bodies and everywhere else),
compared both ways, and the edits the shortcut must leave to the parse."""

from __future__ import annotations

import random
import re

import pytest

from processors.parsing import ParseResult, parse_file
from processors.parsing.reuse import TreeCache
from processors.parsing.splice import FactsCache
from tests.unit.test_parsing_reuse import REAL, ROOT
from tests.unit.test_parsing_splice import fresh

_NUMBER = re.compile(rb"(?<![\w.])\d+(?![\w.])")
_COMMENT = re.compile(rb"#[^\n]*")  # in a string too: an edit the shortcut must decline
NUMBERS = (b"0", b"7", b"42", b"123456", b"1_000", b"0x1F", b"2j", b"1.5", b"1e3", b"x", b"")
COMMENTS = (b"#", b"# changed", b"# caf\xc3\xa9 " * 5, b"", b"#\nx = 1", b"# type: ignore")


def literal_edit(content: bytes, rng: random.Random) -> bytes:
    """A number or a comment changed: most stay what they were (another number, another
    comment), some become something else (a float, a name, code, nothing)."""
    pattern, palette = (_NUMBER, NUMBERS) if rng.random() < 0.6 else (_COMMENT, COMMENTS)
    found = list(pattern.finditer(content))
    if not found:
        return content + b"\n# appended\n"
    match = rng.choice(found)
    replacement = rng.choice((*palette, match.group() + rng.choice((b"1", b" more"))))
    return content[: match.start()] + replacement + content[match.end() :]


class Parser:
    """parse_file with caches of its own: previous trees kept, facts kept from 0 bytes."""

    def __init__(self) -> None:
        self.trees, self.kept = TreeCache(), FactsCache(min_bytes=0)

    def __call__(self, path: str, content: bytes) -> ParseResult:
        return parse_file(path, content, trees=self.trees, kept=self.kept)


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_of_numbers_and_comments_carry_over_to_the_fresh_facts(seed: int) -> None:
    rng = random.Random(seed)
    parse = Parser()
    for path in rng.sample(REAL, 8):
        good = (ROOT / path).read_bytes()
        parse(path, good)
        for step in range(15):
            content = literal_edit(good, rng)
            expected = fresh(path, content)
            assert parse(path, content) == expected, (path, seed, step)
            if not expected.parse_errors:
                good = content
    # 120 edits: those of a number or comment in a function body that stays one
    assert parse.kept.literals >= 20, parse.kept.literals


MODULE = (
    b"import os\n\nLIMIT = 3  # the limit\n\n\n"
    b"def f(a, b=10):\n"
    b'    """Doc 1."""\n'
    b"    # a comment\n"
    b"    total = os.path.join(a, 20) + g(b, LIMIT)  # trailing\n"
    b"    return total\n\n\n"
    b"class K:\n    SIZE = 5\n\n    def m(self):\n        return f(1, 2)\n"
)


def carried(before: bytes, after: bytes) -> tuple[Parser, ParseResult, ParseResult]:
    """Both versions parsed by one parser (the second from the first's tree), and the
    second's facts checked against a fresh parse."""
    parse = Parser()
    first = parse("m.py", before)
    second = parse("m.py", after)
    assert second == fresh("m.py", after)
    return parse, first, second


def test_a_number_in_a_function_body_moves_the_references_after_it_on_its_line() -> None:
    after = MODULE.replace(b"a, 20)", b"a, 20000)")
    parse, first, second = carried(MODULE, after)
    assert parse.kept.literals == 1
    line = MODULE[: MODULE.index(b"a, 20)")].count(b"\n") + 1
    column = len(b"    total = os.path.join(a, ")
    was = [(r.name, r.column) for r in first.references if r.line == line]
    now = [(r.name, r.column) for r in second.references if r.line == line]
    assert [name for name, _ in now] == [name for name, _ in was]
    assert [c for (_, c) in now] == [c if c < column else c + 3 for (_, c) in was]
    assert sum(c > column for _, c in was) == 2  # g and LIMIT move; os, path, join, a stay
    assert second.references[0] is first.references[0]  # the others are kept as they were


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"# a comment", b"# another comment, longer"),
        (b"# trailing", b"#"),
        (b"return f(1, 2)", b"return f(100, 2)"),  # a method's body
    ],
)
def test_numbers_and_comments_in_function_bodies_carry_over(old: bytes, new: bytes) -> None:
    parse, _, _ = carried(MODULE, MODULE.replace(old, new))
    assert parse.kept.literals == 1


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"b=10", b"b=11"),  # a default value: the signature holds it
        (b"LIMIT = 3", b"LIMIT = 4"),  # module level: the variable's signature holds it
        (b"SIZE = 5", b"SIZE = 6"),  # a class body
        (b"# the limit", b"# the limit is 3"),  # a module-level comment
        (b"Doc 1.", b"Doc 2."),  # a docstring: no number token
        (b"a, 20)", b"a, 2.0)"),  # an integer becomes a float
        (b"a, 20)", b"a, x20)"),  # a number becomes a name: a reference
        (b"# a comment", b"# a comment\n    helper = 1"),  # a comment becomes code
    ],
)
def test_edits_the_shortcut_leaves_to_the_parse(old: bytes, new: bytes) -> None:
    parse, _, _ = carried(MODULE, MODULE.replace(old, new))
    assert parse.kept.literals == 0


def test_without_a_kept_tree_the_file_is_parsed() -> None:
    parse = Parser()
    parse.trees.max_trees = 0
    parse("m.py", MODULE)
    after = MODULE.replace(b"a, 20)", b"a, 21)")
    assert parse("m.py", after) == fresh("m.py", after)
    assert parse.kept.literals == 0


def test_reparse_hands_back_the_previous_tree_and_contents() -> None:
    trees = TreeCache()
    assert trees.reparse("m.py", "python", MODULE) is None  # nothing kept yet
    trees.parse("m.py", "python", MODULE)
    after = MODULE.replace(b"a, 20)", b"a, 2000)")
    reparsed = trees.reparse("m.py", "python", after)
    assert reparsed is not None
    tree, previous = reparsed
    assert previous.content == MODULE and trees.reused == 1
    at = after.index(b"2000")
    node = previous.tree.root_node.descendant_for_byte_range(at, at + 4)
    assert node is not None and (node.type, node.end_byte) == ("integer", at + 4)  # edited
    assert tree.root_node.text == after
