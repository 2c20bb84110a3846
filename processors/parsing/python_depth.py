"""Python nested deeper than the parser follows: the definitions lost there, counted.

tree-sitter-python's scanner keeps the open indentation levels on a stack that it
serializes into tree-sitter's 1 KB state buffer: past 512 levels the deeper blocks are a
syntax error and the definitions inside them are lost (1,300 nested functions gave 511
symbols, issue 15). CPython itself refuses more than 100 levels (``IndentationError:
too many levels of indentation``), so no file that runs nests that deep, but a generated
one may. The parse cannot be helped; the loss can be said: `truncation` names it as a
problem of the file, with how many definitions the text holds and how many were kept.
"""

from __future__ import annotations

import re

MAX_INDENT_LEVELS = 512
"""The deepest nesting tree-sitter-python parses (measured: 512 nested functions give
512 symbols, 513 give 511 and a syntax error)."""

# A definition as a line of text: a lexical count (a `def` line inside a string counts
# too), read only when the file nests deeper than the parser follows.
_DEFINITION = re.compile(rb"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+[A-Za-z_]", re.M)


def indent_depth(content: bytes) -> int:
    """The deepest nesting of indentation levels: a stack of widths as Python's
    tokenizer keeps one (blank and comment lines skipped; a tab is one column: the
    number of levels matters here, not their widths)."""
    stack, deepest = [0], 0
    for line in content.split(b"\n"):
        stripped = line.lstrip(b" \t")
        if stripped in (b"", b"\r") or stripped.startswith(b"#"):
            continue
        width = len(line) - len(stripped)
        while width < stack[-1]:
            stack.pop()
        if width > stack[-1]:
            stack.append(width)
            deepest = max(deepest, len(stack) - 1)
    return deepest


def truncation(content: bytes, kept: int) -> str | None:
    """``symbols_truncated:1300 found, 511 kept`` when the file nests deeper than the
    parser follows and holds more definitions than the ``kept`` ones; else None."""
    if indent_depth(content) <= MAX_INDENT_LEVELS:
        return None
    found = len(_DEFINITION.findall(content))
    if found <= kept:
        return None
    return f"symbols_truncated:{found} found, {kept} kept"
