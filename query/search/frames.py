"""Stack traces quoted in a question: the files of their innermost own frames.

Where a program broke is where a fix most often lands. Formats: Python's tracebacks
(``File "/x/app/models.py", line 12, in f``), IPython's (``File ~/app/models.py:12, in f``)
and pytest's reports (``app/models.py:12: in f``), which list the innermost call last;
the ``at`` frames of JavaScript and Rust (``at f (/srv/app/index.js:10:5)``), Java's
(``at com.acme.Shop.checkout(Shop.java:42)``) and Go's (``/home/u/svc/handler.go:23
+0x1d``), which list it first. A frame's path is absolute or from somewhere else (a
virtualenv's site-packages); it names the repository file sharing the most trailing
folders with it.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping

# Python lists the innermost call last; the others list it first.
_INNERMOST_LAST = re.compile(
    r'File "(?P<quoted>[^"\n]+)", line \d+'  # File "/x/app/models.py", line 12, in f
    r"|File (?P<ipython>[~\w./\\-]+\.py):\d+"  # File ~/app/models.py:12, in f
    r"|^(?P<pytest>[\w./\\-]+\.py):\d+: in ",  # app/models.py:12: in f
    re.M,
)
_INNERMOST_FIRST = re.compile(
    r"^\s*at (?P<java>[\w$.]+)\.[\w$<>]+\((?P<java_file>[\w$]+\.java):\d+\)"  # Java
    r"|^\s*at (?:.*\()?(?:file://)?(?P<at>[\w./\\@~-]+\.\w+):\d+(?::\d+)?\)?\s*$"  # JS, Rust
    r"|^\s+(?P<go>[\w./@~-]+\.go):\d+(?: \+0x[0-9a-f]+)?\s*$",  # Go
    re.M,
)


def innermost_frames(text: str, paths: Iterable[str], own: Callable[[str], bool]) -> list[str]:
    """The repository files of the innermost frames of the stack traces quoted in
    ``text``: of Python's frames and of the others, the innermost one that is a file
    of ``paths`` and the project's ``own`` code (not vendored, say)."""
    last = [_frame_path(m) for m in _INNERMOST_LAST.finditer(text)]
    first = [_frame_path(m) for m in _INNERMOST_FIRST.finditer(text)]
    if not last and not first:
        return []
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(posixpath.basename(path), []).append(path)
    found: list[str] = []
    for frames in (reversed(last), first):
        for written in frames:
            file = _frame_file(written, by_name)
            if file is not None and own(file):
                found.append(file)
                break
    return list(dict.fromkeys(found))


def _frame_path(match: re.Match[str]) -> str:
    """A frame's file as written, with forward slashes; a Java frame's from its class."""
    groups = match.groupdict()
    if groups.get("java_file"):
        package = groups["java"].split(".")[:-1]
        return "/".join([*package, groups["java_file"]])
    written = next(value for value in groups.values() if value)
    return written.replace("\\", "/")


def _frame_file(written: str, by_name: Mapping[str, list[str]]) -> str | None:
    """The repository file a frame's path names: of the files with its name, the one
    sharing the most trailing folders with it (``/venv/site-packages/app/models.py``
    is ``src/app/models.py``), at least one folder unless the file sits at the root;
    None when that is not one file."""
    parts = written.split("/")
    best: list[str] = []
    best_shared = 0
    for path in by_name.get(parts[-1], ()):
        own = path.split("/")
        shared = 1
        while shared < min(len(own), len(parts)) and own[-1 - shared] == parts[-1 - shared]:
            shared += 1
        if shared < 2 and len(own) > 1:
            continue
        if shared > best_shared:
            best, best_shared = [path], shared
        elif shared == best_shared:
            best.append(path)
    return best[0] if len(best) == 1 else None
