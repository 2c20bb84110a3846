"""Git's ignore rules, reproduced exactly, as values: no file system here.

A plain directory (no git to ask) is scanned with the rules git itself would apply in
``git ls-files --others --exclude-standard`` (``man gitignore``, and git's dir.c and
wildmatch.c, which this module follows line by line where the manual is vague):

- each directory's ``.gitignore`` holds patterns relative to that directory; a deeper
  file takes precedence over a shallower one, and ``$GIT_DIR/info/exclude`` comes
  last (``exclude=`` here, rooted at the top); within one file the last matching
  line wins, and a ``!`` line that matches re-includes;
- a pattern without a slash (a trailing one aside) matches a name at any depth; one
  with a slash is anchored to its file's directory; a trailing ``/`` matches
  directories only (never a symlink); ``*``, ``?`` and ``[...]`` never match ``/``;
  ``**`` crosses directories only as ``**/``, ``/**/`` or ``/**``;
- ``\\`` escapes (``\\#``, ``\\!``, ``\\ ``), unescaped trailing spaces are dropped,
  lines are split on ``\\n`` only (a CR before it dropped) and a UTF-8 BOM skipped;
- an excluded directory is never entered, so nothing below it can be re-included and
  its ``.gitignore`` files are never read. That is why ``*`` then ``!*/`` (re-include
  every directory) then ``!*.*`` keeps files with a dot at every depth.

``core.excludesFile`` (by default ``~/.config/git/ignore``) is deliberately NOT read:
what a scan of a plain directory holds must not depend on the configuration of the
user who runs it (in a git work tree, git applies it, as it always does).

Known differences, both outside ASCII only: git matches bytes, this module matches
characters, so a ``?`` or ``[...]`` meets one multi-byte character where git meets one
byte; and no ``core.ignoreCase`` (git's default on Linux).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

_SPECIAL = "*?[\\"  # git's is_glob_special(), as simple_length() uses it
_LITERAL, _SUFFIX, _GLOB, _NEVER = range(4)
_CLASSES = {  # git's sane_ctype: ASCII only
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": " \\t\\n\\r\\x0b\\x0c",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
}


@dataclass(frozen=True, slots=True)
class Pattern:
    """One line of an ignore file, compiled to the cheapest test that is exact."""

    line: str  # as written, trailing spaces trimmed
    negative: bool  # a ``!`` line: re-includes
    dir_only: bool  # a trailing ``/``: directories only
    basename: bool  # no slash: matched against the name at any depth
    kind: int  # _LITERAL, _SUFFIX, _GLOB or _NEVER
    text: str  # the literal, the suffix, or ""
    regex: re.Pattern[str] | None

    def hit(self, rel: str, name: str) -> bool:
        """Whether this pattern matches the path ``rel`` (relative to its file's
        directory) whose last component is ``name``; dir-ness is the caller's."""
        subject = name if self.basename else rel
        if self.kind == _LITERAL:
            return subject == self.text
        if self.kind == _SUFFIX:
            return subject.endswith(self.text)
        return self.regex is not None and self.regex.fullmatch(subject) is not None


def parse_ignore_file(text: str) -> tuple[Pattern, ...]:
    """The patterns of one ``.gitignore`` (or ``info/exclude``) text, in file order."""
    text = text.removeprefix("\ufeff")
    patterns = []
    for line in text.split("\n"):
        line = line.removesuffix("\r")
        if not line or line.startswith("#"):
            continue
        pattern = parse_pattern(_trim_trailing_spaces(line))
        if pattern is not None:
            patterns.append(pattern)
    return tuple(patterns)


def parse_pattern(line: str) -> Pattern | None:
    """One pattern line (comments and blanks already dropped); None if it is empty."""
    body, negative = (line[1:], True) if line.startswith("!") else (line, False)
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    if not body:
        return None  # "!", "/" or "!/": git keeps them, and they never match
    basename = "/" not in body
    if not basename and body.startswith("/"):
        body = body[1:]  # anchored either way; the leading slash is not matched
    prefix = _simple_length(body)
    if prefix == len(body):
        kind, text, regex = _LITERAL, body, None
    elif basename and body[0] == "*" and _simple_length(body[1:]) == len(body) - 1:
        kind, text, regex = _SUFFIX, body[1:], None  # match_basename()'s ENDSWITH
    else:
        # match_pathname() compares the literal prefix, then wildmatches the rest as a
        # pattern of its own: a "**" right after the prefix counts as at the start.
        source = _wildmatch(body, 0) if basename else _wildmatch(body, prefix)
        kind, text = (_GLOB, "") if source is not None else (_NEVER, "")
        regex = re.compile(source, re.DOTALL) if source is not None else None
    return Pattern(line, negative, dir_only, basename, kind, text, regex)


def _trim_trailing_spaces(line: str) -> str:
    """git's trim_trailing_spaces(): unescaped trailing spaces go, tabs stay."""
    last_space, i = None, 0
    while i < len(line):
        c = line[i]
        if c == " ":
            last_space = i if last_space is None else last_space
        elif c == "\\":
            i += 1
            if i == len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _simple_length(s: str) -> int:
    return next((i for i, c in enumerate(s) if c in _SPECIAL), len(s))


def _wildmatch(pattern: str, start: int) -> str | None:
    """A regex equivalent to git's wildmatch(pattern, WM_PATHNAME); ``start`` is where
    match_pathname() lets wildmatch begin. None: the pattern can never match."""
    out = [re.escape(pattern[:start])]
    i, n = start, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 == n:
                return None  # a trailing backslash matches nothing
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "*":
            j = i
            while j < n and pattern[j] == "*":
                j += 1
            after_slash = i == start or pattern[i - 1] == "/"
            at_boundary = j == n or pattern[j] == "/" or pattern.startswith("\\/", j)
            if j - i >= 2 and after_slash and at_boundary:
                if j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")  # "**/": zero or more directories
                    j += 1
                else:
                    out.append(".*")
            else:
                out.append("[^/]*")
            i = j
        elif c == "[":
            parsed = _bracket(pattern, i)
            if parsed is None:
                return None
            cls, i = parsed
            out.append(cls)
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _bracket(pattern: str, i: int) -> tuple[str, int] | None:
    """The class opened at ``pattern[i] == "["``, as wildmatch.c reads it, and the
    index after its ``]``; None when it is unterminated or names no known class."""
    n, i = len(pattern), i + 1
    negated = i < n and pattern[i] in "!^"
    i += negated
    parts: list[str] = []
    prev: str | None = None
    first = True
    while first or (i < n and pattern[i] != "]"):
        first = False
        if i >= n:
            return None
        c = pattern[i]
        if c == "\\":
            i += 1
            if i >= n:
                return None
            c = pattern[i]
            parts.append(re.escape(c))
            prev = c
        elif c == "-" and prev is not None and i + 1 < n and pattern[i + 1] != "]":
            i += 1
            hi = pattern[i]
            if hi == "\\":
                i += 1
                if i >= n:
                    return None
                hi = pattern[i]
            parts.pop()
            if prev <= hi:  # a reversed range matches nothing
                parts.append(f"{re.escape(prev)}-{re.escape(hi)}")
            prev = None
        elif c == "[" and i + 1 < n and pattern[i + 1] == ":":
            close = pattern.find("]", i + 2)
            if close < 0:
                return None
            name = pattern[i + 2 : close]
            if not name.endswith(":"):  # no ":]": a literal "[" and read on
                parts.append(re.escape("["))
                prev = "["
            elif name[:-1] in _CLASSES:
                parts.append(_CLASSES[name[:-1]])
                prev, i = None, close
            else:
                return None  # a malformed [:class:] aborts the whole match
        else:
            parts.append(re.escape(c))
            prev = c
        i += 1
    if i >= n:
        return None
    body = "".join(parts)
    if negated:
        return f"[^/{body}]", i + 1
    return (f"(?!/)[{body}]" if body else "(?!)"), i + 1


class IgnoreRules:
    """The ignore files met so far in one tree, applied as git applies them.

    Filled as a walk enters directories (``add``), so that, like git, it never holds
    the rules of a directory it did not enter; ``split`` is one step of that walk and
    ``ignored`` answers for any path, its ancestors included.
    """

    def __init__(self, exclude: Sequence[Pattern] = ()) -> None:
        self._files: dict[str, tuple[Pattern, ...]] = {}  # directory ("" = top) -> reversed
        self._exclude = tuple(reversed(exclude))

    def add(self, directory: str, text: str | None) -> None:
        """Set (or, with None, drop) the ``.gitignore`` of ``directory``."""
        patterns = parse_ignore_file(text) if text is not None else ()
        if patterns:
            self._files[directory] = tuple(reversed(patterns))
        else:
            self._files.pop(directory, None)

    def split(
        self, directory: str, dirs: Iterable[str], files: Iterable[str]
    ) -> tuple[list[str], list[str]]:
        """The subdirectories git enters and the files it lists, of the names in
        ``directory`` (whose own ``.gitignore`` must be added first). ``.git`` is
        never either; a symlink, even to a directory, belongs in ``files``."""
        levels = self._levels(directory)
        prefix = f"{directory}/" if directory else ""
        kept_dirs = [d for d in dirs if d != ".git" and not _decide(levels, prefix + d, d, True)]
        kept_files = [f for f in files if f != ".git" and not _decide(levels, prefix + f, f, False)]
        return kept_dirs, kept_files

    def excluded(self, path: str, *, is_dir: bool) -> bool:
        """This path's own verdict, its ancestors aside."""
        parent, name = posixpath.split(path)
        return _decide(self._levels(parent), path, name, is_dir)

    def ignored(self, path: str, *, is_dir: bool = False) -> bool:
        """Whether git would leave ``path`` out: it or a directory above it excluded."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            if self.excluded("/".join(parts[:depth]), is_dir=True):
                return True
        return self.excluded(path, is_dir=is_dir)

    def _levels(self, directory: str) -> list[tuple[int, tuple[Pattern, ...]]]:
        """(length of the base's prefix, reversed patterns), deepest file first."""
        levels = []
        base = directory
        while True:
            patterns = self._files.get(base)
            if patterns:
                levels.append((len(base) + 1 if base else 0, patterns))
            if not base:
                break
            base = posixpath.dirname(base)
        if self._exclude:
            levels.append((0, self._exclude))
        return levels


def _decide(
    levels: list[tuple[int, tuple[Pattern, ...]]], path: str, name: str, is_dir: bool
) -> bool:
    for cut, patterns in levels:
        rel = path[cut:]
        for p in patterns:
            if (is_dir or not p.dir_only) and p.hit(rel, name):
                return not p.negative
    return False


def kept_files(
    files: Iterable[str], ignore_files: Mapping[str, str], exclude: str = ""
) -> list[str]:
    """What ``git ls-files --others --exclude-standard`` lists for a tree, from a listing.

    ``files`` are the tree's non-directory paths (symlinks included), relative and
    ``/``-separated; its directories are their parents. ``ignore_files`` maps a
    directory ("" = top) to the text of its ``.gitignore``; ``exclude`` is the text of
    ``info/exclude``. The walk is git's: a directory is entered only when not excluded.
    """
    children: dict[str, tuple[set[str], list[str]]] = {"": (set(), [])}
    for path in files:
        parent, name = posixpath.split(path)
        children.setdefault(parent, (set(), []))[1].append(name)
        while parent:
            grand, dname = posixpath.split(parent)
            entry = children.setdefault(grand, (set(), []))
            if dname in entry[0]:
                break
            entry[0].add(dname)
            parent = grand
    rules = IgnoreRules(parse_ignore_file(exclude))
    kept: list[str] = []
    pending = [""]
    while pending:
        directory = pending.pop()
        rules.add(directory, ignore_files.get(directory))
        dirs, names = children.get(directory, (set(), []))
        sub, listed = rules.split(directory, sorted(dirs), names)
        prefix = f"{directory}/" if directory else ""
        kept.extend(prefix + f for f in listed)
        pending.extend(prefix + d for d in sub)
    return sorted(kept)
