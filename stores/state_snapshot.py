"""A repository's materialized state as one file's bytes: encode, decode, verify (issue 16).

A snapshot is everything a restored reader of one repository needs to continue from the
graph delta it covers (``seq``) instead of from delta 1: the `RepoState` (files, nodes,
edges, and the lease and sequence bookkeeping the worker judges events with: lease,
fenced leases, the source mark), and the repository's last `NeighborhoodSnapshot`
(so that a restored worker continues its numbering and warm start). A repository's
state is then ``restore_state(snapshot)`` folded with the deltas numbered after
``snapshot.seq``: it costs the size of the code, not the length of its history.

The encoding is canonical (records sorted by key), so equal states give equal bytes:
``canonical(state)`` is how tests compare a restored state with one folded from the
whole log. A file is ``MAGIC``, one JSON header line (format and contract fingerprint, repo,
seq, indexed commit and lease epoch, the body's length and sha256, its sections, and the
header's own check) and the body in sections, each compressed and checksummed on its
own (`stores.framing.Frame.encode_sections`, format 2):

- ``state``: the snapshot's JSON, every file's references left out (empty);
- ``counts``: each file's count of references, in file order (JSON);
- ``references``: each file's references, in file order (`FileReferences`);
- ``postings``: every chunk's counted tokens (`stores.chunk_postings`), derived from the
  state, so that a replica builds its BM25 without tokenizing the chunk texts again.

A worker reads all but the postings; a read side (`decode_reader`) reads the state and
the counts, never inflates nor parses the references (a third of sympy's JSON), and takes
the postings when they check (else it tokenizes, as without them: a damaged or foreign
derived part never changes an answer). `decode` refuses anything else with a
`SnapshotRejected` naming the reason, a file of format 1 included (never a half-read
state: the caller falls back to folding the log, or to a full scan). Pure: values in,
values out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import structlog
from pydantic import Field, ValidationError

from stores import trusted_json
from stores.deltas import CommitRecord, Envelope, GraphDelta, LeaseRecord, SourceMark
from stores.framing import Frame, Rejected, Sections
from stores.neighborhoods import NeighborhoodSnapshot
from stores.records import EdgeRecord, FileRecord, NodeRecord, Record, ReferenceRecord, trusted
from stores.trusted_json import schema_fingerprint

if TYPE_CHECKING:  # numpy's import (~0.1 s) only where postings are made or read, and
    # where a state is (its edges are columns): not for a CLI reading a snapshot's header
    from stores.chunk_postings import ChunkPostings, CountCache
    from stores.repo_state import RepoState

log = structlog.get_logger(__name__)

FORMAT_VERSION = 2
"""Bumped whenever the body's shape changes: an older file is then refused, not misread
(2: the body in sections, references and chunk postings apart)."""
MAGIC = b"GZSTATE\n"
COMPRESSION_LEVEL = 1
"""zlib's fastest level: django's state compresses ~5x at ~100 MB/s (a restart reads it)."""


class SnapshotRejected(Rejected):
    """A snapshot that cannot be trusted; ``reason`` is one of ``REASONS``."""


REASONS = ("missing", "not_a_snapshot", "wrong_version", "truncated", "checksum", "invalid")


class FencedMark(Record):
    lease: LeaseRecord
    last_seq: int = Field(ge=0)


class StateSnapshot(Record):
    """One repository's materialized state as of graph delta ``seq`` (see the module)."""

    v: Literal[1] = 1
    kind: Literal["state_snapshot"] = "state_snapshot"
    repo: str
    seq: int = Field(ge=1, description="the last graph delta the state reflects")
    taken_at: float
    source: SourceMark
    files: tuple[FileRecord, ...] = ()
    nodes: tuple[NodeRecord, ...] = ()
    edges: tuple[EdgeRecord, ...] = ()
    indexed_commit: str | None = None
    branch: str | None = None
    indexed_at: float | None = None
    last_event_kind: str | None = None
    scans_completed: int = Field(default=0, ge=0)
    commits: tuple[CommitRecord, ...] = ()
    lease: LeaseRecord | None = None
    fenced: tuple[FencedMark, ...] = ()
    neighborhoods: NeighborhoodSnapshot | None = None
    resolved: bool = Field(
        default=False,
        description="no file a scan sent waits for its barrier: every file's references "
        "are resolved into the edges (a worker restored from it resolves nothing before "
        "its first change; false: unknown)",
    )


class FileReferences(Record):
    """The ``references`` section: each file's references, in the snapshot's file order."""

    files: tuple[tuple[ReferenceRecord, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class ReaderSnapshot:
    """What a read side loads of a snapshot (`decode_reader`): the state, each file's
    references as counted placeholders, and the chunks' postings when the snapshot
    carries some that this build can use (None: the reader tokenizes)."""

    snapshot: StateSnapshot
    postings: ChunkPostings | None


def capture(
    state: RepoState,
    neighborhoods: NeighborhoodSnapshot | None = None,
    taken_at: float = 0.0,
    *,
    resolved: bool = False,
) -> StateSnapshot:
    """The snapshot of ``state`` (at least one delta applied), records in key order.

    ``neighborhoods`` newer than the state (computed from a later delta) cannot be, so
    it is kept only when its ``graph_seq`` is within the state."""
    from stores.repo_state import printable

    if state.seq < 1 or state.source is None:
        raise ValueError(f"no delta applied to {state.repo}: nothing to snapshot")
    if neighborhoods is not None and (
        neighborhoods.repo != state.repo or neighborhoods.graph_seq > state.seq
    ):
        neighborhoods = None
    return StateSnapshot(
        repo=state.repo,
        seq=state.seq,
        taken_at=taken_at,
        source=state.source,
        files=tuple(printable(state.files[p]) for p in sorted(state.files)),
        nodes=tuple(state.nodes[i] for i in sorted(state.nodes)),
        edges=tuple(sorted(state.edges.values(), key=lambda e: (e.src, e.dst, e.kind))),
        indexed_commit=state.indexed_commit,
        branch=state.branch,
        indexed_at=state.indexed_at,
        last_event_kind=state.last_event_kind,
        scans_completed=state.scans_completed,
        commits=tuple(state.commits),
        lease=state.lease,
        fenced=tuple(FencedMark(lease=f.lease, last_seq=f.last_seq) for f in state.fenced),
        neighborhoods=neighborhoods,
        resolved=resolved,
    )


def base_delta(snapshot: StateSnapshot) -> GraphDelta:
    """The whole state as one delta numbered ``snapshot.seq``: what a reader folds onto an
    empty state standing at ``seq - 1`` (`restore_state`) and what derived indexes (the
    worker's graph, the read side's file graph and retrieval) absorb to match it."""
    return GraphDelta(
        repo=snapshot.repo,
        seq=snapshot.seq,
        source=snapshot.source,
        event_kind=snapshot.last_event_kind or "state_snapshot",
        applied_at=snapshot.indexed_at if snapshot.indexed_at is not None else snapshot.taken_at,
        files_upserted=snapshot.files,
        nodes_upserted=snapshot.nodes,
        edges_upserted=snapshot.edges,
        indexed_commit=snapshot.indexed_commit,
        branch=snapshot.branch,
        resolved=snapshot.resolved,
    )


def restore_state(snapshot: StateSnapshot) -> RepoState:
    """The RepoState the snapshot was captured from (equal ``canonical`` encodings)."""
    from stores.repo_state import FencedLease, RepoState

    state = RepoState(snapshot.repo)
    state.seq = snapshot.seq - 1
    state.apply(base_delta(snapshot))  # the owner indexes, exactly as folding builds them
    state.indexed_at = snapshot.indexed_at
    state.last_event_kind = snapshot.last_event_kind
    state.scans_completed = snapshot.scans_completed
    state.commits.extend(snapshot.commits)
    state.lease = snapshot.lease
    state.fenced.extend(FencedLease(f.lease, f.last_seq) for f in snapshot.fenced)
    return state


@dataclass(frozen=True, slots=True)
class SnapshotHeader:
    """What a snapshot says of itself, readable without decoding its body: enough for a
    producer session to reconcile from (`peek`)."""

    repo: str
    seq: int
    indexed_commit: str | None
    epoch: int  # the lease's, 0 without one
    body_at: int
    body_bytes: int
    body_sha256: str
    offset: int | None = None
    """Where the delta ``seq`` begins on the graph-deltas partition (the offset of its
    first message), when the writer knew it: a reader seeks there instead of fetching
    the deltas before it (`stores.delta_seek`). Snapshots written before it have none."""
    floor: int | None = None
    """The offset from which a reader of the partition must read, given the snapshots
    the writer kept of every repository of the partition when it wrote this one: the
    smallest of their ``offset``s (a repository of the partition without a snapshot
    would make it 0, so it is then left out)."""


def _frame() -> Frame:
    schema = schema_fingerprint(StateSnapshot) + schema_fingerprint(FileReferences)
    return Frame(MAGIC, FORMAT_VERSION, schema, COMPRESSION_LEVEL)


def _rejected(refusal: Rejected) -> SnapshotRejected:
    reason = "not_a_snapshot" if refusal.reason == "not_framed" else refusal.reason
    return SnapshotRejected(reason, refusal.detail)


def encode(
    snapshot: StateSnapshot,
    *,
    offset: int | None = None,
    floor: int | None = None,
    counts: CountCache | None = None,
) -> bytes:
    """The file's bytes: MAGIC, the header line, the compressed sections (`stores.framing`).

    ``offset`` and ``floor`` (`SnapshotHeader`) go in the header only when known: a build
    that does not know them reads the header as before (its fields are the caller's).
    ``counts``: the chunks' counts of the repository's previous snapshot (a worker keeps
    them), reused for the chunks that did not change (`stores.chunk_postings.count`)."""
    fields: dict[str, object] = {
        "repo": snapshot.repo,
        "seq": snapshot.seq,
        "indexed_commit": snapshot.indexed_commit,
        "epoch": snapshot.lease.epoch if snapshot.lease is not None else 0,
    }
    if offset is not None:
        fields["offset"] = offset
        if floor is not None:
            fields["floor"] = min(floor, offset)
    files = snapshot.files
    bare = snapshot.model_copy(update={"files": tuple(_with_references(f, ()) for f in files)})
    references = FileReferences(files=tuple(f.references for f in files))
    from stores import chunk_postings

    postings = chunk_postings.count(tuple(chunk_postings.chunks_in_order(files)), counts)
    sections = (
        ("state", bare.model_dump_json().encode()),
        ("counts", json.dumps([len(f.references) for f in files]).encode()),
        ("references", references.model_dump_json().encode()),
        ("postings", chunk_postings.encode(postings)),
    )
    return _frame().encode_sections(fields, sections)


def _with_references(record: FileRecord, references: tuple[Any, ...]) -> FileRecord:
    if record.references == references:
        return record
    # trusted: the record's own values, one replaced (a model's copy takes its own set)
    return trusted(FileRecord, {**record.__dict__, "references": references})


def _header(fields: dict[str, Any], body_at: int) -> SnapshotHeader:
    try:
        return SnapshotHeader(
            repo=str(fields["repo"]),
            seq=int(fields["seq"]),
            indexed_commit=fields["indexed_commit"],
            epoch=int(fields["epoch"]),
            body_at=body_at,
            body_bytes=int(fields["bytes"]),
            body_sha256=str(fields["sha256"]),
            offset=_offset(fields.get("offset")),
            floor=_offset(fields.get("floor")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotRejected("invalid", f"header: {exc!r}") from exc


def _offset(value: object) -> int | None:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"not an offset: {value!r}")
    return value


def read_header(raw: bytes) -> SnapshotHeader:
    """The header of a snapshot's bytes (enough of them: MAGIC and the first line), or
    `SnapshotRejected`: not a snapshot, written by a build of another format or contract,
    or a header that does not check."""
    try:
        fields, body_at = _frame().header(raw)
    except Rejected as refusal:
        raise _rejected(refusal) from refusal
    return _header(fields, body_at)


def peek(raw: bytes) -> SnapshotHeader:
    """The header of a whole, intact snapshot (length and checksum verified), without
    decoding its body."""
    try:
        fields, body = _frame().verified(raw)
    except Rejected as refusal:
        raise _rejected(refusal) from refusal
    return _header(fields, len(raw) - len(body))


def decode(raw: bytes, *, references: bool = True) -> StateSnapshot:
    """The snapshot in ``raw``, verified (magic, version, contract, the sections' lengths
    and checksums).

    The body is rebuilt trusted (`stores.trusted_json`): its checksum and the contract's
    fingerprint are verified first. ``references=False``: each file's references are
    ``None`` placeholders, counted, never built, their section neither inflated nor
    parsed (a replica counts and drops them; they are most of a snapshot's records):
    such a snapshot restores no worker. With them, the whole body's checksum is
    verified too (the postings, which a worker does not read, included)."""
    if references:
        try:
            _frame().verified(raw)
        except Rejected as refusal:
            raise _rejected(refusal) from refusal
    header, sections = _sections(raw)
    return _state(header, sections, references)


def decode_reader(raw: bytes) -> ReaderSnapshot:
    """What a read side loads (`ReaderSnapshot`): ``decode(raw, references=False)`` and
    the chunk postings, or None for them when their section does not check or read, or
    another tokenizer made them (logged ``chunk_postings_unused``; the reader tokenizes)."""
    from stores import chunk_postings

    header, sections = _sections(raw)
    snapshot = _state(header, sections, False)
    try:
        postings: ChunkPostings | None = chunk_postings.decode(sections.get("postings"))
    except (Rejected, chunk_postings.PostingsRejected) as exc:
        log.warning("chunk_postings_unused", repo=snapshot.repo, seq=snapshot.seq, reason=str(exc))
        postings = None
    if postings is not None and not postings.usable:
        log.info("chunk_postings_unused", repo=snapshot.repo, reason="another tokenizer")
        postings = None
    return ReaderSnapshot(snapshot, postings)


def _sections(raw: bytes) -> tuple[SnapshotHeader, Sections]:
    try:
        fields, sections = _frame().sections(raw)
    except Rejected as refusal:
        raise _rejected(refusal) from refusal
    return _header(fields, 0), sections


def _state(header: SnapshotHeader, sections: Sections, references: bool) -> StateSnapshot:
    try:
        snapshot: StateSnapshot = trusted_json.load(StateSnapshot, sections.get("state"))
        counts = json.loads(sections.get("counts"))
        if not isinstance(counts, list) or len(counts) != len(snapshot.files):
            raise ValueError("the reference counts do not match the files")
        if references:
            held = trusted_json.load(FileReferences, sections.get("references")).files
            if [len(r) for r in held] != counts:
                raise ValueError("the references do not match their counts")
        else:
            if not all(isinstance(n, int) and n >= 0 for n in counts):
                raise ValueError("a reference count is not a count")
            held = [(None,) * n for n in counts]
        files = tuple(_with_references(f, r) for f, r in zip(snapshot.files, held, strict=True))
        snapshot = trusted(StateSnapshot, {**snapshot.__dict__, "files": files})
    except Rejected as refusal:
        raise _rejected(refusal) from refusal
    except (ValidationError, KeyError, TypeError, ValueError) as exc:
        raise SnapshotRejected("invalid", repr(exc)[:500]) from exc
    if (snapshot.repo, snapshot.seq) != (header.repo, header.seq):
        raise SnapshotRejected("invalid", "the body's repo or seq differs from the header's")
    return snapshot


def against_log(
    snapshot: StateSnapshot, deltas: Sequence[GraphDelta], skipped_to: int = 0
) -> str | None:
    """Why ``snapshot`` cannot start a state the repository's ``deltas`` (in log order)
    continue, or None when it can: the log begins after it (an embedded broker restarted
    empty, or a finite retention that dropped what it covers) or is empty, or it holds
    the snapshot's own last delta, from the same producer event applied at the same time
    (the same history). A log that holds deltas up to before the snapshot's, but not it,
    or another delta under its number, is another history (topics recreated, a worker
    elsewhere that started over): the log then decides, never a mix of both.

    ``skipped_to``: the highest delta before the snapshot's that the reader left out
    undecoded (`stores.deltas.peek_seq`), 0 for none: the log holds it, so it does not
    begin after the snapshot."""
    continuation = Continuation.of(snapshot, skipped_to)
    for delta in deltas:
        reason = continuation.see(delta)
        if reason is not None:
            return reason
    return continuation.end()


@dataclass(slots=True)
class Continuation:
    """`against_log` one delta at a time, for a reader that folds the log as it comes
    (the query side) and skips the deltas a loaded snapshot covers without decoding
    them (`skip`). ``see`` says at once when the log is another history; ``end``, once
    the whole log is read, whether it ended before the snapshot's own delta."""

    seq: int
    source: SourceMark
    applied_at: float | None
    before: int = 0  # the highest delta read (or skipped) before the snapshot's
    confirmed: bool = False  # the log holds the snapshot's delta, or begins after it

    @classmethod
    def of(cls, snapshot: StateSnapshot, skipped_to: int = 0) -> Continuation:
        return cls(snapshot.seq, snapshot.source, snapshot.indexed_at, before=skipped_to)

    def skip(self, seq: int) -> None:
        """A delta before the snapshot's, left out undecoded."""
        self.before = max(self.before, seq)

    def see(self, delta: GraphDelta | Envelope) -> str | None:
        """The next whole delta of the repository in log order (or the envelope of one,
        `stores.deltas.peek_envelope`: what identifies it): None while the log may
        continue the snapshot, else why it does not."""
        if delta.seq < self.seq:
            self.skip(delta.seq)
            return None
        if delta.seq == self.seq:
            if delta.source != self.source or delta.applied_at != self.applied_at:
                return f"the log's delta {self.seq} is not the one the snapshot covers"
            self.confirmed = True
            return None
        if not self.confirmed and self.before:
            return (
                f"the log goes from delta {self.before} to {delta.seq} without the "
                f"snapshot's {self.seq}"
            )
        self.confirmed = True  # begins after it
        return None

    def end(self) -> str | None:
        """At the end of the log: why it does not continue the snapshot, or None."""
        if not self.confirmed and self.before:
            return f"the log ends at delta {self.before}, before the snapshot's {self.seq}"
        return None


def canonical(state: RepoState) -> bytes:
    """The canonical encoding of a state (no time stamp, no neighborhoods): equal states,
    equal bytes. What the property tests compare."""
    return capture(state).model_dump_json().encode()
