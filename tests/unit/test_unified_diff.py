"""A unified diff read into the old-side lines it changes, file by file (issue 20,
impact analysis): git's and diff -u's, new, deleted, renamed and binary files, and the
malformed ones refused with the line and the problem."""

from __future__ import annotations

import pytest

from query.search.unified_diff import DiffError, FileDiff, parse_diff, spans

GIT = """\
diff --git a/added.py b/added.py
new file mode 100644
index 0000000..8ba3a16
--- /dev/null
+++ b/added.py
@@ -0,0 +1 @@
+n
diff --git a/gone.py b/gone.py
deleted file mode 100644
index 5626abf..0000000
--- a/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-one
diff --git a/old.py b/new.py
similarity index 100%
rename from old.py
rename to new.py
diff --git a/x.py b/x.py
index 71ac1b5..199dff0 100644
--- a/x.py
+++ b/x.py
@@ -1,8 +1,9 @@
 a
-b
+B
 c
 d
 e
 f
 g
 h
+i
diff --git a/logo.png b/logo.png
index 1111111..2222222 100644
Binary files a/logo.png and b/logo.png differ
"""


def test_a_git_diff_gives_each_files_changed_old_lines_not_its_context() -> None:
    assert parse_diff(GIT) == (
        FileDiff(None, "added.py", "added", (0,), False),
        FileDiff("gone.py", None, "deleted", (1,), True),
        FileDiff("old.py", "new.py", "renamed", (), True),
        # '-b +B' changes line 2; '+i' is inserted after line 8; a..h around are context.
        FileDiff("x.py", "x.py", "modified", (2, 8), False),
        FileDiff("logo.png", "logo.png", "modified", (), True),
    )


def test_insertions_count_for_the_line_they_follow_and_the_top_is_line_0() -> None:
    text = (
        "--- a/m.py\t2026-01-01 10:00:00\n"
        "+++ b/m.py\t2026-01-01 10:01:00\n"
        "@@ -0,0 +1,2 @@\n"
        "+import os\n"
        "+\n"
        "@@ -10,3 +12,4 @@ def f():\n"
        "     x = 1\n"
        "+    y = 2\n"
        "     return x\n"
        " \n"
        "@@ -20,2 +23,0 @@\n"
        "-gone = 1\n"
        "-gone = 2\n"
        "\\ No newline at end of file\n"
    )
    (found,) = parse_diff(text)
    assert (found.path, found.status, found.lines) == ("m.py", "modified", (0, 10, 20, 21))
    assert spans(found.lines) == ((0, 0), (10, 10), (20, 21))


def test_text_before_the_first_file_is_left_out_and_quoted_paths_unquoted() -> None:
    text = (
        "commit 0123abc\nAuthor: A <a@b>\n\n    Fix the parser\n\n"
        'diff --git "a/caf\\303\\251 menu.py" "b/caf\\303\\251 menu.py"\n'
        'index 1..2 100644\n--- "a/caf\\303\\251 menu.py"\n+++ "b/caf\\303\\251 menu.py"\n'
        "@@ -3 +3 @@\n-a\n+b\n"
        "diff --git a/with space.py b/with space.py\nold mode 100644\nnew mode 100755\n"
    )
    assert parse_diff(text) == (
        FileDiff("café menu.py", "café menu.py", "modified", (3,), False),
        FileDiff("with space.py", "with space.py", "modified", (), False),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "hello\nworld\n",
            "no file in the diff (expected 'diff --git' or '--- a/… +++ b/…' lines)",
        ),
        ("", "no file in the diff"),
        ("@@ -1 +1 @@\n-a\n+b\n", "line 1: a hunk before any '--- a/… +++ b/…' header"),
        ("--- a/x.py\n+++ b/x.py\n@@ -1,x +1 @@\n-a\n", "line 3: malformed hunk header"),
        (
            "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n",
            "line 3: hunk @@ -1,3 +1,3 @@ ends early: 1 old and 1 new lines missing",
        ),
        (
            "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n*b\n",
            "line 3: hunk @@ -1,2 +1,2 @@ ends early: 1 old and 1 new lines missing",
        ),
        ("diff --git a/x.py\n", "line 1: a file with neither an old nor a new path"),
    ],
)
def test_what_is_not_a_unified_diff_is_refused_with_the_line(text: str, message: str) -> None:
    with pytest.raises(DiffError) as refused:
        parse_diff(text)
    assert str(refused.value).startswith(message)
