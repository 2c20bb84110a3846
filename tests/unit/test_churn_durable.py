"""Churn ledgers saved and loaded (issue 16): a ledger folded over a random stream of
deltas, commits, scans and neighborhood snapshots, saved at any cut, loaded and folded
on, serves what the ledger folded straight through serves; loaded with a state snapshot
only when it covers exactly that state; a damaged file is refused with its reason."""

from __future__ import annotations

import itertools
import random
import zlib
from collections.abc import Sequence
from dataclasses import fields
from functools import cache
from typing import Any

import pytest
from structlog.testing import capture_logs

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.churn import durable
from query.churn.accumulator import Accumulator, Tallies
from query.churn.ledger import ChurnLedger, LedgerParts
from query.read_model import ReadModel
from query.service import QueryService
from query.state_restore import load_snapshot
from stores.deltas import GraphDelta
from stores.framing import header_check
from stores.neighborhoods import NeighborhoodSnapshot
from stores.projections.graph_state import FileGraphState
from stores.state_snapshot import capture
from tests.factories import Stamp, tiny_parse
from tests.unit.test_state_snapshot import history, reader_fold

REPO = "app-1"
ALL = 10**6  # tokens: nothing cut
Message = GraphDelta | NeighborhoodSnapshot


@cache
def stream(seed: int, edits: int = 30) -> tuple[Message, ...]:
    """The deltas of a random history (scans, edits, deletions, commits, a second session
    scanning again) and neighborhood snapshots reclustered after random deltas, merged
    in a random order that keeps each topic's: a snapshot may come before its delta."""
    rng = random.Random(seed)
    index = RepoIndex(REPO, parse=tiny_parse)
    deltas: list[GraphDelta] = []
    hoods: list[tuple[int, NeighborhoodSnapshot]] = []
    previous = None
    for n, event in enumerate(history(seed, edits)):
        delta = index.handle(event, now=float(n))  # type: ignore[arg-type]
        if delta is None:
            continue
        deltas.append(delta)
        if rng.random() < 0.3:
            graph = FileGraphState.of(index.state)
            previous = recluster(graph, previous, ReclusterSettings(), now=500.0 + n)
            hoods.append((len(deltas) - 1 + rng.randint(-3, 3), previous))
    merged: list[tuple[float, int, Message]] = [(i, 0, d) for i, d in enumerate(deltas)]
    at = float("-inf")
    for position, snapshot in hoods:  # in their own order, each after the one before
        at = max(at + 0.01, position + 0.5)
        merged.append((at, 1, snapshot))
    return tuple(m for _, _, m in sorted(merged, key=lambda x: (x[0], x[1])))


def feed(model: ReadModel, messages: Sequence[Message]) -> None:
    for message in messages:
        if isinstance(message, GraphDelta):
            assert model.apply_delta(message)
        else:
            model.apply_snapshot(message)


def served(model: ReadModel) -> dict[str, Any]:
    """The churn answers: the list, each entry's detail, and the structural diff between
    every two commit entries."""
    service = QueryService(model)
    page = service.churn(REPO, limit=2000, max_tokens=ALL).model_dump(exclude={"freshness"})
    details = [
        service.churn_entry(REPO, item["id"], max_tokens=ALL).model_dump(exclude={"freshness"})
        for item in page["items"]
    ]
    entries = model.repos[REPO].churn.entries
    commits = [c for e in entries if e.kind == "commit" and (c := e.commit) is not None]
    diffs = [
        service.structural_diff(REPO, a, b, max_tokens=ALL).model_dump(exclude={"freshness"})
        for a, b in itertools.pairwise(commits)
        if a != b
    ]
    return {"page": page, "details": details, "diffs": diffs}


def round_trip(ledger: ChurnLedger, model: ReadModel) -> ChurnLedger:
    raw = durable.encode(durable.capture(ledger, model.repos[REPO].state))
    return durable.restore(durable.decode(raw))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_ledger_saved_at_any_cut_loaded_and_folded_on_serves_the_straight_fold(
    seed: int,
) -> None:
    messages = stream(seed)
    whole = ReadModel(clock=lambda: 5000.0)
    feed(whole, messages)
    expected = served(whole)
    assert len(expected["page"]["items"]) >= 4 and expected["diffs"]  # scans and commits
    waited = False
    for cut in range(len(messages) + 1):
        model = ReadModel(clock=lambda: 5000.0)
        feed(model, messages[:cut])
        view = model.repos.get(REPO)
        if view is None:
            continue
        loaded = round_trip(view.churn, model)
        assert loaded.parts() == view.churn.parts(), f"parts at cut {cut}"
        waited |= bool(loaded.parts().waiting)
        view.churn = loaded
        feed(model, messages[cut:])
        assert served(model) == expected, f"saved at message {cut}"
    assert waited, "no cut saved a snapshot waiting for its delta"


def test_a_ledger_that_dropped_its_oldest_entries_keeps_dropping_them() -> None:
    messages = stream(3)
    whole = ReadModel(clock=lambda: 5000.0)
    whole.view(REPO).churn = ChurnLedger(max_entries=3)
    feed(whole, messages)
    for cut in range(1, len(messages), 3):
        model = ReadModel(clock=lambda: 5000.0)
        model.view(REPO).churn = ChurnLedger(max_entries=3)
        feed(model, messages[:cut])
        view = model.repos[REPO]
        view.churn = round_trip(view.churn, model)
        assert view.churn.entries.maxlen == 3
        feed(model, messages[cut:])
        assert served(model) == served(whole), f"saved at message {cut}"


def test_every_part_of_the_ledger_is_saved() -> None:
    """A field added to the ledger, its accumulator or tallies without being saved fails
    here, not in a restarted service."""
    assert set(vars(ChurnLedger())) == {
        "entries",
        "seq",
        "snapshot_seq",
        "_open",
        "_cycles",
        "_hubs",
        "_last_points",
        "_waiting",
    }
    assert [f.name for f in fields(LedgerParts)] == [
        "max_entries",
        "seq",
        "snapshot_seq",
        "entries",
        "open",
        "cycles",
        "hubs",
        "last_points",
        "waiting",
    ]
    saved_open = [f.name for f in fields(durable.SavedOpen)]
    assert saved_open == [f.name for f in fields(Accumulator)]
    assert [f.name for f in fields(durable.SavedTallies)] == [f.name for f in fields(Tallies)]


def test_entry_points_shared_by_entries_are_one_mapping_again() -> None:
    messages = stream(2)
    model = ReadModel(clock=lambda: 5000.0)
    feed(model, messages)
    loaded = round_trip(model.repos[REPO].churn, model)
    parts = [e.neighborhood.entry_points for e in loaded.entries if e.neighborhood]
    assert len({id(p) for p in parts}) == len(
        [p for i, p in enumerate(parts) if i == 0 or p != parts[i - 1]]
    )


def cut_with_state(
    seed: int, cut: int
) -> tuple[Sequence[Message], ReadModel, Any, Sequence[Message]]:
    """The messages, the model fed the first ``cut``, the state snapshot the worker would
    hold at its last delta (its last neighborhoods within it), and the rest."""
    messages = stream(seed)
    model = ReadModel(clock=lambda: 5000.0)
    feed(model, messages[:cut])
    deltas = [m for m in messages[:cut] if isinstance(m, GraphDelta)]
    view = model.repos[REPO]
    return messages, model, capture(reader_fold(deltas), view.neighborhoods), messages[cut:]


@pytest.mark.parametrize("seed", [1, 3])
def test_a_ledger_loaded_with_the_state_snapshot_it_covers_then_the_rest(seed: int) -> None:
    messages = stream(seed)
    whole = ReadModel(clock=lambda: 5000.0)
    feed(whole, messages)
    expected = served(whole)
    first = next(i for i, m in enumerate(messages) if isinstance(m, GraphDelta))
    for cut in range(first + 1, len(messages) + 1):
        _, before, snapshot, rest = cut_with_state(seed, cut)
        saved = durable.decode(
            durable.encode(durable.capture(before.repos[REPO].churn, before.repos[REPO].state))
        )
        model = ReadModel(clock=lambda: 5000.0)
        with capture_logs() as logs:
            assert load_snapshot(model, snapshot, saved)
        assert [e["event"] for e in logs if "churn" in e["event"]] == ["churn_ledger_loaded"]
        feed(model, [m for m in rest if not (isinstance(m, GraphDelta) and m.seq <= snapshot.seq)])
        assert served(model) == expected, f"restored at message {cut}"


def test_the_state_snapshots_newer_neighborhoods_are_folded_into_the_loaded_ledger() -> None:
    """The worker's snapshot holds neighborhoods the query had not read when it saved its
    ledger: folded in at restore, as reading them would have."""
    seed = 4
    messages = stream(seed)
    whole = ReadModel(clock=lambda: 5000.0)
    feed(whole, messages)
    tried = 0
    for cut in range(1, len(messages)):
        nxt, rest = messages[cut], messages[cut:]
        deltas = [m for m in messages[:cut] if isinstance(m, GraphDelta)]
        if not isinstance(nxt, NeighborhoodSnapshot) or nxt.graph_seq > len(deltas):
            continue
        before = ReadModel(clock=lambda: 5000.0)
        feed(before, messages[:cut])
        view = before.repos[REPO]
        snapshot = capture(reader_fold(deltas), nxt)
        saved = durable.capture(view.churn, view.state)
        model = ReadModel(clock=lambda: 5000.0)
        assert load_snapshot(model, snapshot, saved)
        assert model.repos[REPO].churn.snapshot_seq == nxt.seq
        feed(model, rest[1:])
        assert served(model) == served(whole), f"restored at message {cut}"
        tried += 1
    assert tried >= 2


def test_a_ledger_of_another_delta_or_history_is_refused_and_the_ledger_starts_empty() -> None:
    messages = stream(1)
    deltas = [m for m in messages if isinstance(m, GraphDelta)]
    model = ReadModel(clock=lambda: 5000.0)
    feed(model, deltas[:10])
    saved = durable.capture(model.repos[REPO].churn, model.repos[REPO].state)
    assert saved.covers.seq == 10 and saved.entries
    elsewhere = Stamp(producer="p9", epoch=7)
    other = RepoIndex(REPO, parse=tiny_parse)
    events = [elsewhere.claim()] + [elsewhere.changed(f"f{i}.py", "def a") for i in range(9)]
    for n, event in enumerate(events):
        other.handle(event, now=100.0 + n)
    cases = {
        "older": capture(reader_fold(deltas[:11])),
        "newer": capture(reader_fold(deltas[:9])),
        "other_history": capture(other.state),
    }
    assert cases["other_history"].seq == 10
    for reason, snapshot in cases.items():
        fresh = ReadModel(clock=lambda: 5000.0)
        with capture_logs() as logs:
            assert load_snapshot(fresh, snapshot, saved)
        rejected = [e for e in logs if e["event"] == "churn_ledger_rejected"]
        assert [e["reason"] for e in rejected] == [reason]
        ledger = fresh.repos[REPO].churn
        assert (list(ledger.entries), ledger.seq) == ([], snapshot.seq)


def test_damaged_bytes_are_refused_with_their_reason() -> None:
    messages = stream(2)
    model = ReadModel(clock=lambda: 5000.0)
    feed(model, messages)
    raw = durable.encode(durable.capture(model.repos[REPO].churn, model.repos[REPO].state))
    end = raw.index(b"\n", len(durable.MAGIC))
    flipped = bytearray(raw)
    flipped[-5] ^= 0xFF
    other_format = raw.replace(b'"format": 1', b'"format": 2')
    body = zlib.compress(b'{"repo": "app-1"}')
    cases = {
        "not_a_ledger": b"GZSTATE\n" + raw[8:],
        "truncated": raw[: len(raw) - 10],
        "checksum": bytes(flipped),
        "wrong_version": other_format,
        "header_checksum": raw[:end].replace(b'"seq": ', b'"seq": 1') + raw[end:],
        "invalid": _framed(raw, body),
    }
    reasons = {}
    for name, damaged in cases.items():
        with pytest.raises(durable.LedgerRejected) as refused:
            durable.decode(damaged)
        reasons[name] = refused.value.reason
    assert reasons == {
        "not_a_ledger": "not_a_ledger",
        "truncated": "truncated",
        "checksum": "checksum",
        "wrong_version": "wrong_version",
        "header_checksum": "checksum",
        "invalid": "invalid",
    }


def _framed(raw: bytes, body: bytes) -> bytes:
    """``body`` under a header that checks (what a build with a bug could write)."""
    import hashlib
    import json

    end = raw.index(b"\n", len(durable.MAGIC))
    header = json.loads(raw[len(durable.MAGIC) : end])
    header.update(bytes=len(body), sha256=hashlib.sha256(body).hexdigest())
    header["check"] = header_check(header)
    return durable.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + body
