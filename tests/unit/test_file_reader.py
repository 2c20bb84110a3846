"""Reading one file: inline contents, or the reason it is skipped."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from producers.events import FileChanged, FileDeleted, content_hash
from producers.file_reader import (
    FileRead,
    classify,
    deleted,
    portable,
    read_work_file,
    resolve_link,
    signature,
    skip,
    wire_path,
)
from tests.badrepo import read_fails


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


def test_classify_text_binary_and_too_large():
    assert classify(b"hello", max_bytes=10) == FileRead(b"hello", content_hash(b"hello"), 5)
    assert classify(b"a\0b", max_bytes=10) == skip("binary", 3)
    late_nul = b"x" * 8192 + b"\0"
    assert classify(late_nul, max_bytes=10_000).skipped is None  # only the first 8 KiB count
    assert classify(b"x" * 11, max_bytes=10) == skip("too_large", 11)
    assert classify(b"", max_bytes=10) == FileRead(b"", content_hash(b""), 0)
    assert classify(b"abc", max_bytes=10, size=3).size == 3


def test_regular_file_is_read_inline(root: Path):
    (root / "a.py").write_bytes(b"print(1)\n")
    read = read_work_file(root, "a.py", max_bytes=100)
    assert read == FileRead(b"print(1)\n", content_hash(b"print(1)\n"), 9, None)


def test_missing_file_reads_as_none(root: Path):
    assert read_work_file(root, "absent.py", max_bytes=100) is None
    (root / "file").write_text("x")
    assert read_work_file(root, "file/below", max_bytes=100) is None


def test_too_large_is_skipped_with_its_size_and_not_read(root: Path):
    (root / "big.txt").write_bytes(b"x" * 101)
    assert read_work_file(root, "big.txt", max_bytes=100) == skip("too_large", 101)


def test_binary_is_skipped(root: Path):
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0")
    assert read_work_file(root, "img.png", max_bytes=100) == skip("binary", 11)


def test_non_regular_files_are_skipped_without_being_opened(root: Path):
    (root / "dir").mkdir()
    os.mkfifo(root / "fifo")  # opening it would block: it must only be stat'ed
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "sock"))
        for name in ("dir", "fifo", "sock"):
            assert read_work_file(root, name, max_bytes=100) == skip("not_a_regular_file")


def test_symlink_inside_reads_its_target(root: Path):
    (root / "src").mkdir()
    (root / "src" / "real.py").write_text("x = 1\n")
    (root / "alias.py").symlink_to("src/real.py")
    read = read_work_file(root, "alias.py", max_bytes=100)
    assert read is not None and read.content == b"x = 1\n" and read.skipped is None


def test_symlinks_leading_out_are_skipped(root: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "linked_dir").symlink_to(outside)
    (root / "dangling_out").symlink_to(outside / "nothing")
    for path in ("leak.txt", "linked_dir/secret.txt", "dangling_out", "linked_dir"):
        assert read_work_file(root, path, max_bytes=100) == skip("symlink_outside_repository")


def test_unreadable_files(root: Path):
    # Tests run as root, where chmod 000 still reads: a dangling link and a loop are the
    # portable ways to reach the "unreadable" branch.
    (root / "dangling").symlink_to("nowhere.txt")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    for path in ("dangling", "loop_a"):
        assert read_work_file(root, path, max_bytes=100) == skip("unreadable")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod 000 file")
def test_permission_denied_is_unreadable(root: Path):
    (root / "locked").write_text("x")
    (root / "locked").chmod(0)
    assert read_work_file(root, "locked", max_bytes=100) == skip("unreadable", 1)


def test_committed_link_targets_resolve_relative_to_the_link():
    assert resolve_link("a/b/link", "../c.py") == "a/c.py"
    assert resolve_link("link", "./src/x.py") == "src/x.py"
    assert resolve_link("a/link", "../../etc/passwd") is None
    assert resolve_link("link", "..") is None
    assert resolve_link("link", "/etc/passwd") is None
    assert resolve_link("link", "/work/repo/src/x.py", "/work/repo") == "src/x.py"
    assert resolve_link("link", "/work/repository/x.py", "/work/repo") is None


def test_drafts_and_portable_names():
    draft = skip("binary", 3).changed("a.bin", origin="scan", commit=None, working_tree=True)
    assert draft.cls is FileChanged
    assert dict(draft.fields) == {
        "path": "a.bin",
        "content": None,
        "content_hash": None,
        "size": 3,
        "skipped": "binary",
        "origin": "scan",
        "commit": None,
        "working_tree": True,
    }
    gone = deleted("a.py", origin="commit", commit="c" * 40, working_tree=False)
    assert gone.cls is FileDeleted and gone.fields["commit"] == "c" * 40
    assert portable("ünïcode.py") and not portable(os.fsdecode(b"bad\xff.py"))


def test_undecodable_names_are_escaped_on_the_wire_and_never_read(root: Path):
    name = os.fsdecode(b"bad\xffname.py")
    (root / name).write_bytes(b"x = 1\n")
    assert wire_path(name) == "bad\\xffname.py" and wire_path("ünï.py") == "ünï.py"
    assert read_work_file(root, name, max_bytes=100) == skip("undecodable_name", 6)
    assert read_work_file(root, os.fsdecode(b"gone\xff.py"), max_bytes=100) is None


def test_a_directory_is_unreadable_only_when_it_cannot_be_listed(root: Path):
    (root / "locked").mkdir()
    (root / "locked").chmod(0)
    try:
        unlistable = read_fails(root / "locked")
        expected = skip("unreadable_directory") if unlistable else skip("not_a_regular_file")
        assert read_work_file(root, "locked", max_bytes=100) == expected
    finally:
        (root / "locked").chmod(0o755)


def test_signatures_change_with_writes_and_modes(root: Path):
    (root / "a.py").write_text("1")
    first = signature(root, "a.py")
    (root / "a.py").chmod(0o600)
    second = signature(root, "a.py")
    (root / "a.py").write_text("22")
    assert len({first, second, signature(root, "a.py")}) == 3 and first is not None
    assert signature(root, "absent.py") is None
    (root / "loop").symlink_to("loop")
    assert signature(root, "loop") is not None  # the link itself
