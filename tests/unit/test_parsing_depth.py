"""Python nested deeper than tree-sitter-python follows: the lost definitions are said.

Issue 15: 1,300 nested functions gave 511 symbols and only ``syntax_errors:1``.
"""

from __future__ import annotations

from processors.indexer import RepoIndex
from processors.parsing import parse_file
from processors.parsing.python_depth import MAX_INDENT_LEVELS, indent_depth, truncation
from tests.factories import Stamp


def nested(depth: int, indent: str = "    ") -> str:
    """``depth`` functions, each defined inside the one before."""
    lines = [indent * i + f"def f{i}():" for i in range(depth)]
    return "\n".join([*lines, indent * depth + "pass", ""])


def test_1300_nested_functions_say_how_many_were_found_and_kept() -> None:
    parsed = parse_file("deep.py", nested(1300).encode())
    assert len(parsed.symbols) == 511
    assert "symbols_truncated:1300 found, 511 kept" in parsed.problems
    assert "syntax_errors:1" in parsed.problems


def test_the_file_record_carries_the_truncation() -> None:
    index, stamp = RepoIndex("app-1"), Stamp()
    stamp.claimed(index)
    delta = index.handle(stamp.changed("gen/deep.py", nested(1300)), now=1.0)
    assert delta is not None
    (record,) = delta.files_upserted
    assert len(record.symbols) == 511
    assert "symbols_truncated:1300 found, 511 kept" in record.problems


def test_as_deep_as_the_parser_follows_nothing_is_lost_or_reported() -> None:
    parsed = parse_file("deep.py", nested(MAX_INDENT_LEVELS, " ").encode())
    assert len(parsed.symbols) == MAX_INDENT_LEVELS
    assert parsed.problems == ()  # one space a level: not even minified


def test_a_syntax_error_in_a_shallow_file_is_no_truncation() -> None:
    source = "def f(:\n    pass\n\ndef g():\n    '''def h():'''\n    return 1\n"
    parsed = parse_file("broken.py", source.encode())
    assert parsed.parse_errors > 0
    assert not [p for p in parsed.problems if p.startswith("symbols_truncated")]


def test_indent_depth_counts_levels_not_widths() -> None:
    assert indent_depth(b"") == 0
    assert indent_depth(nested(3, "\t").encode()) == 3
    assert indent_depth(nested(3, " " * 8).encode()) == 3
    # blank and comment lines do not close a level; a dedent does
    source = b"def f():\n\n# note\n    if x:\n\n        y = 1\n    z = 2\nw = 3\n"
    assert indent_depth(source) == 2
    assert indent_depth(b"a\n b\na\n b\n") == 1
    assert truncation(nested(1300).encode(), kept=1300) is None
    assert truncation(nested(600).encode(), kept=511) == "symbols_truncated:600 found, 511 kept"
