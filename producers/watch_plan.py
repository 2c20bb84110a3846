"""Where the watcher asks the OS for watches, and the path bookkeeping of its batches.

Why each real directory is watched on its own, non-recursively (issue 15): a recursive
watch in watchfiles 1.3 is notify 8.0's, which walks the tree *following symlinks*
(notify's ``Config::follow_symlinks`` defaults to true and watchfiles exposes no way
to change it). A directory symlink leading out (``etc_dir_link -> /etc``) therefore had
the whole of ``/etc`` watched: inotify budget spent outside the repository, events
computed there and dropped, permission errors from there. A symlink leading back inside
was worse: inotify gives one watch descriptor per inode, so the link's path replaced
the real directory's in notify's table, and the real directory's events came back
named below the link, where the watcher drops them (an edit in ``src/`` was lost while
``inlink -> src`` existed; seen in tests/unit/test_watcher_symlinks.py).

``watch_directories`` lists the directories to watch by a walk that never follows a
link and never enters ``.git``; notify is given each of them with ``recursive=False``,
so it walks nothing and places exactly one watch per listed directory. A directory
created or moved in later is not watched by notify (non-recursive watches do not grow):
the watcher watches the tree anew and lists what the new directories hold
(producers/watcher.py). Measured on django 5.2 (2,455 directories besides ``.git``,
a 2-core machine shared with other work; ``python -m tests.bench.watch_rewatch``):
the walk 39-75 ms; notify's setup 36-48 ms for the 2,455 single watches against
56-330 ms for its recursive setup of the root (2,724 watches: ``.git`` too); a whole
rewatch (walk + setup) median 105-184 ms, of which the setup, which awatch runs on the
event loop, stalls it 32-54 ms (median of 8-10 rewatches per run, 3 runs).
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from pathlib import Path

from watchfiles import Change

from producers.file_reader import portable


def watch_directories(root: Path) -> list[str]:
    """The real directories of ``root`` to watch, relative ("" is ``root``), sorted.

    No symlink is entered (``os.walk`` follows none, and a link is not listed) and no
    ``.git`` at any depth (its events are dropped anyway). A directory that cannot be
    opened is listed, not entered: inotify refuses it a watch, which notify is told to
    ignore (``ignore_permission_denied``); it is watched anew once it becomes readable.
    """
    out = [""]
    top = str(root)
    for dirpath, dirnames, _ in os.walk(top):
        keep = []
        for name in dirnames:
            if name != ".git" and not os.path.islink(os.path.join(dirpath, name)):
                keep.append(name)
                out.append(os.path.relpath(os.path.join(dirpath, name), top).replace(os.sep, "/"))
        dirnames[:] = keep
    return sorted(out)


def is_real_directory(path: Path) -> bool:
    """A directory, not a symlink to one (what a watch may be placed on)."""
    return path.is_dir() and not path.is_symlink()


def below_symlink(root: Path, path: str) -> bool:
    """Is ``path`` reached through a symlinked directory (or a loop) below ``root``?"""
    parent = (root / path).parent
    try:
        return parent != root and parent.resolve() != parent
    except (OSError, RuntimeError):  # a loop (RuntimeError before Python 3.13): below one
        return True


class KnownFiles:
    """The files the state may hold for this root, sorted on demand for prefix lookups."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self._paths = set(paths)
        self._sorted: list[str] | None = None

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def update(self, paths: Iterable[str]) -> None:
        self._paths.update(paths)
        self._sorted = None

    def discard(self, paths: Iterable[str]) -> None:
        self._paths.difference_update(paths)
        self._sorted = None

    def snapshot(self) -> set[str]:
        return set(self._paths)

    def under(self, directory: str) -> list[str]:
        if self._sorted is None:
            self._sorted = sorted(self._paths)
        prefix = directory + "/"
        start = bisect.bisect_left(self._sorted, prefix)
        end = bisect.bisect_left(self._sorted, directory + "0")  # "0" sorts right after "/"
        return self._sorted[start:end]


def relative_changes(root: str, raw: Iterable[tuple[Change, str]]) -> dict[str, set[Change]]:
    """awatch's absolute paths to POSIX paths under ``root``; ``.git`` and strays dropped."""
    prefix = root.rstrip(os.sep) + os.sep
    out: dict[str, set[Change]] = {}
    for change, path in raw:
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :].replace(os.sep, "/")
        if rel and ".git" not in rel.split("/") and portable(rel):
            out.setdefault(rel, set()).add(change)
    return out


def expand_deletions(missing: Iterable[str], known: KnownFiles) -> list[str]:
    """Each vanished path, plus the known files under it when it was a directory."""
    out: set[str] = set()
    for path in missing:
        below = known.under(path) if path not in known else []
        out.update(below)
        if path in known or not below:
            out.add(path)
    return sorted(out)
