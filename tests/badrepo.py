r"""A repository of everything a producer must survive, and what it should say of each.

``make_bad_repo(root, git=...)`` builds, in a fresh directory, a few ordinary source
files that must be indexed intact beside every kind of file the producers must record
as a skip instead of dying on: a name that is not UTF-8, a file and a directory that
cannot be read, directory and file symlinks leading out (one to ``/etc``), a dangling
symlink, a symlink loop, a FIFO, a socket, a binary, a file over the size cap. The
returned ``BadRepo`` says which event paths must carry which contents and which must
be skipped with which reason, so that a unit test of the scan and an end-to-end test
of ``gazetteer up`` (``/repositories/{id}/files?skipped=true``) check the same table.

``chmod 000`` stops nobody running as root: the expectations for the locked file and
directory are what reading them actually does here (probed, never assumed), so as root
they are indexed with their contents, and as another user they are skipped.

Event paths of undecodable names follow producers/file_reader.py: the name's bytes
decoded with ``backslashreplace`` (``src/bad\xffname.py`` on the wire, with a literal
backslash).
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tests.gitrepo import GitRepo

GOOD_FILES: dict[str, bytes] = {
    "src/app.py": b"import os\n\n\ndef main():\n    return os.getcwd()\n",
    "src/util.js": b"export function add(a, b) {\n  return a + b;\n}\n",
    "lib/helpers.py": b"def helper(x):\n    return x * 2\n",
    "src/latin1.py": b"# caf\xe9: not UTF-8 inside, a producer does not care\nx = 1\n",
    "src/broken.py": b"def broken(:\n    pass\n",
    "empty.py": b"",
}
BAD_NAME = b"src/bad\xffname.py"
BAD_NAME_WIRE = "src/bad\\xffname.py"
LOCKED_FILE = "secret/locked.py"
LOCKED_DIR = "private"
LOCKED_DIR_FILE = "private/inner.py"


@dataclass(frozen=True, slots=True)
class BadRepo:
    """The corpus on disk and what the producers must emit for it (event paths)."""

    root: Path
    outside: Path  # a directory out of the repository that a symlink leads to
    indexed: dict[str, bytes] = field(default_factory=dict)  # path -> exact contents
    skipped: dict[str, str] = field(default_factory=dict)  # path -> SkipReason

    def expected(self) -> dict[str, str | None]:
        """Every FileChanged a scan must emit: path -> skip reason (None: indexed)."""
        return {**{p: None for p in self.indexed}, **self.skipped}

    def cleanup(self) -> None:
        """Restore modes so that a temporary directory can be removed."""
        for path in (self.root / LOCKED_FILE, self.root / LOCKED_DIR):
            if path.exists() or path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(self.outside, ignore_errors=True)


def read_fails(path: Path) -> bool:
    """Does reading (a file) or listing (a directory) fail for this process?"""
    try:
        if path.is_dir():
            with os.scandir(path):
                return False
        with path.open("rb") as f:
            f.read(1)
        return False
    except PermissionError:
        return True


def make_fifo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def make_socket(path: Path) -> None:
    """A bound unix socket's file, bound at a short path (108 bytes max) and moved."""
    short = Path(tempfile.mkdtemp(prefix="gz-sock-", dir="/tmp"))
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(short / "s"))
        path.parent.mkdir(parents=True, exist_ok=True)
        os.rename(short / "s", path)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def write_named(root: Path, path: str | bytes, data: bytes) -> None:
    """Write ``root/path`` where ``path`` may be bytes (a name that is not UTF-8)."""
    full = os.path.join(os.fsencode(root), os.fsencode(path))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)


def make_bad_repo(root: Path, *, git: bool, max_bytes: int = 1000) -> BadRepo:
    """Build the corpus at ``root`` (which must not exist); ``max_bytes`` is the cap the
    producers run with. In a git work tree, the ordinary files, the binary, the big
    file, the bad name and the symlinks are committed; the rest is untracked."""
    root.mkdir(parents=True)
    outside = Path(tempfile.mkdtemp(prefix="gz-outside-"))
    (outside / "far.py").write_text("never read: outside the repository\n")
    (outside / "secret.txt").write_text("secret\n")

    indexed = dict(GOOD_FILES)
    skipped: dict[str, str] = {}
    for path, data in GOOD_FILES.items():
        write_named(root, path, data)
    write_named(root, "assets/logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    skipped["assets/logo.png"] = "binary"
    write_named(root, "data/big.txt", b"x" * (max_bytes + 1))
    skipped["data/big.txt"] = "too_large"
    write_named(root, BAD_NAME, b"print('a name that is not UTF-8')\n")
    skipped[BAD_NAME_WIRE] = "undecodable_name"
    links = {
        "ext_link": (outside, "symlink_outside_repository"),
        "etc_dir_link": (Path("/etc"), "symlink_outside_repository"),
        "leak.txt": (outside / "secret.txt", "symlink_outside_repository"),
        "dangling.py": (Path("nowhere.py"), "unreadable"),
        "loop_a": (Path("loop_b"), "unreadable"),
        "loop_b": (Path("loop_a"), "unreadable"),
    }
    for name, (target, reason) in links.items():
        (root / name).symlink_to(target)
        skipped[name] = reason
    if git:
        repo = GitRepo.create(root)
        repo.commit("a bad repository")

    write_named(root, LOCKED_FILE, b"LOCKED = True\n")
    write_named(root, LOCKED_DIR_FILE, b"INNER = True\n")
    (root / LOCKED_FILE).chmod(0)
    (root / LOCKED_DIR).chmod(0)
    if read_fails(root / LOCKED_FILE):
        skipped[LOCKED_FILE] = "unreadable"
    else:
        indexed[LOCKED_FILE] = b"LOCKED = True\n"
    if read_fails(root / LOCKED_DIR):
        skipped[LOCKED_DIR] = "unreadable_directory"
    else:
        indexed[LOCKED_DIR_FILE] = b"INNER = True\n"
    make_fifo(root / "pipe.fifo")
    skipped["pipe.fifo"] = "not_a_regular_file"
    make_socket(root / "src" / "ipc.sock")
    skipped["src/ipc.sock"] = "not_a_regular_file"
    return BadRepo(root=root, outside=outside, indexed=indexed, skipped=skipped)


@dataclass(frozen=True, slots=True)
class LiveChange:
    """One bad change made while a watcher runs, and the records it must produce."""

    name: str
    make: Callable[[], None]
    skipped: dict[str, str]  # event path -> SkipReason
    indexed: tuple[str, ...] = ()  # event paths read with their contents


def live_bad_changes(root: Path) -> list[LiveChange]:
    """The bad changes of ``make_live_bad_changes``, one by one, so that a test can
    check the watcher after each."""

    def bad_name() -> None:
        write_named(root, b"src/live\xfename.py", b"x = 1\n")

    def locked_dir() -> None:
        os.mkdir(root / "live_locked", 0)  # born unreadable (and, as root, empty)

    unlistable = _would_fail_listing(root)
    return [
        LiveChange("bad_name", bad_name, {"src/live\\xfename.py": "undecodable_name"}),
        LiveChange(
            "fifo", lambda: make_fifo(root / "live.fifo"), {"live.fifo": "not_a_regular_file"}
        ),
        LiveChange(
            "etc_link",
            lambda: (root / "live_etc").symlink_to("/etc"),
            {"live_etc": "symlink_outside_repository"},
        ),
        LiveChange(
            "dangling",
            lambda: (root / "live_dangling.py").symlink_to("gone.py"),
            {"live_dangling.py": "unreadable"},
        ),
        LiveChange(
            "locked_dir",
            locked_dir,
            {"live_locked": "unreadable_directory"} if unlistable else {},  # root: nothing
        ),
    ]


def make_live_bad_changes(root: Path) -> dict[str, str]:
    """Make every live bad change at once; returns event path -> SkipReason."""
    out: dict[str, str] = {}
    for change in live_bad_changes(root):
        change.make()
        out.update(change.skipped)
    return out


def _would_fail_listing(root: Path) -> bool:
    """Would a chmod 000 directory stop this process? (Not as root.)"""
    probe = Path(tempfile.mkdtemp(prefix=".gz-probe-", dir=root.parent))
    try:
        probe.chmod(0)
        return read_fails(probe)
    finally:
        probe.chmod(stat.S_IRWXU)
        probe.rmdir()


UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
"""Run a command as root without the capabilities that bypass permission bits."""
UNPRIVILEGED_CAN_RUN = os.geteuid() == 0 and shutil.which("setpriv") is not None
