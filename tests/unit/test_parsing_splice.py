"""Facts spliced from the statements an edit touched equal a whole-file parse's: random
edits of real files compared both ways, and the cases where the splice must decline."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from processors.parsing import ParseResult, parse_file
from processors.parsing.reuse import TreeCache
from processors.parsing.splice import Facts, FactsCache
from processors.parsing.tree import MAX_REFERENCES
from tests.unit.test_parsing_reuse import REAL, edited

ROOT = Path(__file__).resolve().parents[2]
# The project's own files that define a class: edits inside class bodies must happen,
# whichever modules the project has gained since.
WITH_CLASSES = [p for p in REAL if b"\nclass " in (ROOT / p).read_bytes()]
# Lines an edit may bring, chosen for the places a cut between statements could go
# wrong: comments and decorators next to a statement, a block's continuation (`else`,
# `except`, `case`), open brackets, strings and line continuations, indentation, several
# statements on a line, module-level names bound, read and deleted, type parameters.
PALETTE = (
    b"# a comment",
    b"    # an indented comment",
    b"@decorator",
    b"@a.b(1)",
    b"else:",
    b"except ValueError:",
    b"x = (",
    b")",
    b'"""',
    b"'''doc'''",
    b"y = 1 + \\",
    b"    pass",
    b"def new_f():",
    b"class K(Base):",
    b"import os",
    b"from a import b as c",
    b"",
    b"  ",
    b"if True:",
    b"    return x",
    b"try:",
    b"    global q",
    b"def g[T](x: T): pass",
    b"type X = int",
    b"x = 1; y = 2",
    b"\tz = 1",
    b"async def h():\n    await q",
    b"match x:\n    case 1:\n        pass",
    b"Path = 3",
    b"print(Path, Any)",
    b"del Path",
    b"def test_x():\n    assert Path == 1",
)


def nasty(content: bytes, rng: random.Random) -> bytes:
    """An edit aimed at the cuts: a palette line put anywhere, lines deleted, indented,
    dedented, copied or swapped, a bracket, quote or colon typed into a line."""
    lines = content.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    kind = rng.randrange(6)
    if kind == 0:
        lines.insert(at, rng.choice(PALETTE))
    elif kind == 1:
        del lines[at : at + rng.randint(1, 5)]
    elif kind == 2 and at < len(lines):
        line = lines[at]
        lines[at] = line[4:] if line.startswith(b"    ") and rng.random() < 0.5 else b"    " + line
    elif kind == 3:
        source = rng.randrange(len(lines))
        lines[at:at] = lines[source : source + rng.randint(1, 12)]
    elif kind == 4:
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif at < len(lines) and lines[at]:
        column = rng.randrange(len(lines[at]))
        typed = rng.choice((b"(", b")", b'"', b":", b"\\", b"#", b"x"))
        lines[at] = lines[at][:column] + typed + lines[at][column:]
    return b"\n".join(lines)


def fresh(path: str, content: bytes) -> ParseResult:
    return parse_file(path, content, trees=TreeCache(max_trees=0), kept=FactsCache(max_bytes=0))


def parse(path: str, content: bytes, kept: FactsCache) -> ParseResult:
    return parse_file(path, content, trees=TreeCache(max_trees=0), kept=kept)


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_of_real_files_splice_to_the_fresh_facts(seed: int) -> None:
    rng = random.Random(seed)
    kept = FactsCache(min_bytes=0)
    for path in rng.sample(WITH_CLASSES, 10):
        good = (ROOT / path).read_bytes()
        parse(path, good, kept)
        for step in range(12):
            content = (edited if step % 2 else nasty)(good, rng)
            expected = fresh(path, content)
            assert parse(path, content, kept) == expected, (path, seed, step)
            if not expected.parse_errors:
                good = content  # else the next edit starts from the last good version
    assert kept.spliced >= 40  # of 120: an edit that breaks the syntax is parsed whole
    assert kept.in_class >= 5  # 10 to 29 of them inside a class body when written


def module(*functions: str) -> bytes:
    return "".join(functions).encode()


HEAD = "import os\nfrom typing import Any\n\nLIMIT = 3\n\n\n"
F = "def f(a):\n    return os.path.join(a, LIMIT)\n\n\n"
G = "def g(b: Any):\n    total = 0\n    for x in b:\n        total += x\n    return total\n\n\n"
H = "class H:\n    def m(self):\n        return g(f(LIMIT))\n"


def g_edited(new_g: str) -> tuple[ParseResult, ParseResult]:
    """The module's facts, then those of the module with ``new_g`` for G: spliced, and
    equal to a whole-file parse."""
    kept = FactsCache(min_bytes=0)
    before = parse("m.py", module(HEAD, F, G, H), kept)
    after = parse("m.py", module(HEAD, F, new_g, H), kept)
    assert kept.spliced == 1 and after == fresh("m.py", module(HEAD, F, new_g, H))
    return before, after


def test_a_body_edit_reextracts_one_statement_and_keeps_the_others_records() -> None:
    before, after = g_edited(G.replace("total = 0", "total = 1"))
    # H's records are carried over as they were: same objects, not rebuilt.
    assert after.symbols[-1] is before.symbols[-1]
    assert after.references[-1] is before.references[-1]


def test_lines_gained_move_what_follows() -> None:
    longer = G.replace("    total = 0\n", "    total = 0\n    seen = []\n    seen.append(b)\n")
    before, after = g_edited(longer)
    method = {s.qualname: s for s in after.symbols}["H.m"]
    was = {s.qualname: s for s in before.symbols}["H.m"]
    assert (method.line_start, method.line_end) == (was.line_start + 2, was.line_end + 2)
    assert [r.line for r in after.references[-3:]] == [r.line + 2 for r in before.references[-3:]]
    assert [r.column for r in after.references[-3:]] == [r.column for r in before.references[-3:]]


def test_a_new_module_name_read_elsewhere_makes_the_whole_file_parse() -> None:
    kept = FactsCache(min_bytes=0)
    reads = H.replace("return g(f(LIMIT))", "return helper")
    parse("m.py", module(HEAD, reads, F, G), kept)
    # `helper` bound at module level below H: H's bare read of it becomes a reference.
    bound = module(HEAD, reads, F, G, "helper = 2\n")
    after = parse("m.py", bound, kept)
    assert (kept.spliced, kept.declined) == (0, Counter(names=1))
    assert ("helper", "use", "H.m") in {(r.name, r.kind, r.scope) for r in after.references}
    assert after == fresh("m.py", bound)
    # a name nobody else reads: spliced
    unread = module(HEAD, reads, F, G, "helper = 2\nunread = 3\n")
    assert parse("m.py", unread, kept) == fresh("m.py", unread)
    assert kept.spliced == 1


def test_a_module_name_gone_drops_its_bare_reads_elsewhere() -> None:
    kept = FactsCache(min_bytes=0)
    reads = H.replace("return g(f(LIMIT))", "return helper")
    parse("m.py", module(HEAD, reads, F, G, "helper = 2\n"), kept)
    gone = module(HEAD, reads, F, G, "other = 2\n")
    after = parse("m.py", gone, kept)
    assert kept.spliced == 1 and after == fresh("m.py", gone)
    assert "helper" not in {r.name for r in after.references}


def test_lines_appended_are_parsed_alone() -> None:
    kept = FactsCache(min_bytes=0)
    big = module(HEAD, F * 20, "if LIMIT:\n" + "    os.sep\n" * 100)
    parse("m.py", big, kept)
    appended = big + b"\n\ndef added(value):\n    return value + 1\n"
    assert parse("m.py", appended, kept) == fresh("m.py", appended)
    assert kept.spliced == 1
    # The 100-line `if` is no part of that region: were it, the region would be too
    # large. An indented line, a comment or a clause would join the `if`: the region
    # is then taken from it.
    big = module(HEAD, "if LIMIT:\n" + "    os.sep\n" * 300)
    parse("m.py", big, kept)
    appended = big + b"\n\ndef added(value):\n    return value + 1\n"
    assert parse("m.py", appended, kept) == fresh("m.py", appended)
    assert kept.spliced == 2
    big, kept = module(HEAD, F * 20, "if LIMIT:\n" + "    os.sep\n" * 100), FactsCache(min_bytes=0)
    parse("m.py", big, kept)
    for tail in (b"    os.sep\n", b"else:\n    pass\n", b"# c\n    os.sep\n"):
        assert parse("m.py", big + tail, kept) == fresh("m.py", big + tail)
        parse("m.py", big, kept)
    # `else:` looks like a new statement, and alone fails to parse: parsed whole
    assert kept.spliced == 5 and kept.declined == Counter(syntax=1)


def test_what_the_splice_declines_is_parsed_whole() -> None:
    kept = FactsCache(min_bytes=0)
    parse("m.py", module(HEAD, F, G, H), kept)
    broken = module(HEAD, F, G.replace("for x in b:", "for x in b"), H)
    assert parse("m.py", broken, kept).parse_errors == 1
    assert (kept.declined, len(kept)) == (Counter(syntax=1), 0)  # errors: nothing kept
    parse("m.py", module(HEAD, F, G, H), kept)  # fixed: kept again
    one_line = module(HEAD, "def f(a): return 1\n\n\n", G, H)
    assert parse("m.py", one_line, kept) == fresh("m.py", one_line)
    assert kept.spliced == 1
    # the first and the last statement changed: the region is the whole file
    ends = module("import sys\n", "def f(a): return 1\n\n\n", G, H.replace("H", "J"))
    assert parse("m.py", ends, kept) == fresh("m.py", ends)
    assert kept.declined == Counter(syntax=1, region=1)
    # type parameters reach the whole file: such a file is never kept
    generic = module(HEAD, F, G, "def k[T](x: T) -> T:\n    return x\n")
    parse("m.py", generic, kept)
    assert len(kept) == 0


def test_a_comment_at_column_0_is_no_cut() -> None:
    # tree-sitter hangs the comment on the module between two indented statements (no
    # syntax error); a class put above them takes both, the comment does not end it.
    kept = FactsCache(min_bytes=0)
    parse("m.py", module(HEAD, "    alpha = 1\n# c\n    beta = f()\n\n", G), kept)
    classy = module(HEAD, "class K:\n    alpha = 1\n# c\n    beta = f()\n\n", G)
    after = parse("m.py", classy, kept)
    assert kept.spliced == 1 and after == fresh("m.py", classy)
    assert {s.qualname: (s.line_start, s.line_end) for s in after.symbols}["K"] == (7, 10)


CALLS = "".join(f"def f{i}():\n" + "    a()\n" * 50 + "\n" for i in range(99))


def test_past_the_reference_cap_the_first_references_splice() -> None:
    kept = FactsCache(min_bytes=0)
    content = module(HEAD, CALLS)
    assert len(parse("m.py", content, kept).references) == 99 * 50
    # 60 more calls in f50: 5,010, the first 5,000 kept
    more = content.replace(b"def f50():\n", b"def f50():\n" + b"    b()\n" * 60)
    after = parse("m.py", more, kept)
    assert kept.spliced == 1
    assert "references_truncated" in after.problems and len(after.references) == MAX_REFERENCES
    assert after == fresh("m.py", more)
    # past the cut, nothing kept changes; before it, what came after is kept
    for edit in (b"def f97():\n    c()\n", b"def f10():\n    c()\n    c()\n"):
        more = more.replace(edit.split(b"\n")[0] + b"\n", edit)
        assert parse("m.py", more, kept) == fresh("m.py", more)
    assert kept.spliced == 3
    # fewer references before the cut: the ones to fill up with were never kept
    fewer = more.replace(b"def f10():\n    c()\n    c()\n" + b"    a()\n" * 50, b"def f10():\n")
    assert parse("m.py", fewer, kept) == fresh("m.py", fewer)
    assert kept.declined == Counter(references=1)


def test_small_files_and_other_languages_are_not_kept() -> None:
    kept = FactsCache(min_bytes=100)
    parse("small.py", b"x = 1\n", kept)
    parse("big.js", b"const x = 1;\n" * 20, kept)
    assert len(kept) == 0
    parse("big.py", b"x = 1\n" * 20, kept)
    assert len(kept) == 1


def test_one_path_in_two_repositories_keeps_two_entries() -> None:
    kept, trees = FactsCache(min_bytes=0), TreeCache(max_trees=0)
    first, second = module(HEAD, F, G, H), module(HEAD, CALLS)
    parse_file("m.py", first, trees=trees, kept=kept, scope="repo-1")
    parse_file("m.py", second, trees=trees, kept=kept, scope="repo-2")
    assert len(kept) == 2
    edited_first = first.replace(b"total = 0", b"total = 1")
    got = parse_file("m.py", edited_first, trees=trees, kept=kept, scope="repo-1")
    assert kept.spliced == 1 and got == fresh("m.py", edited_first)


class BrokenSplice(FactsCache):
    """A cache whose splice fails, as a bug of ours would."""

    def splice(self, path: str, language: str, content: bytes) -> Facts | None:
        raise RuntimeError("a bug")


def test_a_failing_splice_leaves_the_answer_to_the_whole_file_parse() -> None:
    kept = BrokenSplice(min_bytes=0)
    content = module(HEAD, F, G, H)
    parse("m.py", content, kept)
    assert len(kept) == 1
    assert parse("m.py", content + b"x = 1\n", kept) == fresh("m.py", content + b"x = 1\n")
