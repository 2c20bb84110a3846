"""Git's ignore rules case by case: each case's expected listing is pinned, and git
itself is asked (``git ls-files -co --exclude-standard``) that it gives the same."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from producers.ignore import IgnoreRules, kept_files, parse_pattern
from tests.gitignore_oracle import git_kept, write_tree


@dataclass(frozen=True)
class Case:
    name: str
    ignore_files: dict[str, str]  # directory -> .gitignore text
    files: list[str]
    kept: list[str]  # what git lists, the .gitignore files included
    exclude: str | None = None  # .git/info/exclude


GO_FILES = ["main.go", "Makefile", "LICENSE", "cmd/tool/main.go", "cmd/tool/tool", "a/b/c.d/x"]

CASES = [
    Case(
        "star_then_reinclude_dotted_files_and_every_directory",
        {"": "*\n!*.*\n!*/\n"},
        GO_FILES,
        [".gitignore", "cmd/tool/main.go", "main.go"],
    ),
    Case(  # without "!*/" every directory stays excluded, so nothing below is seen
        "star_then_dotted_files_only",
        {"": "*\n!*.*\n"},
        GO_FILES,
        [".gitignore", "main.go"],
    ),
    Case(
        "an_excluded_directory_is_never_entered",
        {"": "build/\n!build/keep.txt\n", "build": "!*\n"},
        ["build/keep.txt", "src/build/x", "src/build.txt"],
        [".gitignore", "src/build.txt"],
    ),
    Case(
        "a_trailing_slash_matches_directories_only",
        {"": "out/\n"},
        ["out", "a/out/x.txt", "b/out"],
        [".gitignore", "b/out", "out"],
    ),
    Case(
        "a_leading_slash_anchors",
        {"": "/build\n", "pkg": "/gen\n"},
        ["build/a.c", "src/build/a.c", "pkg/gen/x", "pkg/sub/gen/x", "gen/y"],
        [".gitignore", "gen/y", "pkg/.gitignore", "pkg/sub/gen/x", "src/build/a.c"],
    ),
    Case(
        "a_middle_slash_anchors_to_its_file",
        {"": "a/b\n", "x": "c/d\n"},
        ["a/b", "z/a/b", "x/c/d", "c/d", "x/y/c/d"],
        [".gitignore", "c/d", "x/.gitignore", "x/y/c/d", "z/a/b"],
    ),
    Case(
        "double_star_slash_matches_any_depth",
        {"": "**/tmp\ndocs/**/*.md\n"},
        ["tmp", "a/tmp", "a/b/tmp/x", "docs/x.md", "docs/a/b/y.md", "docs/y.txt", "z/docs/w.md"],
        [".gitignore", "docs/y.txt", "z/docs/w.md"],
    ),
    Case(
        "trailing_double_star_matches_inside_only",
        {"": "b/**\n!b/keep\n"},
        ["b/x", "b/c/y", "b/keep", "a/b/z"],
        [".gitignore", "a/b/z", "b/keep"],
    ),
    Case(  # "**" glued to other characters is a plain "*"
        "double_star_inside_a_name_stays_in_one_directory",
        {"": "a**z\nx/**.c\n"},
        ["abcz", "a/z", "x/m.c", "x/y/m.c"],
        [".gitignore", "a/z", "x/y/m.c"],
    ),
    Case(
        "a_star_never_crosses_a_slash",
        {"": "src/*.txt\n"},
        ["src/a.txt", "src/b/c.txt", "a.txt"],
        [".gitignore", "a.txt", "src/b/c.txt"],
    ),
    Case(
        "escapes_comments_and_trailing_spaces",
        {"": "#x\n\\#y\n\\!z\nsp  \ntab\\ \n"},
        ["#x", "#y", "!z", "sp", "sp  ", "tab ", "tab"],
        ["#x", ".gitignore", "sp  ", "tab"],
    ),
    Case(
        "the_last_matching_line_wins",
        {"": "!keep.log\n*.log\n*.tmp\n!keep.tmp\n"},
        ["keep.log", "keep.tmp", "a.tmp"],
        [".gitignore", "keep.tmp"],
    ),
    Case(
        "a_deeper_file_takes_precedence",
        {"": "*.log\n", "sub": "!keep.log\n", "sub/deep": "keep.log\n"},
        ["keep.log", "sub/keep.log", "sub/deep/keep.log", "sub/x.log"],
        [".gitignore", "sub/.gitignore", "sub/deep/.gitignore", "sub/keep.log"],
    ),
    Case(
        "info_exclude_comes_after_every_gitignore",
        {"": "!README.md\n"},
        ["README.md", "notes.md", "build/x"],
        [".gitignore", "README.md"],
        exclude="*.md\nbuild/\n",
    ),
    Case(
        "wildcards_and_classes",
        {"": "?.c\n[ab].h\n[!x].py\n[a-c]1\n[[:digit:]]n\n[]]q\n"},
        ["a.c", "ab.c", "a.h", "c.h", "x.py", "y.py", "b1", "d1", "7n", "]q", "sub/b.h"],
        [".gitignore", "ab.c", "c.h", "d1", "x.py"],
    ),
    Case(
        "crlf_lines_and_a_bom",
        {"": "\ufeffone\r\ntwo\r\n"},
        ["one", "two", "three"],
        [".gitignore", "three"],
    ),
    Case(  # a negative pattern cannot touch a file inside an excluded directory
        "reincluding_a_directory_then_its_files",
        {"": "/*\n!/keep/\n/keep/*\n!/keep/this.txt\n"},
        ["top.txt", "keep/this.txt", "keep/that.txt", "other/x.txt"],
        ["keep/this.txt"],
    ),
    Case(
        "a_gitignore_can_ignore_itself_and_still_applies",
        {"": ".gitignore\n*.o\n"},
        ["a.o", "a.c"],
        ["a.c"],
    ),
]


def all_files(case: Case) -> list[str]:
    return [*case.files, *(f"{d}/.gitignore" if d else ".gitignore" for d in case.ignore_files)]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_rules_keep_exactly_these_files(case: Case):
    assert kept_files(all_files(case), case.ignore_files, case.exclude or "") == case.kept


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_git_keeps_the_same_files(tmp_path: Path, case: Case):
    write_tree(tmp_path, case.files, case.ignore_files, case.exclude)
    assert git_kept(tmp_path) == case.kept


def test_ignored_counts_an_excluded_parent():
    rules = IgnoreRules()
    rules.add("", "*\n!*.*\n!*/\nvendor/\n")
    assert rules.ignored("Makefile") and not rules.ignored("cmd/main.go")
    assert not rules.ignored("cmd", is_dir=True) and rules.ignored("cmd/tool")
    assert rules.ignored("vendor", is_dir=True) and rules.ignored("vendor/x/keep.go")
    assert not rules.ignored("vendor.go") and rules.excluded("vendor", is_dir=True)
    assert not rules.excluded("vendor/x/keep.go", is_dir=False)  # its own verdict only


def test_split_drops_dot_git_and_treats_symlinks_as_files():
    rules = IgnoreRules()
    rules.add("", "link/\n")
    assert rules.split("", ["src", ".git"], ["link", ".git", "a"]) == (["src"], ["link", "a"])


@pytest.mark.parametrize(
    ("line", "negative", "dir_only", "basename"),
    [
        ("*.log", False, False, True),
        ("!*/", True, True, True),
        ("/build", False, False, False),
        ("build/", False, True, True),
        ("docs/**/*.md", False, False, False),
    ],
)
def test_a_pattern_line_is_read_like_git(line: str, negative: bool, dir_only: bool, basename: bool):
    pattern = parse_pattern(line)
    assert pattern is not None
    assert (pattern.negative, pattern.dir_only, pattern.basename) == (negative, dir_only, basename)


@pytest.mark.parametrize("line", ["!", "/", "!/"])
def test_an_empty_pattern_is_dropped(line: str):
    assert parse_pattern(line) is None


@pytest.mark.parametrize("line", ["a[b", "x\\", "[[:nope:]]"])
def test_a_malformed_pattern_matches_nothing(line: str):
    rules = IgnoreRules()
    rules.add("", f"{line}\n")
    assert [p for p in ["a[b", "ab", "x\\", "x", "n", ":"] if rules.ignored(p)] == []
