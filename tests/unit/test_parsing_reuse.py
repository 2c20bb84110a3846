"""A file re-parsed from its previous tree gives the tree, and the facts, of a fresh
parse: random edits of real files, both ways, compared node by node."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tree_sitter import Tree

from processors.parsing import language_for, parse_file
from processors.parsing.reuse import TreeCache, common_prefix, common_suffix
from processors.parsing.tree import parser
from tests.unit.test_records import SOURCES

ROOT = Path(__file__).resolve().parents[2]
# The parsers' own modules: the sample below does not move each time a file is added
# elsewhere in the project (it did: new modules under query/ shifted every seed's picks).
REAL = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "processors" / "parsing").glob("*.py"))


def nodes(tree: Tree) -> list[tuple[str, int, int, bool, bool]]:
    """Every node, in document order: type, byte range, named, missing."""
    found, cursor = [], tree.walk()
    while True:
        node = cursor.node
        assert node is not None
        found.append((node.type, node.start_byte, node.end_byte, node.is_named, node.is_missing))
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return found


def edited(content: bytes, rng: random.Random) -> bytes:
    """One edit an editor might save: a line typed, removed, duplicated or changed."""
    lines = content.split(b"\n")
    at = rng.randrange(len(lines))
    kind = rng.choice(("insert", "delete", "duplicate", "rename", "typo", "append"))
    if kind == "insert":
        lines.insert(at, b" " * (len(lines[at]) - len(lines[at].lstrip())) + b"x_1 = 2")
    elif kind == "delete" and len(lines) > 1:
        del lines[at]
    elif kind == "duplicate":
        lines[at:at] = lines[at : at + rng.randint(1, 8)]
    elif kind == "rename":
        lines[at] = lines[at].replace(b"self", b"this", 1).replace(b"def ", b"def re_", 1)
    elif kind == "typo" and lines[at]:
        column = rng.randrange(len(lines[at]))
        lines[at] = lines[at][:column] + rng.choice((b"(", b"q", b"_", b"1")) + lines[at][column:]
    else:
        lines.append(b"def added_%d():\n    return %d\n" % (at, at))
    return b"\n".join(lines)


@pytest.mark.parametrize("seed", range(6))
def test_edits_of_real_files_reparse_to_the_fresh_tree_and_facts(seed: int) -> None:
    rng = random.Random(seed)
    cache, reused = TreeCache(max_trees=4), 0
    for path in rng.sample(REAL, 8):
        content = (ROOT / path).read_bytes()
        for _ in range(6):
            content = edited(content, rng)
            before = cache.reused
            got = cache.parse(path, "python", content)
            fresh = parser("python").parse(content)
            assert nodes(got) == nodes(fresh), (path, seed)
            reused += cache.reused - before
            assert parse_file(path, content, trees=cache) == parse_file(
                path, content, trees=TreeCache(max_trees=0)
            )
    # Of 48: an edit that breaks the syntax stops the reuse. The files are the project's
    # own, so the count moves as they change (16 to 31 across the six seeds when written).
    assert reused >= 8


@pytest.mark.parametrize("path", sorted(SOURCES))
def test_every_language_reparses_to_the_fresh_tree(path: str) -> None:
    language = language_for(path)
    assert language is not None
    rng, cache = random.Random(path), TreeCache()
    content = SOURCES[path]
    for _ in range(20):
        lines = content.split(b"\n")
        at = rng.randrange(len(lines))
        lines.insert(at, lines[rng.randrange(len(lines))])  # a line copied elsewhere
        content = b"\n".join(lines)
        got = cache.parse(path, language, content)
        assert nodes(got) == nodes(parser(language).parse(content)), content


def test_the_cache_keeps_few_trees_and_little_source() -> None:
    cache = TreeCache(max_trees=2, max_source_bytes=100)
    cache.parse("a.py", "python", b"a = 1\n")
    cache.parse("b.py", "python", b"b = 1\n")
    cache.parse("c.py", "python", b"c = 1\n")
    assert len(cache) == 2  # a.py, the least recently parsed, is gone
    cache.parse("b.py", "python", b"b = 2\n")
    assert cache.reused == 1
    cache.parse("big.py", "python", b"x = 1\n" * 20)  # 120 bytes: never kept
    assert len(cache) == 2
    cache.parse("d.py", "python", b"d = 1\n" * 16)  # 96 bytes: with b.py, 102
    assert len(cache) == 1
    cache.parse("d.py", "javascript", b"d = 1;\n")  # another language: parsed afresh
    assert cache.reused == 1
    cache.forget("d.py")
    assert len(cache) == 0


def test_a_broken_file_is_parsed_afresh() -> None:
    cache = TreeCache()
    cache.parse("a.py", "python", b"def f(:\n    pass\n")
    cache.parse("a.py", "python", b"def f():\n    pass\n")
    assert cache.reused == 0  # the kept tree had errors
    got = cache.parse("a.py", "python", b"def f(:\n    return 1\n")
    assert cache.reused == 0 and got.root_node.has_error  # the new one has errors


@pytest.mark.parametrize(
    ("a", "b", "prefix", "suffix"),
    [
        (b"", b"", 0, 0),
        (b"abc", b"abc", 3, 0),
        (b"abcd", b"abXd", 2, 1),
        (b"abab", b"ab", 2, 0),
        (b"xab", b"ab", 0, 2),
        (b"aaaa", b"aaaaaa", 4, 0),
    ],
)
def test_common_prefix_and_suffix(a: bytes, b: bytes, prefix: int, suffix: int) -> None:
    assert common_prefix(a, b) == prefix
    assert common_suffix(a, b, min(len(a), len(b)) - prefix) == suffix
