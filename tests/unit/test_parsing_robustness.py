"""parse_file is total: odd bytes, broken syntax and unknown files all give a result."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from processors.parsing import ParseResult, language_for, parse_file
from processors.parsing.config import CONFIG_FILES
from stores.records import CONFIG_LANGUAGES, ImportRecord, Keyword, SymbolRecord


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("stubs/x.pyi", "python"),
        ("web/app.js", "javascript"),
        ("esm.mjs", "javascript"),
        ("cjs.cjs", "javascript"),
        ("view.jsx", "javascript"),
        ("src/index.ts", "typescript"),
        ("x.mts", "typescript"),
        ("x.cts", "typescript"),
        ("App.tsx", "tsx"),
        ("UPPER.PY", "python"),
        ("README.md", None),
        ("Makefile", None),
        (".py", None),
    ],
)
def test_language_for_goes_by_extension(path: str, language: str | None) -> None:
    assert language_for(path) == language


def test_every_configuration_file_has_a_config_language() -> None:
    """The records' contract names the configuration languages; the parser produces them."""
    assert {parse_file(name, b"").language for name in CONFIG_FILES} == CONFIG_LANGUAGES
    assert set(CONFIG_FILES.values()) == CONFIG_LANGUAGES


@pytest.mark.parametrize(
    ("content", "lines"),
    [(b"", 0), (b"a", 1), (b"a\n", 1), (b"a\nb", 2), (b"a\nb\n", 2), (b"\n\n", 2)],
)
def test_lines(content: bytes, lines: int) -> None:
    assert parse_file("x.py", content).lines == lines
    assert parse_file("notes.txt", content).lines == lines


def test_unknown_language_has_lines_and_nothing_else() -> None:
    assert parse_file("data.bin", b"\xff\xfe\x00garbage\nmore") == ParseResult(
        language=None, lines=2, symbols=(), imports=(), parse_errors=0, problems=()
    )


def test_empty_file() -> None:
    # Nothing to extract; the file's name still says something.
    assert parse_file("empty.ts", b"") == ParseResult(
        "typescript", 0, (), (), 0, (), keywords=(Keyword(term="empty", weight=2.0),)
    )


def test_python_syntax_errors_are_counted_and_recovered_symbols_kept() -> None:
    source = b"def ok():\n    pass\n\ndef broken(:\n    pass\n\nclass A:\n    def m(self):\n"
    source += b"        x = (1\n"
    result = parse_file("broken.py", source)
    assert (result.parse_errors, result.problems) == (2, ("syntax_errors:2",))
    assert [(s.qualname, s.kind, s.line_start, s.line_end) for s in result.symbols] == [
        ("ok", "FUNCTION", 1, 2),
        ("broken", "FUNCTION", 4, 5),
        ("A", "CLASS", 7, 9),
        ("A.m", "METHOD", 8, 9),
    ]


def test_javascript_syntax_errors_are_counted_and_recovered_symbols_kept() -> None:
    source = b"function ok() {}\nclass A { m() { let x = ; } n() {} }\nfunction after( {}\n"
    result = parse_file("broken.js", source)
    assert (result.parse_errors, result.problems) == (2, ("syntax_errors:2",))
    assert [s.qualname for s in result.symbols] == ["ok", "A", "A.m", "A.n"]


def test_invalid_utf8_is_reported_and_still_parsed() -> None:
    result = parse_file("latin1.py", b'import os\nNAME = "caf\xe9"\n')
    assert result.problems == ("invalid_utf8",)
    assert result.imports == (ImportRecord(module="os", line=1, alias="os"),)
    assert result.symbols == (
        SymbolRecord(
            name="NAME",
            qualname="NAME",
            kind="VARIABLE",
            line_start=2,
            line_end=2,
            signature='NAME = "caf\ufffd"',
        ),
    )


def test_a_byte_order_mark_is_not_a_syntax_error() -> None:
    result = parse_file("bom.py", b"\xef\xbb\xbfimport os\n")
    assert (result.parse_errors, result.problems) == (0, ())
    assert result.imports == (ImportRecord(module="os", line=1, alias="os"),)


def test_minified_files_are_flagged_and_still_parsed() -> None:
    one_long_line = b"var a=1;" + b"function f(){return 1}" * 60 + b"\n"
    result = parse_file("bundle.min.js", one_long_line)
    assert result.problems == ("minified",)
    assert [s.qualname for s in result.symbols][:2] == ["a", "f"]
    wide_average = b"\n".join([b"x = '" + b"y" * 400 + b"'"] * 5)
    assert parse_file("data.py", wide_average).problems == ("minified",)
    assert parse_file("one_line.js", b"x" * 400).problems == ("minified",)
    assert parse_file("ok.py", b"x = 1\n" * 500).problems == ()


@pytest.mark.parametrize("path", ["x.py", "x.js", "x.ts", "x.tsx"])
def test_arbitrary_bytes_never_raise(path: str) -> None:
    rng = random.Random(20240601)
    alphabet = b"def class function import from export ()[]{}:;=,.'\"`\n\t #/*@\\\xff\xc3"
    for _ in range(40):
        content = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 300)))
        result = parse_file(path, content)
        assert result.language == language_for(path)
        assert all(p.split(":")[0] != "extract_failed" for p in result.problems)
        assert all(1 <= s.line_start <= s.line_end for s in result.symbols)


def test_deeply_nested_code_does_not_exhaust_the_stack() -> None:
    depth = 300
    source = "".join(" " * i + "if x:\n" for i in range(depth)) + " " * depth + "def deep(): pass\n"
    result = parse_file("deep.py", source.encode())
    assert [(s.qualname, s.line_start) for s in result.symbols] == [("deep", depth + 1)]


def test_results_are_deterministic_across_threads() -> None:
    source = b"import a\nclass C:\n    def m(self): ...\nX = 1\n"
    first = parse_file("t.py", source)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda _: parse_file("t.py", source), range(16)))
    assert all(result == first for result in results)


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("x.py", b"def (:\n    pass\nclass :\n    x = 1\n"),
        (
            "x.js",
            b"function (a) { function inner() {} }\n(function () { function iife() {} })();\n",
        ),
        ("x.ts", b"class { m() {} }\ninterface {}\n"),
    ],
)
def test_nameless_declarations_are_not_symbols(path: str, source: bytes) -> None:
    assert parse_file(path, source).symbols == ()
