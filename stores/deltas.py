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
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from itertools import chain, pairwise
from typing import Literal

import structlog
from pydantic import Field, TypeAdapter

from stores.records import EdgeRecord, FileRecord, NodeRecord, Record


class SourceMark(Record):
    """The producer event a delta reflects: producer session, its sequence, its emit time."""

    producer: str
    seq: int = Field(ge=1)
    emitted_at: float


class CommitRecord(Record):
    sha: str
    parents: tuple[str, ...]
    branch: str
    changed_paths: int = Field(ge=0)
    committed_at: float
    subject: str = ""


class DeltaPart(Record):
    """Which message of a delta sent in parts this one is."""

    group: str = Field(description="the same for the parts of one encoding of one delta")
    index: int = Field(ge=0)
    count: int = Field(ge=2)


class GraphDelta(Record):
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
    return _DELTA.validate_json(raw)


def encode_delta(delta: GraphDelta) -> bytes:
    return delta.model_dump_json(exclude_defaults=False).encode()


DELTA_PART_BYTES = 1024 * 1024
"""The largest message a delta is encoded in, unless one record alone is larger: Kafka's
default message limit, so that a repository of any size fits the topic's."""
_LISTS = (
    "files_removed",
    "files_upserted",
    "nodes_removed",
    "nodes_upserted",
    "edges_removed",
    "edges_upserted",
)
_PARTS = uuid.UUID("5d0c6c55-1d3e-4f55-9d55-2a7a0f0e6b1c")


def encode_parts(delta: GraphDelta, limit: int = DELTA_PART_BYTES) -> list[bytes]:
    """The messages ``delta`` is sent in: itself when it encodes within ``limit`` bytes,
    otherwise parts of at most ``limit`` bytes each (a record larger than that alone in
    its part). Each part holds a contiguous run of the delta's records and every other
    field; joined in order they are the delta again."""
    whole = encode_delta(delta)
    items = [(name, item) for name in _LISTS for item in getattr(delta, name)]
    if len(whole) <= limit or len(items) < 2:
        return [whole]
    # Deterministic: sending the same delta again yields the same parts.
    group = uuid.uuid5(_PARTS, f"{delta.repo}\0{delta.seq}\0{delta.applied_at!r}\0{len(items)}").hex
    count = min(len(items), math.ceil(len(whole) * 1.2 / limit))  # some slack: parts vary
    while True:
        runs = _runs(len(items), count)
        parts = [
            encode_delta(
                _part(delta, items[start:end], DeltaPart(group=group, index=i, count=len(runs)))
            )
            for i, (start, end) in enumerate(runs)
        ]
        if len(parts) == len(items) or all(len(part) <= limit for part in parts):
            return parts
        count = min(len(items), count * 2)  # records of uneven sizes: cut finer


def _runs(total: int, count: int) -> list[tuple[int, int]]:
    """``count`` contiguous runs of ``range(total)``, as even as can be."""
    bounds = [total * i // count for i in range(count + 1)]
    return list(pairwise(bounds))


def _part(delta: GraphDelta, items: list[tuple[str, object]], part: DeltaPart) -> GraphDelta:
    lists: dict[str, list[object]] = {name: [] for name in _LISTS}
    for name, item in items:
        lists[name].append(item)
    return delta.model_copy(update={**{k: tuple(v) for k, v in lists.items()}, "part": part})


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
    update: dict[str, object] = {
        name: tuple(chain.from_iterable(getattr(p, name) for p in parts)) for name in _LISTS
    }
    return parts[0].model_copy(update={**update, "part": None})
