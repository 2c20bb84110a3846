"""The region a splice re-parses: pinned on a small module, then the facts of each
spliced edit compared with a whole-file parse."""

from __future__ import annotations

from processors.parsing import parse_file
from processors.parsing.regions import Region, choose, starts_of
from processors.parsing.reuse import common_prefix, common_suffix
from processors.parsing.splice import FactsCache
from processors.parsing.tree import parser
from tests.unit.test_parsing_splice import fresh, parse

PREFIX = "import os\n\nLIMIT = 3\n\n\n" + "".join(
    f"def f{i}(a):\n    return os.path.join(a, LIMIT)\n\n\n" for i in range(12)
)
SHAPE = '''class Shape(Base):
    """A shape."""

    sides = 3

    def area(self):
        return self.width * LIMIT

    # the perimeter
    def perimeter(self):
        total = 0
        for side in self.sides:
            total += side
        return total

    @property
    def name(self):
        return "shape"


'''
TAIL = "def after():\n    return Shape()\n"
OLD = (PREFIX + SHAPE + TAIL).encode()


def region_of(old: bytes, new: bytes) -> Region | str:
    same = common_prefix(old, new)
    end = len(old) - common_suffix(old, new, min(len(old), len(new)) - same)
    starts = starts_of(parser("python").parse(old).root_node)
    symbols = parse_file("m.py", old, kept=FactsCache(max_bytes=0)).symbols
    return choose(old, new, same, end, starts, symbols)


def line_of(text: bytes, needle: bytes) -> int:
    """The offset of the start of the line holding ``needle``."""
    return text.rfind(b"\n", 0, text.index(needle)) + 1


def row_of(text: bytes, needle: bytes) -> int:
    return text.count(b"\n", 0, text.index(needle))


def test_an_edit_in_a_method_is_parsed_with_the_class_header_alone() -> None:
    new = OLD.replace(b"total = 0", b"total = 1")
    region = region_of(OLD, new)
    assert isinstance(region, Region)
    shape, body = OLD.index(b"class Shape"), line_of(OLD, b'"""A shape')
    assert region.header == (shape, body)
    assert (region.start, region.end) == (
        line_of(OLD, b"def perimeter"),
        line_of(OLD, b"@property"),
    )
    assert (region.start_row, region.end_row) == (
        row_of(OLD, b"def perimeter"),
        row_of(OLD, b"@property"),
    )
    assert region.owner_row == row_of(OLD, b"class Shape")
    assert not region.first_statement and not region.to_class_end


def test_a_method_after_a_comment_is_no_end() -> None:
    region = region_of(OLD, OLD.replace(b"self.width", b"self.height"))
    assert isinstance(region, Region)
    # `perimeter` follows a comment, which may belong to `area` or to the class
    assert (region.start, region.end) == (line_of(OLD, b"def area"), line_of(OLD, b"@property"))


def test_the_last_method_runs_the_region_to_the_class_end() -> None:
    region = region_of(OLD, OLD.replace(b'"shape"', b'"form"'))
    assert isinstance(region, Region)
    assert region.start == line_of(OLD, b"@property") and region.to_class_end
    assert region.end == OLD.index(b"def after")


def test_the_docstring_edited_starts_the_region_at_the_body() -> None:
    region = region_of(OLD, OLD.replace(b"A shape", b"A form"))
    assert isinstance(region, Region) and region.first_statement
    assert (region.start, region.end) == (line_of(OLD, b'"""A shape'), line_of(OLD, b"def area"))
    # the class's own line changed: the class is the region
    region = region_of(OLD, OLD.replace(b"Shape(Base)", b"Shape(Other)"))
    assert isinstance(region, Region) and region.header is None
    assert (region.start, region.end) == (OLD.index(b"class Shape"), OLD.index(b"def after"))


def test_top_level_regions_and_appended_lines() -> None:
    region = region_of(OLD, OLD.replace(b"def f3(a)", b"def f3(b)"))
    assert isinstance(region, Region) and region.header is None
    assert (region.start, region.end) == (OLD.index(b"def f3"), OLD.index(b"def f4"))
    region = region_of(OLD, OLD + b"\n\ndef added():\n    pass\n")
    assert isinstance(region, Region)
    assert (region.start, region.end, region.first) == (len(OLD), len(OLD), 16)
    assert region_of(OLD, OLD.replace(b"import os", b"import sys") + b"x = 1\n") == "region"


def splices(*versions: bytes) -> FactsCache:
    """Each version parsed after the one before, spliced, and equal to a fresh parse."""
    kept = FactsCache(min_bytes=0)
    parse("m.py", versions[0], kept)
    for version in versions[1:]:
        assert parse("m.py", version, kept) == fresh("m.py", version)
    return kept


def test_class_regions_splice_to_the_fresh_facts() -> None:
    longer = OLD.replace(b"        total = 0\n", b"        total = 0\n        seen = []\n")
    kept = splices(
        OLD,
        longer,  # the class ends a line later, `name` and `after` move
        longer.replace(b'"shape"', b'"a\\nform"'),  # to the class end
        OLD,
        OLD.replace(b"A shape", b"A form"),  # the class's docstring
    )
    assert kept.spliced == 4 and not kept.declined
    # a class without a docstring whose first statement becomes one (its first token,
    # `r`, unchanged): the region starts with the body's first statement
    plain = OLD.replace(b'    """A shape."""\n\n    sides = 3\n', b"    r = 1\n")
    documented = plain.replace(b"    r = 1\n", b'    r"""Now a shape."""\n')
    kept = splices(plain, documented)
    assert kept.spliced == 1
    doc = {s.qualname: s.doc for s in fresh("m.py", documented).symbols}
    assert doc["Shape"] == "Now a shape."  # the spliced version's docstring, as it is


def test_a_statement_that_closes_the_class_parses_the_class_whole() -> None:
    # `def new_f():` at column 0 ends the class: the methods after it are its body
    closed = OLD.replace(b"    # the perimeter\n", b"def new_f():\n    # the perimeter\n")
    kept = splices(OLD, closed)
    assert kept.spliced == 1
    names = {s.qualname for s in fresh("m.py", closed).symbols}
    assert {"new_f", "new_f.perimeter", "new_f.name"} <= names and "Shape.name" not in names
