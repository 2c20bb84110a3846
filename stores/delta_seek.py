"""Where a reader of a graph-deltas partition starts, given its repositories' snapshots.

A replica, or a worker taking a partition, that starts each repository from its state
snapshot used to read the partition from offset 0 and skip what the snapshots cover
(`stores.deltas.peek_seq`): free of decoding, but every covered message still fetched,
so the start grew with the history in bytes (4,865 messages for django after 1,500 saves;
docs/PERFORMANCE.md). A snapshot now says where its own delta begins on the partition
(`SnapshotHeader.offset`) and the offset from which the partition must be read given the
snapshots its writer kept of the partition's every repository (`SnapshotHeader.floor`):
the reader seeks there (`plan`) and reads nothing the snapshots cover.

It never trusts the offsets blindly. Each snapshot's own delta must be found exactly at
its offset (`AnchorCheck`: the message there is keyed by the repository and numbered as
the snapshot; the reader decodes it, so that `stores.state_snapshot.Continuation` tells
whether the log continues the snapshot): an offset of another history (a broker that
came back empty, topics recreated), a log that ends before it, or a message elsewhere,
and the partition is read from its start, as before. A partition with a repository
whose snapshot has no offset (written by an older build), or one the reader cannot use,
or no floor, is read from its start too. Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from stores.deltas import peek_seq
from stores.state_snapshot import SnapshotHeader


@dataclass(frozen=True, slots=True)
class Anchor:
    """A snapshot's own delta on the partition: where its first message must be."""

    repo: str
    seq: int
    offset: int


@dataclass(frozen=True, slots=True)
class Seek:
    """Read the partition from ``start`` (not 0), the ``anchors`` checked on the way."""

    start: int
    anchors: tuple[Anchor, ...]  # by offset

    def left_out(self) -> dict[str, int]:
        """Per repository, the last delta before its snapshot's (the reader did not
        fetch it, and the log holds it: the snapshot's own delta is at its anchor)."""
        return {a.repo: a.seq - 1 for a in self.anchors if a.seq > 1}


def plan(headers: Iterable[SnapshotHeader]) -> Seek | None:
    """Where to start a partition whose repositories with a snapshot are ``headers`` (the
    snapshot each starts from, one per repository), or None: from 0.

    The floor is the newest snapshot's (its own delta the latest on the partition): its
    writer knew every repository of the partition then, and one that came after has all
    its deltas after that snapshot's. None when a snapshot has no offset or the newest
    has no floor (a repository of the partition its writer held no snapshot of)."""
    held = sorted(headers, key=lambda h: (h.offset if h.offset is not None else -1, h.repo))
    if not held or any(h.offset is None for h in held):
        return None
    newest = held[-1]
    if newest.floor is None:
        return None
    start = min(newest.floor, *(h.offset for h in held if h.offset is not None))
    if start <= 0:
        return None
    anchors = tuple(Anchor(h.repo, h.seq, h.offset) for h in held if h.offset is not None)
    return Seek(start, anchors)


@dataclass(slots=True)
class AnchorCheck:
    """Follows a partition read from `Seek.start`, message by message (``see``): each
    anchor's message must be at its offset; ``failed`` says why not, once it is known,
    and ``end`` at the end of the read whether an anchor was never reached."""

    seek: Seek
    failed: str | None = None
    _next: int = 0
    _anchors: tuple[Anchor, ...] = field(init=False)

    def __post_init__(self) -> None:
        self._anchors = self.seek.anchors

    def see(self, offset: int, key: bytes | None, value: bytes | None) -> bool:
        """False once the read shows an anchor is not where its snapshot says."""
        while self.failed is None and self._next < len(self._anchors):
            anchor = self._anchors[self._next]
            if anchor.offset > offset:
                break
            self._next += 1
            if anchor.offset < offset:
                self.failed = f"no message at offset {anchor.offset} ({anchor.repo})"
            elif key != anchor.repo.encode() or value is None:
                self.failed = f"the message at offset {offset} is not {anchor.repo}'s"
            elif peek_seq(value, anchor.repo) != anchor.seq:
                self.failed = (
                    f"the message at offset {offset} is not delta {anchor.seq} of {anchor.repo}"
                )
        return self.failed is None

    def end(self) -> str | None:
        """At the end of the read: why the seek cannot be trusted, or None."""
        if self.failed is None and self._next < len(self._anchors):
            anchor = self._anchors[self._next]
            self.failed = f"the partition ends before offset {anchor.offset} ({anchor.repo})"
        return self.failed


class DeltaOffsets:
    """Where each repository's latest delta begins on its graph-deltas partition, as the
    worker published it (the broker's acknowledgement) or read it back (a restore): the
    ``offset`` its next snapshot's header carries. One entry per repository."""

    def __init__(self) -> None:
        self._at: dict[str, tuple[int, int]] = {}  # repo -> (seq, offset)

    def note(self, repo: str, seq: int, offset: int) -> None:
        held = self._at.get(repo)
        # A delta sent again (a retry) keeps the first offset seen: reading from there
        # is as good, the reader joins its parts as it finds them.
        if held is None or seq > held[0] or (seq == held[0] and offset < held[1]):
            self._at[repo] = (seq, offset)

    def of(self, repo: str, seq: int) -> int | None:
        held = self._at.get(repo)
        return held[1] if held is not None and held[0] == seq else None

    def forget(self, repo: str) -> None:
        self._at.pop(repo, None)
