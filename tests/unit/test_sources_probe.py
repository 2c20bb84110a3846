"""A look at the sources partition before an answer (Materializer.probe_sources): what it
marks `updating` is cleared once read, or once an unanswered look has held long enough,
also for answers that do not look themselves (the list of repositories)."""

from __future__ import annotations

import asyncio

from aiokafka import TopicPartition

from producers.topics import DEFAULT_TOPICS
from query.materializer import UNANSWERED_HOLD_S, Materializer, partition_of
from query.read_model import ReadModel

REPO = "app-1"


class FakeConsumer:
    """The sources topic's end on the broker and this replica's position in it."""

    def __init__(self, end: int, position: int, *, answers: bool = True) -> None:
        self.end, self.at, self.answers = end, position, answers

    def partitions_for_topic(self, topic: str) -> set[int]:
        return {0, 1, 2, 3}

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        if not self.answers:
            await asyncio.Event().wait()  # the broker does not answer
        return {tp: self.end for tp in tps}

    async def position(self, tp: TopicPartition) -> int:
        return self.at


def materializer(consumer: FakeConsumer) -> Materializer:
    m = Materializer(ReadModel(), "unused:0", None)  # type: ignore[arg-type]
    m._consumer = consumer  # type: ignore[assignment]
    m.ready.set()
    return m


async def test_a_status_found_unread_is_cleared_once_the_replica_has_read_it() -> None:
    consumer = FakeConsumer(end=7, position=5)
    m = materializer(consumer)
    await m.probe_sources(REPO)
    assert m.model.unread_statuses == {REPO}
    await m.settle_unread()
    assert m.model.unread_statuses == {REPO}  # still behind: no answer may vouch
    consumer.at = 7  # the materializer read the status
    await m.settle_unread()
    assert m.model.unread_statuses == set()  # the list says `fresh` again, unasked


async def test_an_unanswered_look_holds_updating_for_a_while_only() -> None:
    consumer = FakeConsumer(end=7, position=7, answers=False)
    m = materializer(consumer)
    await m.probe_sources(REPO)
    assert m.model.unread_statuses == {REPO}
    await m.settle_unread()
    assert m.model.unread_statuses == {REPO}
    ((tp, end, when),) = m._unread.values()
    assert (tp, end) == (TopicPartition(DEFAULT_TOPICS.sources, partition_of(REPO, 4)), None)
    m._unread[REPO] = (tp, None, when - UNANSWERED_HOLD_S)  # the hold has passed
    await m.settle_unread()
    assert m.model.unread_statuses == set()
