"""Freshness status, pending events and lag, from the producer's and the state's side."""

from __future__ import annotations

from stores.deltas import SourceMark
from stores.freshness import BatchClock, ProducerView, compute_freshness


def view(**overrides: object) -> ProducerView:
    fields: dict[str, object] = {
        "producer": "p1",
        "head_commit": "c1",
        "working_tree_dirty": False,
        "last_seq": 10,
        "sent_at": 100.0,
        "heartbeat_s": 5.0,
        "state": "watching",
    }
    fields.update(overrides)
    return ProducerView(**fields)  # type: ignore[arg-type]


def mark(seq: int, producer: str = "p1", emitted_at: float = 99.0) -> SourceMark:
    return SourceMark(producer=producer, seq=seq, emitted_at=emitted_at)


def fresh(**kw: object):
    args: dict[str, object] = {
        "view": view(),
        "applied": mark(10),
        "indexed_commit": "c1",
        "indexed_at": 99.25,
        "oldest_pending_since": None,
        "now": 101.0,
    }
    args.update(kw)
    return compute_freshness(**args)  # type: ignore[arg-type]


def test_caught_up_with_head_is_fresh_and_lag_is_the_last_event_latency() -> None:
    f = fresh()
    assert (f.status, f.pending_events, f.lag_ms, f.head_commit) == ("fresh", 0, 250.0, "c1")


def test_pending_events_make_it_updating_with_lag_from_the_oldest_pending_batch() -> None:
    f = fresh(applied=mark(7), oldest_pending_since=100.5)
    assert (f.status, f.pending_events, f.lag_ms) == ("updating", 3, 500.0)


def test_a_new_producer_session_counts_all_its_events_as_pending() -> None:
    f = fresh(applied=mark(10, producer="p0"), view=view(last_seq=4), oldest_pending_since=100.0)
    assert (f.status, f.pending_events) == ("updating", 4)


def test_head_commit_not_indexed_is_stale() -> None:
    f = fresh(view=view(head_commit="c2"))
    assert (f.status, f.reason) == ("stale", "the head commit is not indexed yet")


def test_silent_or_stopped_producer_is_stale() -> None:
    assert fresh(now=116.0).status == "stale"
    assert fresh(view=view(state="stopped")).status == "stale"
    assert fresh(view=None).status == "stale"


def test_scanning_producer_is_updating_even_when_nothing_is_pending() -> None:
    assert fresh(view=view(state="scanning")).status == "updating"


def test_working_tree_dirty_is_reported_from_the_producer() -> None:
    assert fresh(view=view(working_tree_dirty=True)).working_tree_dirty is True


def test_batch_clock_finds_the_oldest_batch_not_yet_applied() -> None:
    clock = BatchClock()
    clock.record("p1", 1, 5, 10.0)
    clock.record("p1", 6, 8, 12.0)
    clock.record("p1", 9, 8, 13.0)  # an idle heartbeat names no batch
    assert clock.oldest_pending_since("p1", 3) == 10.0
    assert clock.oldest_pending_since("p1", 5) == 12.0
    assert clock.oldest_pending_since("p1", 8) is None
    assert clock.oldest_pending_since("p2", 0) is None
    clock.record("p2", 1, 2, 20.0)
    assert clock.oldest_pending_since("p2", 0) == 20.0
