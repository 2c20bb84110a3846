"""The read side after a broker reset: emptied, listed, and never fresh until re-indexed."""

from __future__ import annotations

from processors.indexer import RepoIndex
from producers.events import SourceStatus
from query.read_model import ReadModel
from tests.factories import Stamp, source_status, tiny_parse

REASON = "the broker came back empty at 2026-01-01 00:00:00 (topic t is gone); re-indexing"


def status(producer: str, last_seq: int, state: str = "watching") -> SourceStatus:
    return source_status(last_seq, producer=producer, state=state, root="/r")


def indexed(model: ReadModel, producer: str, upto: int | None = None) -> int:
    """One session's claim, two files and its scan barrier, the first ``upto`` applied."""
    index, stamp = RepoIndex("app-1", parse=tiny_parse), Stamp(producer=producer)
    events = [
        stamp.claim(),
        stamp.changed("a.py", "def a"),
        stamp.changed("b.py", "def b"),
        stamp.scan_completed("c1"),
    ]
    for event in events[:upto]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None and model.apply_delta(delta)
    return len(events)


def fresh_model() -> ReadModel:
    model = ReadModel(clock=lambda: 1002.0)
    model.apply_status(status("p1", indexed(model, "p1")))
    assert model.freshness("app-1").status == "fresh"
    return model


def test_a_reset_keeps_the_repository_listed_and_empty_and_says_why() -> None:
    model = fresh_model()
    model.reset(REASON)
    assert list(model.repos) == ["app-1"]
    assert len(model.repos["app-1"].state.files) == 0
    f = model.freshness("app-1")
    assert (f.status, f.reason, f.pending_events, f.lag_ms) == ("updating", REASON, 0, 0.0)


def test_once_the_new_log_is_read_a_repository_no_producer_reported_for_is_stale() -> None:
    model = fresh_model()
    model.reset(REASON)
    model.rebuilding = False  # the materializer caught up with the new topics
    f = model.freshness("app-1")
    assert (f.status, f.reason) == ("stale", REASON)


def test_the_reason_stays_until_the_repository_is_fresh_again_then_goes() -> None:
    model = fresh_model()
    model.reset(REASON)
    model.rebuilding = False
    total = indexed(model, "p2", upto=2)  # the new session's claim and first file
    model.apply_status(status("p2", total, state="scanning"))
    f = model.freshness("app-1")
    assert f.status == "updating"
    assert f.reason.startswith(REASON + ": ")
    assert f.pending_events == 2

    model = fresh_model()
    model.reset(REASON)
    model.rebuilding = False
    model.apply_status(status("p2", indexed(model, "p2")))
    f = model.freshness("app-1")
    assert (f.status, f.reason) == ("fresh", "the index reflects the head commit and the work tree")
    assert len(model.repos["app-1"].state.files) == 2
    model.apply_status(status("p2", 9))  # behind again later: the ordinary reason alone
    assert model.freshness("app-1").reason == "5 events emitted and not yet indexed"
