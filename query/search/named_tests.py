"""Test files linked to the files they test by name, where imports do not link them.

A test file's TESTS edges come from what it imports and calls (processors/graph/tally.py);
a test reaching its subject through a package (``from pkg import encoder``, or a
re-export) has none to ``encoder.py`` (issue 20). The naming conventions of the six
languages link them instead: ``test_<stem>.py`` / ``<stem>_test.py``, Go
``<stem>_test.go``, Java ``FooTest`` / ``FooTests`` / ``FooIT.java``, JS/TS
``foo.test.ts`` / ``foo.spec.js`` / ``__tests__/foo.js``, Rust ``tests/<module>.rs``.

A name says less than an import, so a pair is linked only when the name is not
ambiguous: by `proximity` (the same folder, or mirrored trees such as
``src/main/java/x`` and ``src/test/java/x``, beat shared leading or trailing folders,
which beat nothing shared), the test must be the source's closest test (at most
`MAX_TESTS` tie) and the source the test's one closest file of the tested name. Pure:
``files_named`` is the index's lookup of file paths by basename.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable

from stores.projections.ids import is_test_path

CONFIDENCE = "test_name"
"""The confidence a name link is shown with (an import link's is ``structural``)."""
MAX_TESTS = 3
"""Tests of one file at its best proximity linked at most; more is a name too common."""
SAME = 1000
"""The proximity of a test in the source's folder or its mirror."""

_JS = ("js", "jsx", "ts", "tsx", "mjs", "cjs")
_TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs"})
_NEUTRAL_FOLDERS = _TEST_FOLDERS | {"src", "main"}
_NO_NAME = frozenset({"__init__.py", "mod.rs", "lib.rs", "main.rs"})

FilesNamed = Callable[[str], Iterable[str]]


def names_of_tests(path: str) -> tuple[str, ...]:
    """The basenames a test of the file may have (none for a test file)."""
    base = posixpath.basename(path)
    stem, _, ext = base.rpartition(".")
    if not stem or base in _NO_NAME or is_test_path(path):
        return ()
    if ext == "py":
        return (f"test_{stem}.py", f"{stem}_test.py")
    if ext == "go":
        return (f"{stem}_test.go",)
    if ext == "java":
        return (f"{stem}Test.java", f"{stem}Tests.java", f"{stem}IT.java")
    if ext in _JS:
        return tuple(f"{stem}.{kind}.{e}" for kind in ("test", "spec") for e in _JS) + tuple(
            f"{stem}.{e}" for e in _JS
        )
    if ext == "rs":
        return (base,)
    return ()


def source_names(path: str) -> tuple[str, ...]:
    """The basenames of the file a test file is named after (none for another file)."""
    folder, base = posixpath.split(path)
    stem, _, ext = base.rpartition(".")
    segments = set(folder.split("/"))
    if not stem or not is_test_path(path):
        return ()
    if ext in ("py", "go") and stem.endswith("_test") and len(stem) > 5:
        return (f"{stem[:-5]}.{ext}",)
    if ext == "py" and stem.startswith("test_") and len(stem) > 5:
        return (f"{stem[5:]}.py",)
    if ext == "java":
        for suffix in ("Tests", "Test", "IT"):
            if stem.endswith(suffix) and len(stem) > len(suffix):
                return (f"{stem[: -len(suffix)]}.java",)
        return ()
    if ext in _JS:
        named, _, kind = stem.rpartition(".")
        if named and kind in ("test", "spec"):
            return tuple(f"{named}.{e}" for e in _JS)
        return tuple(f"{stem}.{e}" for e in _JS) if "__tests__" in segments else ()
    if ext == "rs" and segments & {"tests", "test"}:
        return (base,)
    return ()


def proximity(source: str, test: str) -> int:
    """How near a test is to a source: `SAME` when their folders are one once test,
    ``src`` and ``main`` folders are left out, else the longer run of folders they share
    from the root or from the leaf."""
    a, b = _folders(source), _folders(test)
    if a == b:
        return SAME
    prefix = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    head = min(len(a), len(b)) if prefix is None else prefix
    tail = 0
    while tail < min(len(a), len(b)) and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return max(head, tail)


def _folders(path: str) -> tuple[str, ...]:
    folder = posixpath.dirname(path)
    return tuple(s for s in folder.split("/") if s and s not in _NEUTRAL_FOLDERS)


def name_linked_tests(path: str, files_named: FilesNamed) -> tuple[str, ...]:
    """The test files linked to ``path`` by name, nearest first, then by path."""
    base = posixpath.basename(path)
    tests = {
        t
        for name in names_of_tests(path)
        for t in files_named(name)
        if t != path and base in source_names(t)
    }
    if not tests:
        return ()
    near = {t: proximity(path, t) for t in tests}
    best = max(near.values())
    closest = sorted(t for t, p in near.items() if p == best)
    if len(closest) > MAX_TESTS:
        return ()
    return tuple(t for t in closest if _closest_source(t, files_named) == path)


def _closest_source(test: str, files_named: FilesNamed) -> str | None:
    """The one file a test is named after, nearest it; None when several tie."""
    sources = {
        s
        for name in source_names(test)
        for s in files_named(name)
        if s != test and not is_test_path(s)
    }
    if not sources:
        return None
    near = {s: proximity(s, test) for s in sources}
    best = max(near.values())
    closest = [s for s, p in near.items() if p == best]
    return closest[0] if len(closest) == 1 else None
