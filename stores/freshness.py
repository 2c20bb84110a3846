"""Freshness: how far an answer can be trusted, computed exactly.

The producers report what they have emitted (SourceStatus on the sources topic); the
state records the last event it reflects (its SourceMark). Pending events are the
difference of the two sequence numbers of the same producer session; lag is the age of
the oldest pending batch, or, when nothing is pending, how long the last event took to
reach the state.

Freshness follows the owner (issue 15): the status compared is the one of the greatest
lease ``(epoch, producer)`` a reader has seen, and the state's lease is its mark's. When
they differ, the answer is never ``fresh``: a status of a greater lease means a new
claim not yet applied (``updating``, all its events pending); a status of a lesser lease
means only a fenced producer reports (``stale``, naming it).

status:
- ``updating``: events emitted and not yet reflected, or a scan is running;
- ``stale``: nothing pending, but the state cannot vouch for the repository: no
  producer has reported, the producer stopped or went silent (no heartbeat for three
  intervals), or the state's commit is not the head commit the producer sees;
- ``fresh``: everything emitted is reflected, and it reflects the head commit and the
  work tree as the live producer sees them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict

from stores.deltas import SourceMark

SILENCE_FACTOR = 3.0
CAUGHT_UP_WITHIN_S = 0.5
"""How recently the read side must have been at the end of its topics to say ``fresh``."""


class Freshness(BaseModel):
    """How far to trust an answer: ``fresh`` (the state reflects everything the producer
    emitted and the read side was at the end of its topics just now), ``updating`` (events
    emitted and not yet reflected: ``pending_events``, ``lag_ms``) or ``stale`` (the
    producer is silent or gone, or the read side is behind); ``reason`` says which, for a
    person. Stamped on every answer with the commit it was built from."""

    model_config = ConfigDict(frozen=True)

    status: Literal["fresh", "stale", "updating"]
    indexed_commit: str | None
    head_commit: str | None
    working_tree_dirty: bool
    pending_events: int
    indexed_at: float | None
    lag_ms: float
    reason: str


@dataclass(frozen=True, slots=True)
class ProducerView:
    """What the last SourceStatus of a repository said (no dependency on its contract)."""

    producer: str
    head_commit: str | None
    working_tree_dirty: bool
    last_seq: int
    sent_at: float
    heartbeat_s: float
    state: str
    epoch: int = 1

    @property
    def lease(self) -> tuple[int, str]:
        return (self.epoch, self.producer)


@dataclass
class BatchClock:
    """When each recent batch of a producer was emitted: (last seq, first emit time)."""

    producer: str | None = None
    batches: deque[tuple[int, float]] = field(default_factory=lambda: deque(maxlen=4096))

    def record(self, producer: str, first_seq: int, last_seq: int, started_at: float) -> None:
        if producer != self.producer:
            self.producer = producer
            self.batches.clear()
        if first_seq <= last_seq and (not self.batches or self.batches[-1][0] < last_seq):
            self.batches.append((last_seq, started_at))

    def oldest_pending_since(self, producer: str, applied_seq: int) -> float | None:
        if producer != self.producer:
            return None
        while self.batches and self.batches[0][0] <= applied_seq:
            self.batches.popleft()
        return self.batches[0][1] if self.batches else None


def pending_events(view: ProducerView | None, applied: SourceMark | None) -> int:
    """Events the producer emitted that the state does not reflect: all of a lease the
    state has not reached, none of a lease it has fenced."""
    if view is None:
        return 0
    if applied is None or view.lease > applied.lease:
        return view.last_seq
    if view.lease < applied.lease:
        return 0  # a fenced producer's events are never applied: nothing is pending
    return max(0, view.last_seq - applied.seq)


def compute_freshness(
    *,
    view: ProducerView | None,
    applied: SourceMark | None,
    indexed_commit: str | None,
    indexed_at: float | None,
    oldest_pending_since: float | None,
    now: float,
    rejected: str | None = None,
    caught_up_at: float | None = None,
) -> Freshness:
    """``rejected``: a recent dead letter of the repository's rejected events, said in
    the reason (the index is not wrong for it, but someone sends what it refuses).

    ``caught_up_at``: when the read side last stood at the end of every topic it reads
    (None: the caller does not follow topics). A read side cannot know of an event it
    has not read: one busy for longer than ``CAUGHT_UP_WITHIN_S`` (a loop full of
    queries) may have a producer's news waiting unread, so it says ``updating``, never
    ``fresh`` (issue 15: under 20 clients, answers said ``fresh`` with old contents up
    to 1.5 s after the producer's status was on the broker)."""
    pending = pending_events(view, applied)
    if pending:
        since = oldest_pending_since if oldest_pending_since is not None else now
        lag_ms = max(0.0, (now - since) * 1000)
    elif applied is not None and indexed_at is not None:
        lag_ms = max(0.0, (indexed_at - applied.emitted_at) * 1000)
    else:
        lag_ms = 0.0
    status: Literal["fresh", "stale", "updating"]
    if view is None:
        status, reason = "stale", "no producer has reported for this repository"
    elif applied is not None and view.lease < applied.lease:
        status, reason = (
            "stale",
            (
                f"only producer {view.producer} (epoch {view.epoch}) reports, and it was fenced"
                f" by ({applied.epoch}, {applied.producer})"
            ),
        )
    elif pending and (applied is None or view.lease != applied.lease):
        status, reason = (
            "updating",
            (
                f"producer {view.producer} (epoch {view.epoch}) claimed the repository;"
                f" {pending} events emitted and not yet indexed"
            ),
        )
    elif pending:
        status, reason = "updating", f"{pending} events emitted and not yet indexed"
    elif view.state == "scanning":
        status, reason = "updating", "the initial scan is running"
    elif view.state == "stopped":
        status, reason = "stale", "the producer stopped; changes since are not seen"
    elif now - view.sent_at > SILENCE_FACTOR * view.heartbeat_s:
        status, reason = "stale", f"no producer heartbeat for {now - view.sent_at:.0f} s"
    elif view.head_commit != indexed_commit:
        status, reason = "stale", "the head commit is not indexed yet"
    elif applied is None or view.lease != applied.lease:
        status, reason = "updating", f"the claim of producer {view.producer} is not applied"
    elif caught_up_at is not None and now - caught_up_at > CAUGHT_UP_WITHIN_S:
        behind_ms = (now - caught_up_at) * 1000
        status, reason = (
            "updating",
            f"the read side last caught up with the topics {behind_ms:.0f} ms ago",
        )
    else:
        status, reason = "fresh", "the index reflects the head commit and the work tree"
    if rejected is not None:
        reason = f"{reason}; events rejected recently ({rejected})"
    return Freshness(
        status=status,
        indexed_commit=indexed_commit,
        head_commit=view.head_commit if view else None,
        working_tree_dirty=view.working_tree_dirty if view else False,
        pending_events=pending,
        indexed_at=indexed_at,
        lag_ms=round(lag_ms, 1),
        reason=reason,
    )
