"""A churn ledger as one file's bytes: encode, decode, verify, and whether it fits a state.

The query side of ``gazetteer up`` keeps each repository's ledger beside the worker's
state snapshot (issue 16), so that a restart serves the churn history it served before
instead of starting empty at the snapshot. A ledger is history folded from deltas, so it
goes with exactly one state: the one as of its last delta. `SavedLedger.covers` names
that state (the delta's seq, the producer event it reflects and when it was applied, as
`stores.state_snapshot.against_log` tells histories apart); `mismatch` refuses a ledger
that covers another delta or another history than the state snapshot being loaded, so a
restored ledger never disagrees with the state it is served with.

Everything the ledger holds is saved (`ChurnLedger.parts`: its entries, its open
accumulator with the images it nets against, the import cycles and hubs it compares
with, the snapshot digests waiting for their delta), so a ledger loaded and folded on
answers as the one folded straight through (tests/unit/test_churn_durable.py). The
body is JSON through pydantic TypeAdapters of the frozen dataclasses (no pickle: a
service reads these files back); maps keyed by tuples are saved as pairs, in order.

A file is ``MAGIC``, one JSON header line (format, schema fingerprint, repo, seq, the
body's length and sha256, the header's own check) and the zlib-compressed body; `decode`
refuses anything else with a `LedgerRejected` naming the reason. Pure: values in, values
out.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, replace
from functools import cache

from pydantic import ConfigDict, TypeAdapter, ValidationError

from query.churn.accumulator import Accumulator, Tallies
from query.churn.entry import ChurnEntry, CommitInfo
from query.churn.images import Arc, EdgeKey, FileImage
from query.churn.ledger import ChurnLedger, LedgerParts
from query.churn.neighborhood_part import EntryPoints, NeighborhoodPart, SnapshotDigest
from stores.deltas import SourceMark
from stores.framing import Frame, Rejected
from stores.repo_state import RepoState
from stores.state_snapshot import StateSnapshot

FORMAT_VERSION = 1
"""Bumped whenever the body's meaning changes; its shape is also fingerprinted."""
MAGIC = b"GZCHURN\n"
COMPRESSION_LEVEL = 1
REASONS = ("not_a_ledger", "wrong_version", "truncated", "checksum", "invalid")
FITS = ("older", "newer", "other_history")
"""Why a sound ledger is not loaded with a state snapshot (`mismatch`)."""


class LedgerRejected(Rejected):
    """A ledger file that cannot be trusted; ``reason`` is one of ``REASONS``."""


@dataclass(frozen=True, slots=True)
class Covers:
    """The state a ledger was folded to: its last delta, the producer event that delta
    reflects and when it was applied (a state snapshot of another history has the same
    seq but not the same mark)."""

    seq: int
    source: SourceMark | None
    indexed_at: float | None


@dataclass(frozen=True, slots=True)
class SavedTallies:
    files: tuple[tuple[str, int], ...]
    symbols: tuple[tuple[str, int], ...]
    edges_added: tuple[tuple[str, int], ...]
    edges_removed: tuple[tuple[str, int], ...]
    dependencies: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class SavedOpen:
    """The open accumulator, its maps as pairs in their order."""

    first_seq: int
    last_seq: int
    indexed_at: float
    counting: bool
    info: CommitInfo
    files: tuple[tuple[str, FileImage | None], ...]
    edges: tuple[tuple[EdgeKey, bool], ...]
    arcs: tuple[tuple[Arc, float], ...]
    tallies: SavedTallies
    neighborhood: NeighborhoodPart | None


@dataclass(frozen=True, slots=True)
class SavedLedger:
    # NaN and infinities (a modularity) are written as JSON's constants, not as null.
    __pydantic_config__ = ConfigDict(ser_json_inf_nan="constants")

    repo: str
    covers: Covers
    max_entries: int
    seq: int
    snapshot_seq: int
    entries: tuple[ChurnEntry, ...]
    open: SavedOpen
    cycles: tuple[tuple[str, ...], ...]
    hubs: tuple[str, ...]
    last_points: EntryPoints
    waiting: tuple[SnapshotDigest, ...]


def covers(state: RepoState) -> Covers:
    return Covers(state.seq, state.source, state.indexed_at)


def snapshot_covers(snapshot: StateSnapshot) -> Covers:
    return Covers(snapshot.seq, snapshot.source, snapshot.indexed_at)


def capture(ledger: ChurnLedger, state: RepoState) -> SavedLedger:
    """The ledger of ``state``'s repository as it stands, copied (to encode elsewhere)."""
    parts = ledger.parts()
    o = parts.open
    t = o.tallies
    return SavedLedger(
        repo=state.repo,
        covers=covers(state),
        max_entries=parts.max_entries,
        seq=parts.seq,
        snapshot_seq=parts.snapshot_seq,
        entries=parts.entries,
        open=SavedOpen(
            first_seq=o.first_seq,
            last_seq=o.last_seq,
            indexed_at=o.indexed_at,
            counting=o.counting,
            info=o.info,
            files=tuple(o.files.items()),
            edges=tuple(o.edges.items()),
            arcs=tuple(o.arcs.items()),
            tallies=SavedTallies(
                tuple(t.files.items()),
                tuple(t.symbols.items()),
                tuple(t.edges_added.items()),
                tuple(t.edges_removed.items()),
                tuple(t.dependencies.items()),
            ),
            neighborhood=o.neighborhood,
        ),
        cycles=tuple(sorted(tuple(sorted(c)) for c in parts.cycles)),
        hubs=tuple(sorted(parts.hubs)),
        last_points=parts.last_points,
        waiting=parts.waiting,
    )


def restore(saved: SavedLedger) -> ChurnLedger:
    """The ledger ``saved`` was captured from."""
    o, t = saved.open, saved.open.tallies
    accumulator = Accumulator(
        first_seq=o.first_seq,
        last_seq=o.last_seq,
        indexed_at=o.indexed_at,
        counting=o.counting,
        info=o.info,
        files=dict(o.files),
        edges=dict(o.edges),
        arcs=dict(o.arcs),
        tallies=Tallies(
            Counter(dict(t.files)),
            Counter(dict(t.symbols)),
            Counter(dict(t.edges_added)),
            Counter(dict(t.edges_removed)),
            Counter(dict(t.dependencies)),
        ),
        neighborhood=o.neighborhood,
    )
    entries, waiting, last_points = _shared_points(saved)
    return ChurnLedger.from_parts(
        LedgerParts(
            max_entries=saved.max_entries,
            seq=saved.seq,
            snapshot_seq=saved.snapshot_seq,
            entries=entries,
            open=accumulator,
            cycles=frozenset(frozenset(c) for c in saved.cycles),
            hubs=frozenset(saved.hubs),
            last_points=last_points,
            waiting=waiting,
        )
    )


def _shared_points(
    saved: SavedLedger,
) -> tuple[tuple[ChurnEntry, ...], tuple[SnapshotDigest, ...], EntryPoints]:
    """The entries, waiting digests and last entry points, equal consecutive entry-point
    maps made one object again (as the ledger shares them: one mapping, many entries)."""
    last: EntryPoints | None = None

    def shared(points: EntryPoints) -> EntryPoints:
        nonlocal last
        if last is None or points != last:
            last = points
        return last

    entries = []
    for entry in saved.entries:
        part = entry.neighborhood
        if part is not None:
            entry = _with_points(entry, part, shared(part.entry_points))
        entries.append(entry)
    waiting = tuple(_digest_with(d, shared(d.entry_points)) for d in saved.waiting)
    return tuple(entries), waiting, shared(saved.last_points)


def _with_points(entry: ChurnEntry, part: NeighborhoodPart, points: EntryPoints) -> ChurnEntry:
    if part.entry_points is points:
        return entry
    return replace(entry, neighborhood=replace(part, entry_points=points))


def _digest_with(digest: SnapshotDigest, points: EntryPoints) -> SnapshotDigest:
    if digest.entry_points is points:
        return digest
    return replace(digest, entry_points=points)


def mismatch(saved: SavedLedger, snapshot: StateSnapshot) -> tuple[str, str] | None:
    """Why ``saved`` cannot be served with the state ``snapshot`` holds (a reason of
    ``FITS`` and a detail), or None when it covers exactly that state."""
    if saved.repo != snapshot.repo:
        return "other_history", f"the ledger is of {saved.repo!r}"
    mine, theirs = saved.covers, snapshot_covers(snapshot)
    if mine.seq < theirs.seq:
        return "older", f"the ledger covers delta {mine.seq}, the state {theirs.seq}"
    if mine.seq > theirs.seq:
        return "newer", f"the ledger covers delta {mine.seq}, the state {theirs.seq}"
    if mine != theirs or saved.seq != mine.seq:
        return "other_history", f"delta {mine.seq} of the ledger is not the state's"
    return None


def _frame() -> Frame:
    return Frame(MAGIC, FORMAT_VERSION, schema_fingerprint(), COMPRESSION_LEVEL)


def encode(saved: SavedLedger) -> bytes:
    """The file's bytes: MAGIC, the header line, the compressed body (`stores.framing`)."""
    return _frame().encode(
        {"repo": saved.repo, "seq": saved.covers.seq}, _adapter().dump_json(saved)
    )


def decode(raw: bytes) -> SavedLedger:
    """The ledger in ``raw``, verified (magic, version, schema, length, checksums)."""
    try:
        header, body = _frame().decode(raw)
    except Rejected as refusal:
        reason = "not_a_ledger" if refusal.reason == "not_framed" else refusal.reason
        raise LedgerRejected(reason, refusal.detail) from refusal
    if "repo" not in header or "seq" not in header:
        raise LedgerRejected("invalid", "the header misses a field")
    try:
        saved = _adapter().validate_json(body)
    except (ValidationError, ValueError) as exc:
        raise LedgerRejected("invalid", repr(exc)[:500]) from exc
    if (saved.repo, saved.covers.seq) != (header["repo"], header["seq"]):
        raise LedgerRejected("invalid", "the body's repo or seq differs from the header's")
    return saved


@cache
def _adapter() -> TypeAdapter[SavedLedger]:
    return TypeAdapter(SavedLedger)


@cache
def schema_fingerprint() -> str:
    """A digest of the saved ledger's JSON schema: any change of a field or a type of an
    entry, an image or a record changes it, and older files are refused, not misread."""
    schema = json.dumps(_adapter().json_schema(), sort_keys=True).encode()
    return hashlib.sha256(schema).hexdigest()[:16]
