"""The functions a fix changed, from its patch and the sources at the base commit: the
gold of function-level localization where a dataset has none (issue 17).

The Python splits carry ``gold_functions`` (``path::qualname``, the innermost def or
class around each changed line, ``path::<module>`` for a line in none); the
multi-language split carries the fix (``gold_patch``) instead. This derives the same
thing from it, as Gazetteer's own parser sees each file at the base commit, so that a
gold function and a ranked one name a symbol the same way:

- a line the patch removes (or changes: a change is a removal and an insertion) counts
  for the innermost symbol whose lines hold it;
- a pure insertion after old line ``L`` counts for the innermost symbol that holds both
  ``L`` and ``L + 1`` (an insertion inside it); one between two functions, or after a
  function's last line, is in neither: it counts for the symbol around both (a class)
  or for the module;
- a line in no symbol counts for ``path::<module>``.

Symbols are those of `FUNCTION_KINDS` (functions, methods, classes, structs, traits,
...); variables and fields are the lines around them. Only the files given (the base
sources of the gold files) are read; the patch's other files (tests, changelogs, new
files) are left out. Pure: text and bytes in, names out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from processors.parsing import parse_file
from query.search.function_ranking import FUNCTION_KINDS
from stores.records import SymbolRecord

MODULE = "<module>"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(slots=True)
class Changes:
    """One file's old-side changes: lines removed, and the old lines insertions follow
    (0: the top of the file)."""

    removed: set[int] = field(default_factory=set)
    inserted_after: set[int] = field(default_factory=set)


def patch_changes(patch: str) -> dict[str, Changes]:
    """Old path -> what the patch changes in it. A new file (``--- /dev/null``) has no
    old side and is left out."""
    found: dict[str, Changes] = {}
    lines = patch.splitlines()
    current: Changes | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = line[4:].split("\t", 1)[0].strip()
            current = None if old == "/dev/null" else found.setdefault(old[2:], Changes())
            i += 2
            continue
        header = _HUNK.match(line)
        if header is not None:
            i = _hunk(lines, i + 1, header, current)
            continue
        i += 1
    return {
        path: changes
        for path, changes in found.items()
        if changes.removed or changes.inserted_after
    }


def _hunk(lines: Sequence[str], i: int, header: re.Match[str], into: Changes | None) -> int:
    old_count = 1 if header.group(2) is None else int(header.group(2))
    new_count = 1 if header.group(4) is None else int(header.group(4))
    at = int(header.group(1)) if old_count else int(header.group(1)) + 1
    while i < len(lines) and (old_count > 0 or new_count > 0):
        mark = lines[i][:1]
        if mark == "-":
            if into is not None:
                into.removed.add(at)
            at, old_count = at + 1, old_count - 1
        elif mark == "+":
            if into is not None:
                into.inserted_after.add(at - 1)
            new_count -= 1
        elif mark in (" ", ""):
            at, old_count, new_count = at + 1, old_count - 1, new_count - 1
        i += 1  # "\ No newline at end of file" counts for neither side
    return i


def changed_symbols(symbols: Iterable[SymbolRecord], changes: Changes) -> list[str]:
    """The qualnames (`MODULE` for module level) the changes fall in, in line order."""
    defining = [s for s in symbols if s.kind in FUNCTION_KINDS]
    found: dict[str, int] = {}

    def innermost(first: int, last: int) -> None:
        holding = [s for s in defining if s.line_start <= first and last <= s.line_end]
        if not holding:
            found.setdefault(MODULE, 0)
            return
        best = min(holding, key=lambda s: (s.line_end - s.line_start, -s.line_start, s.qualname))
        found.setdefault(best.qualname, best.line_start)

    for line in sorted(changes.removed):
        innermost(line, line)
    for line in sorted(changes.inserted_after - changes.removed):
        innermost(line, line + 1)
    return sorted(found, key=lambda name: (found[name], name))


def changed_functions(patch: str, sources: Mapping[str, bytes]) -> list[str]:
    """``path::qualname`` of every symbol the patch changes in the files of ``sources``
    (old path -> its content at the base commit), files in path order."""
    names: list[str] = []
    for path, changes in sorted(patch_changes(patch).items()):
        content = sources.get(path)
        if content is None:
            continue
        parsed = parse_file(path, content, scope="gold")
        names.extend(f"{path}::{name}" for name in changed_symbols(parsed.symbols, changes))
    return names
