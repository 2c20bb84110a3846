"""A unified diff (``git diff``'s, or ``diff -u``'s) read into the lines it changes on
its old side, file by file: what impact analysis maps onto the indexed symbols (issue 20).

The old side is the one the index holds (an agent asks before it edits; a reviewer
diffs a branch against the indexed base), so each file's changes are old-side lines:
every removed line, and for an insertion the old line it follows (its line 0: the top
of the file). Context lines change nothing: with git's three lines of context a hunk's
header range is wider than its change, and would blame the function next door.

A new file (``--- /dev/null``) has nothing indexed on its old side; a deleted, renamed
or binary file is changed whole. Paths lose git's ``a/`` and ``b/`` prefixes. Whatever
does not read as a unified diff raises `DiffError` naming the line and the problem.
Pure: text in, values out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

Status = Literal["modified", "added", "deleted", "renamed"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NULL = "/dev/null"


class DiffError(ValueError):
    """The text is not a unified diff; the message names the line and the problem."""


@dataclass(frozen=True, slots=True)
class FileDiff:
    """One file of a diff: its old (indexed) and new paths, how it changed, and the
    old-side lines changed (sorted, distinct; line 0 is an insertion at the top)."""

    old_path: str | None
    new_path: str | None
    status: Status
    lines: tuple[int, ...] = ()
    whole: bool = False
    """Changed whole: deleted, renamed (its importers name the old path) or binary."""

    @property
    def path(self) -> str:
        """The indexed path (the old one), the new path for an added file."""
        found = self.old_path or self.new_path
        assert found is not None
        return found


@dataclass(slots=True)
class _File:
    old: str | None = None
    new: str | None = None
    status: Status = "modified"
    lines: set[int] = field(default_factory=set)
    binary: bool = False
    hunks: int = 0
    headers: bool = False

    def done(self) -> FileDiff:
        status = self.status
        if self.old is None and self.new is not None:
            status = "added"
        elif self.new is None and self.old is not None:
            status = "deleted"
        elif self.old != self.new and status == "modified":
            status = "renamed"
        whole = status in ("deleted", "renamed") or self.binary
        return FileDiff(self.old, self.new, status, tuple(sorted(self.lines)), whole)


def parse_diff(text: str) -> tuple[FileDiff, ...]:
    """The files of a unified diff in the order it lists them. Text before the first
    file (a commit message, as ``git show`` prints it) is left out."""
    files: list[FileDiff] = []
    current: _File | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            if current is not None:
                files.append(_checked(current, i + 1))
            current = _File(*_git_paths(line[len("diff --git ") :]))
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            if current is None or current.headers:
                if current is not None:
                    files.append(_checked(current, i + 1))
                current = _File()
            current.old = _path(line[4:], "a/")
            current.new = _path(lines[i + 1][4:], "b/")
            current.headers = True
            i += 1
        elif line.startswith("@@"):
            if current is None or not current.headers:
                raise DiffError(f"line {i + 1}: a hunk before any '--- a/… +++ b/…' header")
            i = _hunk(lines, i, current)
            continue
        elif current is not None and not current.headers:
            _extended(line, current)
        i += 1
    if current is not None:
        files.append(_checked(current, len(lines)))
    if not files:
        raise DiffError("no file in the diff (expected 'diff --git' or '--- a/… +++ b/…' lines)")
    return tuple(files)


def _git_paths(rest: str) -> tuple[str | None, str | None]:
    """The paths of ``diff --git a/x b/x``: the two halves when they name one file (a
    path may hold spaces); else the ``---``/``+++`` or ``rename`` lines will say."""
    half = (len(rest) - 1) // 2
    a, b = rest[:half], rest[half + 1 :]
    if rest[half : half + 1] == " " and a[2:] == b[2:] and a[:2] == "a/" and b[:2] == "b/":
        return a[2:], b[2:]
    parts = rest.split(" ")
    if len(parts) == 2:
        return _strip(parts[0], "a/"), _strip(parts[1], "b/")
    return None, None


def _hunk(lines: list[str], start: int, current: _File) -> int:
    """Read the hunk at ``lines[start]`` into ``current``; the index after it."""
    header = _HUNK.match(lines[start])
    if header is None:
        raise DiffError(f"line {start + 1}: malformed hunk header {lines[start][:80]!r}")
    old_line, old_count = int(header.group(1)), _count(header.group(2))
    new_count = _count(header.group(4))
    # A hunk of no old lines starts after line l (git's "-l,0"): old lines count from l+1.
    at = old_line if old_count else old_line + 1
    old_left, new_left = old_count, new_count
    i = start + 1
    while i < len(lines) and (old_left > 0 or new_left > 0):
        line = lines[i]
        mark = line[:1]
        if mark == "\\":  # "\ No newline at end of file"
            i += 1
            continue
        if mark == " " or line == "":
            old_left, new_left, at = old_left - 1, new_left - 1, at + 1
        elif mark == "-":
            current.lines.add(at)
            old_left, at = old_left - 1, at + 1
        elif mark == "+":
            current.lines.add(at - 1)  # inserted after the old line before it
            new_left -= 1
        else:
            break
        i += 1
    if old_left != 0 or new_left != 0:
        raise DiffError(
            f"line {start + 1}: hunk {lines[start].split(' @@')[0]} @@ ends early: "
            f"{max(old_left, 0)} old and {max(new_left, 0)} new lines missing"
        )
    while i < len(lines) and lines[i].startswith("\\"):
        i += 1
    current.hunks += 1
    return i


def _extended(line: str, current: _File) -> None:
    """git's extended header lines between ``diff --git`` and ``---``."""
    if line.startswith("new file mode"):
        current.status, current.old = "added", None
    elif line.startswith("deleted file mode"):
        current.status, current.new = "deleted", None
    elif line.startswith("rename from "):
        current.status, current.old = "renamed", _unquote(line[len("rename from ") :])
    elif line.startswith("rename to "):
        current.status, current.new = "renamed", _unquote(line[len("rename to ") :])
    elif line.startswith(("Binary files ", "GIT binary patch")):
        current.binary = True


def _checked(current: _File, number: int) -> FileDiff:
    if current.old is None and current.new is None:
        raise DiffError(f"line {number}: a file with neither an old nor a new path")
    return current.done()


def _count(group: str | None) -> int:
    return 1 if group is None else int(group)


def _path(raw: str, prefix: str) -> str | None:
    name = _unquote(raw.split("\t", 1)[0].rstrip())
    return None if name == NULL else _strip(name, prefix)


def _strip(name: str, prefix: str) -> str | None:
    name = _unquote(name)
    if name == NULL:
        return None
    return name[len(prefix) :] if name.startswith(prefix) else name


def _unquote(name: str) -> str:
    """git quotes a path with unusual characters: ``"a/caf\\303\\251.py"``."""
    if len(name) >= 2 and name[0] == name[-1] == '"':
        raw = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1").decode("utf-8", "replace")
    return name


def spans(lines: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Sorted lines as runs: (2, 3, 4, 9) -> ((2, 4), (9, 9))."""
    found: list[tuple[int, int]] = []
    for line in lines:
        if found and line == found[-1][1] + 1:
            found[-1] = (found[-1][0], line)
        else:
            found.append((line, line))
    return tuple(found)
