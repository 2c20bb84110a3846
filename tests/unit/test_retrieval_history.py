"""The ``history`` and ``fixes`` signals (issue 17): past commit messages matched to a
question give the files those commits changed; files fixes often changed weigh more;
and `eval history` reads commits from ``git log`` up to the base commit only."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

from deploy.eval_history import commits_before, parse_log
from query.search.history import MAX_FILES, Commit, CommitHistory, is_fix

COMMITS = [
    Commit("Fix panic when the config file is empty", ("src/config.rs",)),
    Commit("config: read the file lazily", ("src/config.rs", "src/main.rs")),
    Commit("Add a --json flag to the printer", ("src/printer.rs",)),
    Commit("fix: printer bug with wide chars", ("src/printer.rs", "src/width.rs")),
    Commit("Reformat everything", tuple(f"src/f{i}.rs" for i in range(MAX_FILES + 1))),
]


def test_fix_messages_are_told_apart() -> None:
    assert [is_fix(c.message) for c in COMMITS] == [True, False, False, True, False]
    assert not is_fix("prefix the names") and is_fix("Fixes #12")


def test_a_question_like_a_past_message_points_at_the_files_it_changed() -> None:
    history = CommitHistory(COMMITS)
    assert len(history) == 4  # the sweeping commit is left out
    found = history.history("panic: the config file is empty")
    assert list(found) == ["src/config.rs", "src/main.rs"] and found["src/config.rs"] == 1.0
    assert 0 < found["src/main.rs"] < 0.5  # a lesser commit, shared by two files
    assert history.history("zzz") == {}


def test_fixes_count_on_a_log_scale_and_signals_are_for_the_candidates() -> None:
    history = CommitHistory(COMMITS)
    assert history.fixes() == {"src/config.rs": 1.0, "src/printer.rs": 1.0, "src/width.rs": 1.0}
    many = CommitHistory([*COMMITS, Commit("fix the width of tabs", ("src/width.rs",))])
    assert many.fixes()["src/width.rs"] == 1.0
    assert many.fixes()["src/config.rs"] == round(math.log(2) / math.log(3), 6)
    assert history.signals("the config file is empty", ["src/config.rs", "src/lib.rs"]) == {
        "src/config.rs": {"history": 1.0, "fixes": 1.0}
    }


def test_the_log_is_read_up_to_the_base_commit_and_never_after(tmp_path: Path) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(tmp_path), *args], capture_output=True, check=True, text=True
        ).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "a.go").write_text("package a\n")
    git("add", "a.go")
    git("commit", "-qm", "Add a\n\nThe body.")
    base = git("rev-parse", "HEAD")
    (tmp_path / "b.go").write_text("package b\n")
    git("add", "b.go")
    git("commit", "-qm", "Fix b (after the base)")
    assert commits_before(tmp_path / ".git", base) == [Commit("Add a\nThe body.", ("a.go",))]
    assert [c.message for c in commits_before(tmp_path / ".git", "HEAD")] == [
        "Fix b (after the base)",
        "Add a\nThe body.",
    ]


def test_parse_log_reads_messages_and_paths() -> None:
    out = "\x1eOne\n\x1f\n\na.py\nb/c.py\n\x1eTwo\nbody\n\x1f\n"
    assert list(parse_log(out)) == [
        Commit("One", ("a.py", "b/c.py")),
        Commit("Two\nbody", ()),
    ]
