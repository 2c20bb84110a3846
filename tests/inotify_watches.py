"""Where a process's inotify watches are, read from /proc (Linux only).

Each inotify descriptor's ``/proc/<pid>/fdinfo/<fd>`` lists one line per watch,
``inotify wd:1 ino:2a sdev:800001 ...``: the watched inode (hex) and the kernel's
encoding of its device (major << 20 | minor, hex). A directory found by a walk that
follows no link is matched by ``(st_dev, st_ino)``, which tells where a watch sits
whatever path the watcher used to place it.
"""

from __future__ import annotations

import os
from pathlib import Path

Inode = tuple[int, int]  # (st_dev, st_ino)


def inotify_watches(pid: int | str = "self") -> set[Inode]:
    """The inodes watched by every inotify descriptor of ``pid``."""
    out: set[Inode] = set()
    fds = Path(f"/proc/{pid}/fd")
    for fd in os.listdir(fds):
        try:
            if os.readlink(fds / fd) != "anon_inode:inotify":
                continue
            text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text()
        except OSError:  # closed meanwhile
            continue
        for line in text.splitlines():
            if line.startswith("inotify "):
                fields = dict(kv.split(":", 1) for kv in line.split()[1:])
                sdev = int(fields["sdev"], 16)
                out.add((os.makedev(sdev >> 20, sdev & 0xFFFFF), int(fields["ino"], 16)))
    return out


def directory_inodes(top: Path) -> dict[Inode, str]:
    """Every real directory under ``top`` (``top`` included, no link followed), by
    inode: its path relative to ``top`` ("" for ``top``)."""
    out: dict[Inode, str] = {}
    for dirpath, _, _ in os.walk(top):
        st = os.stat(dirpath)
        rel = Path(dirpath).relative_to(top).as_posix()
        out[(st.st_dev, st.st_ino)] = "" if rel == "." else rel
    return out


def watched_under(top: Path, pid: int | str = "self") -> set[str]:
    """The directories under ``top`` that ``pid`` watches, relative to ``top``."""
    watched = inotify_watches(pid)
    return {rel for inode, rel in directory_inodes(top).items() if inode in watched}
