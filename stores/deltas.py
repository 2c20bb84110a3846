"""The graph delta: one applied event's change to a repository's materialized state.

The processors publish one GraphDelta per applied event on the graph-deltas topic,
numbered per repository from 1 without gaps. Folding the deltas of a repository in
order rebuilds its state exactly (RepoState.apply); a delta whose number was already
applied is a no-op, so replays and duplicate deliveries are harmless.

A delta larger than ``DELTA_PART_BYTES`` encoded (a scan's barrier carries every edge
the scan resolved: 5.5 MB for django, ~25 MB for sympy, more than any broker's message
limit for a repository some times larger) travels as several messages, its parts
(`encode_parts`); readers put the parts back together (`DeltaAssembler`) and fold only
whole deltas. A part is never applied alone, so a worker that stops between two parts
leaves a delta nobody applied: its restored successor handles the event again.

No message is larger than ``DELTA_PART_BYTES``, whatever the delta: a record too large
for one part (the record of a 1 MB generated file encodes to 7.5 MB: its chunks' text,
symbols and references) is cut into pieces of its JSON text, and so is a single string
of any length; the bound on the number of messages is in `encode_parts` (issue 15: one
such file used to cost 270,000 messages, the largest 15 MB).
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from sys import intern
from typing import Any, Literal

import msgspec
import structlog
from pydantic import Field, TypeAdapter

from stores.records import (
    EdgeRecord,
    FileRecord,
    NodeRecord,
    Record,
    share_fields_set,
)


class SourceMark(Record):
    """The producer event a delta reflects: producer session, its sequence, its emit time,
    and its lease epoch. Only events of the state's lease are applied, so the mark's
    ``(epoch, producer)`` is the state's lease (1 for deltas written before leases)."""

    producer: str
    seq: int = Field(ge=1)
    emitted_at: float
    epoch: int = Field(default=1, ge=1)

    @property
    def lease(self) -> tuple[int, str]:
        return (self.epoch, self.producer)


class LeaseRecord(Record):
    """The lease a LeaseClaimed established (issue 15): who owns the repository's events.

    Ordered by ``key``, ``(epoch, producer)``; ``public_key`` (Ed25519, hex) verifies the
    signature of every event of the lease."""

    producer: str
    epoch: int = Field(ge=1)
    public_key: str
    host: str
    root: str
    claimed_at: float

    @property
    def key(self) -> tuple[int, str]:
        return (self.epoch, self.producer)


class CommitRecord(Record):
    """A commit a producer observed on the followed branch (the churn ledger's unit)."""

    sha: str
    parents: tuple[str, ...]
    branch: str
    changed_paths: int = Field(ge=0)
    committed_at: float
    subject: str = ""


class DeltaPiece(Record):
    """A slice of the JSON text of one record too large to travel whole: the pieces of
    ``(field, at)`` in part order, joined, are that record's encoding."""

    field: str = Field(description="the delta's list the record belongs to: 'files_upserted'")
    at: int = Field(ge=0, description="the record's index in that list of the whole delta")
    text: str


class DeltaPart(Record):
    """Which message of a delta sent in parts this one is."""

    group: str = Field(description="the same for the parts of one encoding of one delta")
    index: int = Field(ge=0)
    count: int = Field(ge=2)
    pieces: tuple[DeltaPiece, ...] = Field(
        default=(), description="slices of records too large for one part (at most two)"
    )


class GraphDelta(Record):
    """One change of one repository's materialized state: what the worker made of one
    producer event (files, nodes and edges upserted and removed; a commit observed; a
    barrier's indexed commit; a lease claimed), numbered ``seq`` per repository without
    gaps. The worker publishes it on the graph-deltas topic keyed by repository; the worker
    restoring a partition and every query replica fold it with `RepoState.apply`, so all
    readers hold the same state. Sent whole up to `DELTA_PART_BYTES`, in parts beyond."""

    v: Literal[1] = 1
    kind: Literal["graph_delta"] = "graph_delta"
    repo: str
    seq: int = Field(ge=1, description="per repository, from 1, without gaps")
    source: SourceMark
    event_kind: str = Field(description="the kind of the event this delta applies")
    applied_at: float
    files_upserted: tuple[FileRecord, ...] = ()
    files_removed: tuple[str, ...] = ()
    nodes_upserted: tuple[NodeRecord, ...] = ()
    nodes_removed: tuple[str, ...] = ()
    edges_upserted: tuple[EdgeRecord, ...] = ()
    edges_removed: tuple[tuple[str, str, str], ...] = ()
    commit: CommitRecord | None = Field(default=None, description="a commit observed")
    indexed_commit: str | None = Field(
        default=None, description="set by a barrier: the state now reflects this commit"
    )
    branch: str | None = None
    barrier: Literal["scan_completed", "commit_completed"] | None = None
    part: DeltaPart | None = Field(
        default=None, description="set on the messages of a delta sent in parts"
    )
    lease: LeaseRecord | None = Field(
        default=None, description="set by a LeaseClaimed: the repository's lease from now on"
    )
    resolved: bool | None = Field(
        default=None,
        description="the state after it has every file resolved into its edges (no file of "
        "a scan waits for its barrier); None: not said (a delta written before it was)",
    )

    @property
    def changes(self) -> int:
        return (
            len(self.files_upserted)
            + len(self.files_removed)
            + len(self.nodes_upserted)
            + len(self.nodes_removed)
            + len(self.edges_upserted)
            + len(self.edges_removed)
        )


log = structlog.get_logger(__name__)
_DELTA = TypeAdapter(GraphDelta)


def decode_delta(raw: bytes) -> GraphDelta:
    """A delta (or one part of one) from its message value; raises ``ValidationError``.
    Its file records share one fields-set (`share_fields_set`); what they hold are facts,
    which have none."""
    delta = _DELTA.validate_json(raw)
    for record in delta.files_upserted:
        share_fields_set(record)
        _share_strings(record)
    for fact in (*delta.nodes_upserted, *delta.edges_upserted):
        _intern_ids(fact)
    return delta


_set = object.__setattr__


def _share_strings(record: FileRecord) -> None:
    """One object per value among a file's symbols, chunks, sections and keywords: a
    symbol's chunk repeats its qualified name, signature and docstring, every chunk its
    file's path, and line numbers and keyword weights repeat (JSON decoding makes an
    object per occurrence; CPython shares only the ints up to 256, and no float)."""
    pool: dict[str, str] = {record.path: record.path}
    for fact, names in (
        *((symbol, _SYMBOL_TEXTS) for symbol in record.symbols),
        *((chunk, _CHUNK_TEXTS) for chunk in record.chunks),
    ):
        for name in names:
            value = getattr(fact, name)
            if value is not None:
                _set(fact, name, pool.setdefault(value, value))
    for fact in (*record.symbols, *record.chunks, *record.sections):
        _share_numbers(fact, _LINES, _INTS)
    for keyword in record.keywords:  # a few hundred weights among sympy's 24,000 keywords
        _share_numbers(keyword, ("weight",), _FLOATS)


_SYMBOL_TEXTS = ("qualname", "signature", "doc")
_CHUNK_TEXTS = ("path", "qualname", "signature", "doc")
_LINES = ("line_start", "line_end")

POOLED_NUMBERS = 1 << 16
"""How many distinct line numbers and weights decoding shares (a bound: the pools never
grow with the history)."""
_INTS: dict[int, int] = {}
_FLOATS: dict[float, float] = {}


def _share_numbers(fact: object, names: tuple[str, ...], pool: dict[Any, Any]) -> None:
    for name in names:
        value = getattr(fact, name)
        held = pool.get(value)
        if held is not None:
            _set(fact, name, held)
        elif value is not None and len(pool) < POOLED_NUMBERS:
            pool[value] = value


def _intern_ids(record: object) -> None:
    """One string per node id: JSON decoding gives every edge end its own copy of an id
    its node already holds (~80 bytes each, two per edge). Interned strings are freed
    with their last holder. Weights and line numbers are shared too (`_share_numbers`).
    A decoded fact is its decoding's own until that returns, so setting its slots here
    is not seen as a change by anyone."""
    if isinstance(record, EdgeRecord):
        _set(record, "src", intern(record.src))
        _set(record, "dst", intern(record.dst))
        _share_numbers(record, ("weight",), _FLOATS)
        _share_numbers(record, ("line",), _INTS)  # the call site's
    elif isinstance(record, NodeRecord):
        _set(record, "id", intern(record.id))
        _share_numbers(record, _LINES, _INTS)


def encode_delta(delta: GraphDelta) -> bytes:
    """The message value of a delta that fits one part (`encode_parts` cuts larger ones)."""
    return delta.model_dump_json(exclude_defaults=False).encode()


_HEAD = b'{"v":1,"kind":"graph_delta","repo":'
_DIGITS = 20


@functools.lru_cache(maxsize=4096)
def _head(repo: str) -> bytes:
    return _HEAD + json.dumps(repo).encode() + b',"seq":'


def peek_seq(raw: bytes, repo: str) -> int | None:
    """The number of a delta (or of one part of one) of ``repo`` read from the first
    bytes of its message, without decoding it: `encode_delta` writes ``v``, ``kind``,
    ``repo`` and ``seq`` first. None when the bytes do not begin that way (another
    repository, another encoding): the caller decodes them. What lets a reader skip the
    deltas a state snapshot covers for the cost of fetching them (issue 16)."""
    head = _head(repo)
    if not raw.startswith(head):
        return None
    at = end = len(head)
    while end < len(raw) and end - at <= _DIGITS and 48 <= raw[end] <= 57:
        end += 1
    if end == at or end - at > _DIGITS or end >= len(raw) or raw[end] != 44:  # b","
        return None
    return int(raw[at:end])


class _Mark(msgspec.Struct):
    producer: str
    seq: int
    emitted_at: float
    epoch: int = 1


class _Envelope(msgspec.Struct):
    repo: str
    seq: int
    source: _Mark
    applied_at: float


@dataclass(frozen=True, slots=True)
class Envelope:
    """What identifies a delta (or one part of one: every part carries it), read without
    building its records: enough to tell whether it is the one a state snapshot covers."""

    repo: str
    seq: int
    source: SourceMark
    applied_at: float


def peek_envelope(raw: bytes) -> Envelope | None:
    """The envelope of a graph-delta message, its lists parsed past but not built (a
    replica checks the snapshot's own delta, 36 MB of parts for sympy's scan barrier,
    this way), or None when it does not decode so: the caller decodes it whole."""
    try:
        head = msgspec.json.decode(raw, type=_Envelope)
        mark = head.source
        source = SourceMark(
            producer=mark.producer, seq=mark.seq, emitted_at=mark.emitted_at, epoch=mark.epoch
        )
    except (msgspec.DecodeError, ValueError):
        return None
    return Envelope(head.repo, head.seq, source, head.applied_at)


DELTA_PART_BYTES = 1024 * 1024
"""The largest message a delta is encoded in: Kafka's default message limit, so that a
repository of any size, and a file of any size, fits the topic's."""
SPLIT_ABOVE = 64 * 1024
"""Records that encode to at most this many bytes always travel whole (a part that has
no room for the next one closes); larger ones are cut to fill the part they start in."""
_LISTS = (
    "files_removed",
    "files_upserted",
    "nodes_removed",
    "nodes_upserted",
    "edges_removed",
    "edges_upserted",
)
_ELEMENT: dict[str, TypeAdapter[object]] = {
    "files_removed": TypeAdapter(str),
    "files_upserted": TypeAdapter(FileRecord),
    "nodes_removed": TypeAdapter(str),
    "nodes_upserted": TypeAdapter(NodeRecord),
    "edges_removed": TypeAdapter(tuple[str, str, str]),
    "edges_upserted": TypeAdapter(EdgeRecord),
}
_PARTS = uuid.UUID("5d0c6c55-1d3e-4f55-9d55-2a7a0f0e6b1c")
_WIDE = 10**9  # index and count as wide as they may ever be, to measure the envelope


def encode_parts(delta: GraphDelta, limit: int = DELTA_PART_BYTES) -> list[bytes]:
    """The messages ``delta`` is sent in: itself when it encodes within ``limit`` bytes,
    otherwise parts, every one of at most ``limit`` bytes (no exception: a single record
    larger than that is cut into pieces of its JSON text, `DeltaPiece`).

    Each part carries every field of the delta but its lists (the *envelope*, E bytes)
    and a run of the delta's records, packed greedily in order: a record of at most
    ``s = min(SPLIT_ABOVE, (limit - E) // 16)`` bytes goes whole into the next part when
    the current one has no room for it; a larger one fills the current part and as many
    more as it needs, as pieces (a part holds at most two). Every part but the last is
    therefore filled to more than ``C - s`` of its room ``C = limit - E``, and so:

        messages <= ceil(w / (C - s - 64)),   w = n + q,

    where ``n`` is the encoded size of the delta's records (each with its comma) and
    ``q`` the number of ``"`` and ``\\`` bytes inside the records that are cut (a piece is
    JSON text inside JSON: those bytes are escaped once more; 64 bounds a piece's own
    fields). ``q <= n``; for records of code it is about a tenth of their size. With a
    1 MB limit E is a few hundred bytes and s is 64 KiB: a file whose record encodes to
    n bytes costs at most ``ceil(1.1 n / 983 KB) + 1`` messages in practice and never
    more than ``ceil(2 n / 983 KB) + 1``. Deterministic: the same delta gives the same
    messages (a retried send is harmless)."""
    whole = encode_delta(delta)
    if len(whole) <= limit:
        return [whole]
    records = sum(len(getattr(delta, name)) for name in _LISTS)
    group = uuid.uuid5(_PARTS, f"{delta.repo}\0{delta.seq}\0{delta.applied_at!r}\0{records}").hex
    empty = {name: () for name in _LISTS}
    envelope = delta.model_copy(
        update={**empty, "part": DeltaPart(group=group, index=_WIDE, count=_WIDE)}
    )
    room = limit - len(encode_delta(envelope))
    if room < 1024:
        raise ValueError(f"the delta's own fields leave {room} of {limit} bytes for its records")
    plans = _pack(delta, room, min(SPLIT_ABOVE, room // 16))
    messages = [
        encode_delta(
            delta.model_copy(
                update={
                    **{name: tuple(plan.lists.get(name, ())) for name in _LISTS},
                    "part": DeltaPart(
                        group=group, index=i, count=len(plans), pieces=tuple(plan.pieces)
                    ),
                }
            )
        )
        for i, plan in enumerate(plans)
    ]
    largest = max(len(m) for m in messages)
    if largest > limit:  # the packing's invariant: a bug if it ever fails
        raise AssertionError(f"a part of {largest} bytes exceeds the limit of {limit}")
    return messages


@dataclass(slots=True)
class _Plan:
    """What one part will carry: whole records per list, and pieces of cut ones."""

    lists: dict[str, list[object]] = field(default_factory=dict)
    pieces: list[DeltaPiece] = field(default_factory=list)
    used: int = 0


def _pack(delta: GraphDelta, room: int, small: int) -> list[_Plan]:
    plans = [_Plan()]
    for name in _LISTS:
        adapter = _ELEMENT[name]
        for at, record in enumerate(getattr(delta, name)):
            raw = adapter.dump_json(record)
            cost = len(raw) + 1  # its comma
            plan = plans[-1]
            if plan.used + cost > room and cost <= small:
                plan = _Plan()
                plans.append(plan)
            if plan.used + cost <= room:
                plan.lists.setdefault(name, []).append(record)
                plan.used += cost
                continue
            fixed = len(DeltaPiece(field=name, at=at, text="").model_dump_json()) + 1
            pos = 0
            while pos < len(raw):
                space = room - plans[-1].used - fixed
                if space < small:  # too little left here to be worth a piece
                    plans.append(_Plan())
                    continue
                end = _cut(raw, pos, space)
                plans[-1].pieces.append(DeltaPiece(field=name, at=at, text=raw[pos:end].decode()))
                plans[-1].used += fixed + _escaped(raw, pos, end)
                pos = end
    return plans


def _escaped(raw: bytes, start: int, end: int) -> int:
    """The bytes ``raw[start:end]`` (JSON text, so without control characters) take as a
    JSON string's contents: one more for each quote and backslash."""
    return end - start + raw.count(b'"', start, end) + raw.count(b"\\", start, end)


def _cut(raw: bytes, start: int, space: int) -> int:
    """The end of the longest slice of ``raw`` from ``start`` that fits ``space`` bytes
    escaped and does not split a UTF-8 character."""
    end = min(len(raw), start + space)
    if (over := _escaped(raw, start, end) - space) > 0:
        end -= over  # each byte dropped saves at least one: it fits now
    # Grow by half the slack while there is some: a byte costs at most two, so it fits.
    while end < len(raw) and (grow := (space - _escaped(raw, start, end)) // 2) > 0:
        end = min(len(raw), end + grow)
    while end < len(raw) and raw[end] & 0xC0 == 0x80:
        end -= 1
    return end


class DeltaAssembler:
    """The whole deltas of a stream of graph-delta messages, in the order they complete.

    A delta not sent in parts passes through. The parts of one are kept until all have
    arrived (in any order, duplicates harmless), then joined. Parts that can no longer
    complete usefully (a later delta of the repository is whole: the worker that sent
    them stopped and its successor handled the event again) are dropped.
    """

    def __init__(self) -> None:
        self._groups: dict[str, dict[int, GraphDelta]] = {}

    def add(self, delta: GraphDelta) -> GraphDelta | None:
        """The whole delta ``delta`` completes, or None while parts are missing."""
        part = delta.part
        if part is not None:
            parts = self._groups.setdefault(part.group, {})
            parts[part.index] = delta
            if len(parts) < part.count:
                return None
            del self._groups[part.group]
            delta = _join([parts[i] for i in range(part.count)])
        self._drop_older(delta)
        return delta

    @property
    def incomplete(self) -> int:
        """Deltas some of whose parts arrived, but not all."""
        return len(self._groups)

    def _drop_older(self, whole: GraphDelta) -> None:
        for group, parts in list(self._groups.items()):
            first = next(iter(parts.values()))
            if first.repo == whole.repo and first.seq <= whole.seq:
                del self._groups[group]
                log.warning("delta_parts_dropped", repo=whole.repo, seq=first.seq, parts=len(parts))


def assemble(deltas: Iterable[GraphDelta]) -> list[GraphDelta]:
    """The whole deltas among ``deltas`` (messages in log order); parts of a delta whose
    other parts are not there are left out."""
    assembler = DeltaAssembler()
    whole = [d for d in map(assembler.add, deltas) if d is not None]
    if assembler.incomplete:
        log.warning("delta_parts_incomplete", deltas=assembler.incomplete)
    return whole


def _join(parts: list[GraphDelta]) -> GraphDelta:
    lists: dict[str, list[object]] = {name: [] for name in _LISTS}
    texts: dict[tuple[str, int], list[str]] = {}
    for part in parts:
        for name in _LISTS:
            lists[name].extend(getattr(part, name))
        for piece in part.part.pieces if part.part is not None else ():
            texts.setdefault((piece.field, piece.at), []).append(piece.text)
    # In increasing index: every record before a cut one is in place when it goes in.
    for name, at in sorted(texts):
        record = _ELEMENT[name].validate_json("".join(texts[(name, at)]))
        if isinstance(record, FileRecord):
            share_fields_set(record)
            _share_strings(record)
        else:
            _intern_ids(record)
        lists[name].insert(at, record)
    update: dict[str, object] = {name: tuple(records) for name, records in lists.items()}
    return parts[0].model_copy(update={**update, "part": None})
