"""A small synchronous adapter over the ``git`` command line.

Every call is one subprocess without a shell, with ``LC_ALL=C`` (stable messages),
``--no-optional-locks`` (a background ``status`` must never take ``index.lock`` from
the user's own git commands) and ``--literal-pathspecs`` (a file named ``*.py`` is a
path, not a glob). Output is read with ``-z`` where git offers it. Parsing lives in
pure functions next to the calls so that it can be tested on bytes.

The adapter is synchronous on purpose: the async producers run it through
``asyncio.to_thread`` in batches, which keeps one code path for tests and tools.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

GITLINK_MODE = "160000"
SYMLINK_MODE = "120000"


class GitError(RuntimeError):
    """A git command failed: the command, its exit status and its stderr."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.args_ = tuple(args)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)} exited {returncode}: {self.stderr}")


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    committed_at: float
    subject: str


@dataclass(frozen=True, slots=True)
class TreeChange:
    """One line of ``diff-tree --raw``: status letter, path, and the new blob."""

    status: str  # A, M, D, T, R (rename: old_path -> path), C, U
    path: str
    old_path: str | None = None
    mode: str | None = None  # of the new side; None when deleted
    blob: str | None = None  # of the new side; None when deleted or not in the object db


@dataclass(frozen=True, slots=True)
class Blob:
    size: int
    data: bytes | None  # None when larger than the cap it was read with


def decode_path(raw: bytes) -> str:
    # surrogateescape keeps undecodable names round-trippable to the file system.
    return raw.decode("utf-8", "surrogateescape")


def parse_commit_log(out: bytes) -> list[CommitInfo]:
    """Records of ``--format=%H%x1f%P%x1f%ct%x1f%s -z``."""
    commits = []
    for record in out.split(b"\0"):
        record = record.strip(b"\n")
        if not record:
            continue
        sha, parents, ct, subject = record.decode("utf-8", "replace").split("\x1f", 3)
        commits.append(CommitInfo(sha, tuple(parents.split()), float(ct), subject))
    return commits


def parse_raw_diff(out: bytes) -> list[TreeChange]:
    """``diff --raw -z``: ``:oldmode newmode oldsha newsha STATUS\\0path\\0[path2\\0]``."""
    tokens = out.split(b"\0")
    changes, i = [], 0
    while i < len(tokens) and tokens[i].startswith(b":"):
        _, new_mode, _, new_sha, status = tokens[i][1:].decode().split(" ")
        letter = status[0]
        paths = 2 if letter in "RC" else 1
        names = [decode_path(t) for t in tokens[i + 1 : i + 1 + paths]]
        i += 1 + paths
        deleted = letter == "D"
        blob = None if deleted or set(new_sha) == {"0"} else new_sha
        changes.append(
            TreeChange(
                status=letter,
                path=names[-1],
                old_path=names[0] if paths == 2 else None,
                mode=None if deleted else new_mode,
                blob=blob,
            )
        )
    return changes


def parse_batch(out: bytes) -> dict[str, bytes]:
    """``cat-file --batch``: ``<sha> <type> <size>\\n<contents>\\n`` per object."""
    blobs, pos = {}, 0
    while pos < len(out):
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split(" ")
        pos = end + 1
        if len(header) != 3:  # "<name> missing"
            continue
        size = int(header[2])
        blobs[header[0]] = out[pos : pos + size]
        pos += size + 1
    return blobs


_UNOPENED = re.compile(rb"^warning: could not open directory '(.+?)/?': ", re.MULTILINE)


def parse_unopened_directories(stderr: bytes) -> list[str]:
    """The directories of ``warning: could not open directory 'd/': <reason>`` lines
    (LC_ALL=C pins the wording; the path is relative to the work tree, raw bytes)."""
    return sorted({decode_path(m.group(1)) for m in _UNOPENED.finditer(stderr)})


def split_z(out: bytes) -> list[str]:
    return [decode_path(p) for p in out.split(b"\0") if p]


def is_work_tree(root: Path) -> bool:
    """True inside a git work tree (False in a plain directory or without git)."""
    try:
        return Git(root).run("rev-parse", "--is-inside-work-tree").strip() == b"true"
    except (GitError, OSError):
        return False


class Git:
    """The git commands the producers need, run in ``root``."""

    def __init__(self, root: Path, *, executable: str = "git", timeout_s: float = 120.0):
        self.root = Path(root)
        self._executable = executable
        self._timeout_s = timeout_s
        # Forwarded, not read: the child needs PATH/HOME; only the locale is pinned.
        self._env = {**os.environ, "LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}

    def run(self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        return self.run_status(*args, stdin=stdin, ok=ok)[1]

    def run_status(
        self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)
    ) -> tuple[int, bytes]:
        code, out, _ = self.run_full(*args, stdin=stdin, ok=ok)
        return code, out

    def run_full(
        self, *args: str, stdin: bytes | None = None, ok: tuple[int, ...] = (0,)
    ) -> tuple[int, bytes, bytes]:
        """(exit status, stdout, stderr): for the commands whose warnings carry facts."""
        # check-ignore takes paths, not pathspecs, and refuses the literal magic.
        literal = [] if args[:1] == ("check-ignore",) else ["--literal-pathspecs"]
        cmd = [self._executable, "--no-optional-locks", *literal, *args]
        try:
            done = subprocess.run(
                cmd,
                cwd=self.root,
                input=stdin,
                capture_output=True,
                env=self._env,
                timeout=self._timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise GitError(args, -1, f"timed out after {self._timeout_s}s") from e
        if done.returncode not in ok:
            raise GitError(args, done.returncode, done.stderr.decode("utf-8", "replace"))
        return done.returncode, done.stdout, done.stderr

    # -- the repository -------------------------------------------------------------

    def toplevel(self) -> Path:
        return Path(os.fsdecode(self.run("rev-parse", "--show-toplevel").strip()))

    def git_dirs(self) -> tuple[Path, Path]:
        """(this work tree's git dir, the common dir holding refs), both absolute."""
        git_dir, common = self.run("rev-parse", "--absolute-git-dir", "--git-common-dir").split()
        git_path = Path(os.fsdecode(git_dir))
        return git_path, (self.root / os.fsdecode(common)).resolve()

    def branch(self) -> str | None:
        """The current branch, or None when HEAD is detached."""
        code, out = self.run_status("symbolic-ref", "-q", "--short", "HEAD", ok=(0, 1))
        return out.decode().strip() if code == 0 else None

    def head(self) -> str | None:
        """The commit HEAD points at, or None on an unborn branch."""
        return self.resolve("HEAD")

    def resolve(self, rev: str) -> str | None:
        code, out = self.run_status("rev-parse", "-q", "--verify", f"{rev}^{{commit}}", ok=(0, 1))
        return out.decode().strip() if code == 0 else None

    def commit_exists(self, sha: str) -> bool:
        return self.resolve(sha) is not None

    def remote_url(self, name: str = "origin") -> str | None:
        code, out = self.run_status("config", "--get", f"remote.{name}.url", ok=(0, 1))
        url = out.decode().strip()
        return url if code == 0 and url else None

    def empty_tree(self) -> str:
        return self.run("hash-object", "-t", "tree", "--stdin", stdin=b"").decode().strip()

    # -- history --------------------------------------------------------------------

    def first_parent_log(self, old: str | None, new: str, limit: int) -> list[CommitInfo]:
        """The newest ``limit`` first-parent commits of ``old..new``, oldest first."""
        revs = [f"{old}..{new}"] if old else [new]
        fmt = "--format=%H%x1f%P%x1f%ct%x1f%s"
        out = self.run("log", "-z", "--first-parent", fmt, f"--max-count={limit}", *revs, "--")
        return list(reversed(parse_commit_log(out)))

    def commit_info(self, sha: str) -> CommitInfo:
        out = self.run("log", "-z", "-1", "--format=%H%x1f%P%x1f%ct%x1f%s", sha, "--")
        return parse_commit_log(out)[0]

    def commit_changes(self, commit: CommitInfo) -> list[TreeChange]:
        """What ``commit`` changed against its first parent, renames detected."""
        base = commit.parents[0] if commit.parents else self.empty_tree()
        return self.diff(base, commit.sha, renames=True)

    def diff(self, old: str, new: str, *, renames: bool = False) -> list[TreeChange]:
        rename = "-M" if renames else "--no-renames"
        return parse_raw_diff(self.run("diff-tree", "-r", "-z", "--raw", rename, old, new))

    def diff_work_tree(self, commit: str) -> list[TreeChange]:
        """Tracked paths whose work-tree contents differ from ``commit``."""
        return parse_raw_diff(self.run("diff", "--raw", "-z", "--no-renames", commit, "--"))

    # -- objects --------------------------------------------------------------------

    def tree_entries(self, commit: str, paths: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``{path: (mode, object id)}`` of exactly these paths at ``commit``."""
        paths = list(paths)
        if not paths:
            return {}
        out = self.run("ls-tree", "-z", "--full-tree", commit, "--", *paths)
        entries = {}
        for record in out.split(b"\0"):
            if record:
                meta, _, name = record.partition(b"\t")
                mode, _, sha = meta.decode().split(" ")
                entries[decode_path(name)] = (mode, sha)
        return {p: entries[p] for p in paths if p in entries}

    def blobs(self, shas: Iterable[str], max_bytes: int) -> dict[str, Blob]:
        """Sizes of all, contents of those up to ``max_bytes``: two processes in all."""
        shas = list(dict.fromkeys(shas))
        if not shas:
            return {}
        sizes: dict[str, int] = {}
        check = self.run("cat-file", "--batch-check", stdin="\n".join(shas).encode() + b"\n")
        for line in check.decode().splitlines():
            parts = line.split(" ")
            if len(parts) == 3:
                sizes[parts[0]] = int(parts[2])
        small = [s for s, n in sizes.items() if n <= max_bytes]
        data = {}
        if small:
            data = parse_batch(self.run("cat-file", "--batch", stdin="\n".join(small).encode()))
        return {s: Blob(n, data.get(s)) for s, n in sizes.items()}

    def read_paths(self, commit: str, paths: Iterable[str], max_bytes: int) -> dict[str, Blob]:
        """The blobs of ``paths`` at ``commit`` (absent paths and trees left out)."""
        entries = self.tree_entries(commit, paths)
        files = {p: sha for p, (mode, sha) in entries.items() if mode[:2] in ("10", "12")}
        blobs = self.blobs(files.values(), max_bytes)
        return {p: blobs[sha] for p, sha in files.items() if sha in blobs}

    # -- the work tree --------------------------------------------------------------

    def ls_files(self, under: Sequence[str] = (), *, tracked: bool = True) -> list[str]:
        """Tracked (unless not ``tracked``) and untracked-but-not-ignored files, sorted.

        Nested repositories (listed as ``dir/``) are left out, as git leaves them out.
        """
        return self.list_files(under, tracked=tracked)[0]

    def list_files(
        self, under: Sequence[str] = (), *, tracked: bool = True
    ) -> tuple[list[str], list[str]]:
        """``ls_files``, and the directories git could not open (it warns and goes on)."""
        which = ["--cached", "--others"] if tracked else ["--others"]
        _, out, err = self.run_full("ls-files", *which, "--exclude-standard", "-z", "--", *under)
        files = sorted({p for p in split_z(out) if not p.endswith("/")})
        return files, parse_unopened_directories(err)

    def ignored(self, paths: Iterable[str]) -> set[str]:
        """The subset of ``paths`` git ignores (tracked files are never ignored)."""
        stdin = b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)
        if not stdin:
            return set()
        return set(split_z(self.run("check-ignore", "-z", "--stdin", stdin=stdin, ok=(0, 1))))

    def is_dirty(self) -> bool:
        """Modified, staged or untracked-but-not-ignored files exist."""
        return bool(self.run("status", "--porcelain", "-z", "--untracked-files=normal").strip())
