"""Factories of real objects for tests: events stamped like a Source stamps them."""

from __future__ import annotations

import itertools
import re

from processors.parsing import ParseResult
from producers.events import (
    CommitCompleted,
    CommitObserved,
    FileChanged,
    FileDeleted,
    ScanCompleted,
    content_hash,
)
from stores.records import ImportRecord, SymbolRecord


class Stamp:
    """Sequence numbers of one producer session."""

    def __init__(self, repo: str = "app-1", producer: str = "p1") -> None:
        self.repo = repo
        self.producer = producer
        self._seq = itertools.count(1)

    def base(self) -> dict[str, object]:
        return {
            "repo": self.repo,
            "producer": self.producer,
            "seq": next(self._seq),
            "emitted_at": 1000.0,
        }

    def changed(self, path: str, text: str, origin: str = "watch", commit: str | None = None):
        data = text.encode()
        return FileChanged(
            **self.base(),
            path=path,
            content=data,
            content_hash=content_hash(data),
            size=len(data),
            origin=origin,
            commit=commit,
            working_tree=origin != "commit",
        )

    def skipped(self, path: str, reason: str = "binary", size: int = 10):
        return FileChanged(
            **self.base(),
            path=path,
            content=None,
            content_hash=None,
            size=size,
            origin="scan",
            commit=None,
            working_tree=True,
            skipped=reason,
        )

    def deleted(self, path: str, origin: str = "watch"):
        return FileDeleted(**self.base(), path=path, origin=origin, commit=None, working_tree=True)

    def scan_completed(self, commit: str | None = "c0", full: bool = True, files: int = 0):
        return ScanCompleted(
            **self.base(),
            commit=commit,
            branch="main",
            files=files,
            full=full,
            working_tree_dirty=False,
        )

    def commit_observed(self, sha: str, paths: tuple[str, ...] = ()):
        return CommitObserved(
            **self.base(),
            sha=sha,
            parents=("0" * 40,),
            branch="main",
            changed_paths=paths,
            committed_at=999.0,
            subject="change",
        )

    def commit_completed(self, sha: str):
        return CommitCompleted(**self.base(), sha=sha, branch="main")


_IMPORT = re.compile(r"^import (\S+)$")
_DEF = re.compile(r"^def (\w+)")


def tiny_parse(path: str, content: bytes) -> ParseResult:
    """A stand-in parser with exact, obvious output: 'import x' and 'def f' lines."""
    lines = content.decode().splitlines()
    imports = tuple(
        ImportRecord(module=m.group(1), line=i)
        for i, text in enumerate(lines, 1)
        if (m := _IMPORT.match(text))
    )
    symbols = tuple(
        SymbolRecord(
            name=m.group(1),
            qualname=m.group(1),
            kind="FUNCTION",
            line_start=i,
            line_end=i,
            signature=text,
        )
        for i, text in enumerate(lines, 1)
        if (m := _DEF.match(text))
    )
    return ParseResult("python", len(lines), symbols, imports, 0, ())
