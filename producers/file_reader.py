r"""One file's contents as FileChanged fields: inline up to a cap, or the reason why not.

The same rules apply to a work-tree file and to a blob read from a commit, so that a
path's record does not flip between "skipped" and "parsed" depending on where it was
read: more than ``max_bytes`` is ``too_large``, a NUL byte in the first 8 KiB is
``binary`` (git's own heuristic), a symlink is read as the file it points to as long
as that stays inside the repository, and anything but a regular file is skipped
without being opened (opening a FIFO would block the producer).

Secrets never leave the producer (issue 19, producers/secrets.py): a file that is a
secret by its name, or a symlink to one, is ``secret_file`` and never read; any other
text has its secret values redacted here, before a FileChanged is built, and
``content_hash`` is of the redacted bytes, i.e. of what is sent (``size`` stays the
file's own). Each redacted file is one ``secrets_redacted`` log line: the path and
how many of each rule, never the values.

Event paths are UTF-8 on the wire. A file name that is not (``b"bad\xffname.py"`` on
disk) is still recorded, as ``undecodable_name``: its event path is the name's bytes
decoded with ``backslashreplace`` (see ``wire_path``), i.e. the text ``bad\xffname.py``
(a backslash, then ``xff``), and the record never carries contents. A real, decodable
file literally named with that backslash sequence would collide with it: the real file
wins, and the listings (producers/scan.py) leave the escaped record out when that path
exists. A directory that cannot be listed is one ``unreadable_directory`` record for
the directory itself; a file that vanishes between the listing and the read is no record
at all (``None``: it is not there, so there is nothing to skip).
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

import structlog

from producers.events import FileChanged, FileDeleted, Origin, SkipReason, content_hash
from producers.secrets import redact, secret_name
from producers.source import Draft

log = structlog.get_logger()

DEFAULT_MAX_BYTES = 1_000_000
BINARY_PROBE_BYTES = 8192  # what git itself inspects to call a blob binary
MAX_LINK_HOPS = 8


@dataclass(frozen=True, slots=True)
class FileRead:
    """What a FileChanged says of a file's contents."""

    content: bytes | None
    content_hash: str | None
    size: int
    skipped: SkipReason | None = None
    redactions: tuple[tuple[str, int], ...] = ()  # (rule id, count): see producers/secrets.py

    def changed(
        self, path: str, *, origin: Origin, commit: str | None, working_tree: bool
    ) -> Draft:
        if self.redactions:
            count = sum(n for _, n in self.redactions)
            log.info("secrets_redacted", path=path, count=count, rules=dict(self.redactions))
        return Draft(
            FileChanged,
            {
                "path": path,
                "content": self.content,
                "content_hash": self.content_hash,
                "size": self.size,
                "skipped": self.skipped,
                "origin": origin,
                "commit": commit,
                "working_tree": working_tree,
            },
        )


def deleted(path: str, *, origin: Origin, commit: str | None, working_tree: bool) -> Draft:
    fields = {"path": path, "origin": origin, "commit": commit, "working_tree": working_tree}
    return Draft(FileDeleted, fields)


def skip(reason: SkipReason, size: int = 0) -> FileRead:
    return FileRead(content=None, content_hash=None, size=size, skipped=reason)


def classify(data: bytes, *, max_bytes: int, size: int | None = None) -> FileRead:
    """Contents (work tree or blob) to FileRead: too large, binary, or inline with its
    secrets redacted."""
    size = len(data) if size is None else size
    if size > max_bytes or len(data) > max_bytes:
        return skip("too_large", max(size, len(data)))
    if b"\0" in data[:BINARY_PROBE_BYTES]:
        return skip("binary", size)
    redacted = redact(data)
    sent = redacted.content
    return FileRead(sent, content_hash(sent), size, redactions=redacted.counts)


def portable(path: str) -> bool:
    """Event paths are UTF-8 on the wire; a file name that is not cannot be sent."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def wire_path(path: str) -> str:
    """The event path of an on-disk name (a str from os or git, surrogate-escaped).

    A UTF-8 name is itself; any other has each undecodable byte written as ``\\xNN``:
    ``os.fsencode(path).decode("utf-8", "backslashreplace")``.
    """
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def signature(root: Path, path: str) -> tuple[int, ...] | None:
    """What changes when a file is written, replaced or chmod'ed (None: gone).

    The watcher keeps one per emitted file and re-reads, on a resync, only the files
    whose signature differs (mtime and ctime in ns, size, inode, mode).
    """
    full = root / path
    try:
        st = full.stat() if full.exists() else full.lstat()
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def read_work_file(root: Path, path: str, *, max_bytes: int) -> FileRead | None:
    """Read ``root/path``; None when nothing is there any more (deleted meanwhile)."""
    full = root / path
    try:
        st = full.lstat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return skip("unreadable")
    if not portable(path):  # never read: the record could not say which file it was
        return skip("undecodable_name", st.st_size if stat.S_ISREG(st.st_mode) else 0)
    try:
        target = full.resolve()
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13)
        return skip("unreadable")
    # A symlinked file *or* a symlinked parent directory may lead out of the root.
    if not target.is_relative_to(root.resolve()):
        return skip("symlink_outside_repository")
    if secret_name(path) or secret_name(target.relative_to(root.resolve()).as_posix()):
        return skip("secret_file", st.st_size if stat.S_ISREG(st.st_mode) else 0)
    if stat.S_ISLNK(st.st_mode):
        try:
            st = target.stat()
        except OSError:  # a dangling link
            return skip("unreadable")
    return _read_regular(target, st, max_bytes)


def _read_regular(full: Path, st: os.stat_result, max_bytes: int) -> FileRead | None:
    if stat.S_ISDIR(st.st_mode):
        return skip("not_a_regular_file" if listable(full) else "unreadable_directory")
    if not stat.S_ISREG(st.st_mode):
        return skip("not_a_regular_file")
    if st.st_size > max_bytes:
        return skip("too_large", st.st_size)
    try:
        with full.open("rb") as f:
            data = f.read(max_bytes + 1)  # the file may grow between stat and read
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return skip("unreadable", st.st_size)
    return classify(data, max_bytes=max_bytes)


def listable(directory: Path) -> bool:
    """One opendir: what a listing needs (root passes it whatever the mode bits)."""
    try:
        with os.scandir(directory):
            return True
    except OSError:
        return False


def resolve_link(link_path: str, target: str, root: str | None = None) -> str | None:
    """Where a committed symlink at ``link_path`` points, relative to the root.

    None when it leads out of the repository: ``..`` past the root, or an absolute
    target (unless it names a place under ``root``, the work tree's absolute path).
    """
    if target.startswith("/"):
        if root is None or not (target + "/").startswith(root.rstrip("/") + "/"):
            return None
        target = posixpath.relpath(target, root)
        link_path = ""
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(link_path), target))
    if joined in (".", "..") or joined.startswith("../"):
        return None
    return joined
