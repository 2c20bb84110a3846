"""A read side that folds the compacted sources topic (the last status of each key)
answers as one that folded every heartbeat (issue 16): the same freshness, owner,
fenced producers and known epoch. The one difference, pinned below, is the lag of a
backlog of several batches, which only the statuses compaction drops could date."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from processors.indexer import RepoIndex
from producers.events import EventBase, FileChanged, ScanCompleted, SourceStatus, content_hash
from producers.source import Draft, InMemorySink, Source
from producers.topics import status_key
from query.read_model import ReadModel
from stores.freshness import Freshness
from tests.factories import session_key, tiny_parse

REPO = "app-1"


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float = 5.0) -> None:
        self.now += seconds


def changed(path: str, text: str) -> Draft:
    data = text.encode()
    return Draft(
        FileChanged,
        {
            "path": path,
            "content": data,
            "content_hash": content_hash(data),
            "size": len(data),
            "origin": "watch",
            "commit": None,
            "working_tree": True,
        },
    )


def scanned(files: int) -> Draft:
    return Draft(
        ScanCompleted,
        {
            "commit": "c1",
            "branch": "main",
            "files": files,
            "full": True,
            "working_tree_dirty": False,
        },
    )


def session(sink: InMemorySink, producer: str, epoch: int, clock: Clock) -> Source:
    source = Source(
        REPO,
        "/r",
        sink,
        producer=producer,
        heartbeat_s=5.0,
        clock=clock,
        epoch=epoch,
        key=session_key(producer),
        host="h",
    )
    source.observe(branch="main", head_commit="c1", state="scanning")
    return source


async def heartbeats(source: Source, clock: Clock, count: int) -> None:
    for _ in range(count):
        clock.tick()
        await source.heartbeat()


async def history() -> tuple[list[EventBase], list[SourceStatus], dict[str, int]]:
    """Two sessions: ``pa`` (epoch 1) scans, idles, is fenced by ``pb`` (epoch 2) and
    says so late; ``pb`` scans, idles, then sends two more batches and idles again.
    Returns the file events, the statuses in topic order, and where ``pb``'s batches
    begin in the events (``"pb_claim"``, ``"pb_edit"``, ``"pb_last"``)."""
    clock, sink = Clock(), InMemorySink()
    a = session(sink, "pa", 1, clock)
    await a.claim()
    await a.emit([changed("a.py", "def a"), changed("b.py", "import a")])
    await a.emit([scanned(2)])
    a.observe(state="watching")
    await heartbeats(a, clock, 5)
    b = session(sink, "pb", 2, clock)
    marks = {"pb_claim": len(sink.events)}
    await b.claim()
    await b.emit([changed("a.py", "def a2")])
    await b.emit([scanned(2)])
    b.observe(state="watching")
    await heartbeats(b, clock, 3)
    a.fence(b.lease)
    await a.heartbeat()  # the fenced session's last word, after the owner's statuses
    await heartbeats(b, clock, 2)
    clock.tick()
    marks["pb_edit"] = len(sink.events)
    await b.emit([changed("c.py", "import b")])
    await heartbeats(b, clock, 2)
    clock.tick()
    marks["pb_last"] = len(sink.events)
    await b.emit([changed("d.py", "def d"), changed("e.py", "def e")])
    await heartbeats(b, clock, 3)
    return sink.events, sink.statuses, marks


def compacted(statuses: Sequence[SourceStatus]) -> list[SourceStatus]:
    """What Kafka's log compaction leaves of the topic: the last record of each key, in
    the order of their offsets."""
    last = {status_key(s.repo, s.producer): i for i, s in enumerate(statuses)}
    return [s for i, s in enumerate(statuses) if last[status_key(s.repo, s.producer)] == i]


def read_side(events: Sequence[EventBase], statuses: Sequence[SourceStatus]) -> ReadModel:
    """A replica that folded the deltas of ``events`` (as the worker made them) and
    ``statuses``, answering at a fixed time after the last status."""
    model = ReadModel(clock=lambda: statuses[-1].sent_at + 1.0)
    index = RepoIndex(REPO, parse=tiny_parse)
    for event in events:
        delta = index.handle(event, now=event.emitted_at + 0.25)
        assert delta is not None and model.apply_delta(delta)
    for status in statuses:
        model.apply_status(status)
    return model


def answers(model: ReadModel) -> tuple[Freshness, object, object, int, dict[str, SourceStatus]]:
    view = model.repos[REPO]
    return (
        model.freshness(REPO),
        view.owner,
        view.fenced_producers,
        model.known_epoch(REPO),
        view.statuses,
    )


@pytest.fixture(scope="module")
def topic() -> tuple[list[EventBase], list[SourceStatus], dict[str, int]]:
    return asyncio.run(history())


def test_compaction_keeps_one_status_per_session(topic) -> None:
    _, statuses, _ = topic
    kept = compacted(statuses)
    assert len(statuses) == 24  # pa: 8 + its fenced one; pb: 15
    assert [(s.producer, s.state, s.last_seq) for s in kept] == [
        ("pa", "fenced", 4),
        ("pb", "watching", 6),
    ]


@pytest.mark.parametrize(
    ("applied_to", "status", "pending"),
    [(None, "fresh", 0), ("pb_last", "updating", 2)],
    ids=["all-applied", "last-batch-pending"],
)
def test_a_replica_on_the_compacted_topic_answers_as_one_on_every_status(
    topic, applied_to: str | None, status: str, pending: int
) -> None:
    events, statuses, marks = topic
    applied = events if applied_to is None else events[: marks[applied_to]]
    whole = read_side(applied, statuses)
    after_compaction = read_side(applied, compacted(statuses))
    assert answers(after_compaction) == answers(whole)
    freshness, owner, fenced, epoch, _ = answers(whole)
    assert (freshness.status, freshness.pending_events) == (status, pending)
    assert (owner.producer, owner.epoch) == ("pb", 2)  # type: ignore[attr-defined]
    assert (fenced, epoch) == ([(1, "pa")], 2)


def test_the_lag_of_a_backlog_of_several_batches_is_dated_from_the_last_one_kept(
    topic,
) -> None:
    # The worker applied nothing of pb's edits: pb_edit's batch and pb_last's are
    # pending. Every status is the full history; compaction leaves pb's last, which
    # dates only the last batch. In production min.compaction.lag.ms keeps ten minutes
    # of statuses, so such a lag is exact up to ten minutes and a lower bound after.
    events, statuses, marks = topic
    applied = events[: marks["pb_edit"]]
    whole = read_side(applied, statuses).freshness(REPO)
    after = read_side(applied, compacted(statuses)).freshness(REPO)
    assert (after.status, after.pending_events, after.reason) == (
        whole.status,
        whole.pending_events,
        whole.reason,
    )
    assert (whole.status, whole.pending_events) == ("updating", 3)
    # now 1086: the edit batch was emitted at 1055, the last one at 1070.
    assert (whole.lag_ms, after.lag_ms) == (31000.0, 16000.0)
