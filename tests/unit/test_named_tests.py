"""Tests linked to the files they test by name (issue 20)."""

from __future__ import annotations

import posixpath
from collections import defaultdict

import pytest

from query.search.named_tests import name_linked_tests, names_of_tests, proximity, source_names

REPO = [
    # python: a test beside the package, importing through it
    "src/email/encoder.py",
    "src/email/__init__.py",
    "tests/test_encoder.py",
    "tests/encoder_test.py",
    # go: same folder
    "render/json.go",
    "render/json_test.go",
    # java: the mirrored maven trees
    "core/src/main/java/org/x/Router.java",
    "core/src/test/java/org/x/RouterTest.java",
    "core/src/test/java/org/x/RouterIT.java",
    "other/src/main/java/org/y/Router.java",
    # js/ts
    "src/retry.ts",
    "src/retry.test.ts",
    "lib/parse.js",
    "lib/__tests__/parse.js",
    "web/button.tsx",
    "web/button.spec.tsx",
    # rust: an integration test named after a module
    "src/cache.rs",
    "src/inner/cache.rs",
    "tests/cache.rs",
    # ambiguous: two util.py, one test with nothing to tell them apart
    "a/util.py",
    "b/util.py",
    "tests/test_util.py",
    # a shared folder breaks the tie
    "pkg/alpha/config.py",
    "pkg/beta/config.py",
    "tests/alpha/test_config.py",
    # too many tests of one name at the same distance
    "tools/io.py",
    "t1/test_io.py",
    "t2/test_io.py",
    "t3/test_io.py",
    "t4/test_io.py",
]


def lookup(paths: list[str]):
    by_name: dict[str, list[str]] = defaultdict(list)
    for p in paths:
        by_name[posixpath.basename(p)].append(p)
    return lambda name: by_name.get(name, [])


@pytest.mark.parametrize(
    ("path", "tests"),
    [
        ("src/email/encoder.py", ("tests/encoder_test.py", "tests/test_encoder.py")),
        ("src/email/__init__.py", ()),
        ("render/json.go", ("render/json_test.go",)),
        (
            "core/src/main/java/org/x/Router.java",
            ("core/src/test/java/org/x/RouterIT.java", "core/src/test/java/org/x/RouterTest.java"),
        ),
        ("other/src/main/java/org/y/Router.java", ()),
        ("src/retry.ts", ("src/retry.test.ts",)),
        ("lib/parse.js", ("lib/__tests__/parse.js",)),
        ("web/button.tsx", ("web/button.spec.tsx",)),
        ("src/cache.rs", ("tests/cache.rs",)),
        ("src/inner/cache.rs", ()),
        ("a/util.py", ()),
        ("b/util.py", ()),
        ("pkg/alpha/config.py", ("tests/alpha/test_config.py",)),
        ("pkg/beta/config.py", ()),
        ("tools/io.py", ()),
        ("tests/test_encoder.py", ()),
    ],
)
def test_tests_are_linked_by_name_unless_the_name_is_ambiguous(
    path: str, tests: tuple[str, ...]
) -> None:
    assert name_linked_tests(path, lookup(REPO)) == tests


def test_the_names_of_each_convention() -> None:
    assert names_of_tests("a/b.py") == ("test_b.py", "b_test.py")
    assert names_of_tests("x/Foo.java") == ("FooTest.java", "FooTests.java", "FooIT.java")
    assert source_names("x/FooTests.java") == ("Foo.java",)
    assert source_names("x/foo_test.go") == ("foo.go",)
    assert source_names("a/test_.py") == ()
    assert source_names("src/foo.spec.js")[:2] == ("foo.js", "foo.jsx")
    assert source_names("tests/helpers.js") == ()  # only __tests__ names a JS test by stem
    assert source_names("src/lib.rs") == ()


def test_proximity_reads_mirrored_trees_as_one_folder() -> None:
    assert proximity("m/src/main/java/a/B.java", "m/src/test/java/a/BTest.java") == 1000
    assert proximity("pkg/alpha/c.py", "tests/alpha/test_c.py") == 1
    assert proximity("pkg/alpha/c.py", "pkg/tests/test_c.py") == 1
    assert proximity("x/c.py", "tests/test_c.py") == 0
