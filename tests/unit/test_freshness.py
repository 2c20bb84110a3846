"""Freshness status, pending events and lag, from the producer's and the state's side,
following the owner of the repository (issue 15)."""

from __future__ import annotations

from processors.indexer import RepoIndex
from producers.events import SourceStatus
from query.read_model import Owner, ReadModel
from stores.dead_letters import DeadLetter
from stores.deltas import SourceMark
from stores.freshness import BatchClock, ProducerView, compute_freshness
from tests.factories import Stamp, source_status, tiny_parse


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


def mark(seq: int, producer: str = "p1", emitted_at: float = 99.0, epoch: int = 1) -> SourceMark:
    return SourceMark(producer=producer, seq=seq, emitted_at=emitted_at, epoch=epoch)


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


def test_a_fenced_producer_reporting_alone_is_stale_never_fresh() -> None:
    f = fresh(view=view(producer="p1", epoch=1, last_seq=40), applied=mark(10, "p2", epoch=2))
    assert (f.status, f.pending_events) == ("stale", 0)
    assert f.reason == "only producer p1 (epoch 1) reports, and it was fenced by (2, p2)"


def test_a_claim_not_yet_applied_is_updating_with_all_its_events_pending() -> None:
    f = fresh(view=view(producer="p0", epoch=3, last_seq=1), applied=mark(10, "p1", epoch=2))
    assert (f.status, f.pending_events) == ("updating", 1)
    assert (
        f.reason
        == "producer p0 (epoch 3) claimed the repository; 1 events emitted and not yet indexed"
    )


def test_recent_rejected_events_are_said_in_the_reason() -> None:
    f = fresh(rejected="forged: signature does not verify against the lease's key")
    assert f.status == "fresh"
    assert f.reason == (
        "the index reflects the head commit and the work tree; events rejected recently"
        " (forged: signature does not verify against the lease's key)"
    )


def status(producer: str, epoch: int, last_seq: int, sent_at: float = 1001.0) -> SourceStatus:
    return source_status(last_seq, producer=producer, epoch=epoch, sent_at=sent_at, root="/r")


def owned_model() -> tuple[ReadModel, RepoIndex]:
    """The read side after a session of p2 (epoch 2) that fenced p1's (epoch 1)."""
    model, index = ReadModel(clock=lambda: 1002.0), RepoIndex("app-1", parse=tiny_parse)
    old, new = Stamp(producer="p1"), Stamp(producer="p2", epoch=2)
    for event in [old.claim(), old.changed("a.py", "def a"), new.claim(), new.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None and model.apply_delta(delta)
    return model, index


def test_a_fenced_producers_statuses_never_make_the_answer_fresh() -> None:
    model, _ = owned_model()
    model.apply_status(status("p1", 1, 2))  # the old producer: caught up with itself
    f = model.freshness("app-1")
    assert (f.status, f.pending_events) == ("stale", 0)
    assert "fenced by (2, p2)" in f.reason
    model.apply_status(status("p2", 2, 2))  # the owner: everything applied
    assert model.freshness("app-1").status == "fresh"
    model.apply_status(status("p1", 1, 9, sent_at=1001.5))  # late, from the fenced one
    f = model.freshness("app-1")
    assert (f.status, f.pending_events) == ("fresh", 0)
    view_ = model.repos["app-1"]
    assert view_.status is not None and view_.status.producer == "p2"
    assert view_.owner == Owner("p2", 2, "test-host", "/r")
    assert view_.fenced_producers == [(1, "p1")]
    assert model.known_epoch("app-1") == 2


def test_a_newer_claim_seen_in_a_status_first_makes_it_updating() -> None:
    model, _ = owned_model()
    model.apply_status(status("p2", 2, 2))
    model.apply_status(status("p3", 3, 1))  # its claim is not in the state yet
    f = model.freshness("app-1")
    assert (f.status, f.pending_events) == ("updating", 1)
    assert model.known_epoch("app-1") == 3


def test_a_rejected_dead_letter_is_said_in_the_freshness_reason() -> None:
    model, _ = owned_model()
    model.apply_status(status("p2", 2, 2))
    letter = DeadLetter(
        failure="rejected",
        reason="fenced: lease (1, p1) is older than the current (2, p2)",
        topic="t",
        partition=0,
        offset=5,
        key=b"app-1",
        value=b"{}",
        failed_at=1001.0,
    )
    model.apply_dead_letter(letter, "app-1")
    assert model.freshness("app-1").reason.endswith(
        "events rejected recently (fenced: lease (1, p1) is older than the current (2, p2))"
    )


def test_a_read_side_that_has_not_caught_up_lately_never_says_fresh() -> None:
    # now is 101.0: caught up 0.4 s ago is within the bound, 0.6 s ago is not.
    assert fresh(caught_up_at=100.6).status == "fresh"
    behind = fresh(caught_up_at=100.4)
    assert behind.status == "updating"
    assert behind.reason == "the read side last caught up with the topics 600 ms ago"
    # Stale stays stale: the bound only ever takes "fresh" away.
    assert fresh(caught_up_at=90.0, indexed_commit="c0").status == "stale"


def test_a_status_on_the_broker_not_yet_read_takes_fresh_away() -> None:
    model, _ = owned_model()
    model.apply_status(status("p2", 2, 2))
    assert model.freshness("app-1").status == "fresh"
    model.unread_statuses.add("app-1")
    answer = model.freshness("app-1")
    assert (answer.status, answer.reason) == (
        "updating",
        "the broker holds a producer status not read yet, or does not answer",
    )
