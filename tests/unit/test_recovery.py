"""A part's generations (deploy/recovery.py): a stalled one is followed by a new one."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from aiokafka import TopicPartition
from structlog.testing import capture_logs

from deploy.recovery import GenerationStalled, Recovery, joined_and_fetching, recover_in_place


class QuietWatch:
    """A BrokerWatch whose broker never resets."""

    epoch = 0
    resets: dict = {}

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[None]:
        yield

    async def next_reset(self, epoch: int) -> None:
        await asyncio.Event().wait()


def stalling_twice(stop: asyncio.Event, started: list[int]):  # type: ignore[no-untyped-def]
    async def generation(its_stop: asyncio.Event, recovery: Recovery) -> None:
        started.append(len(started))
        if len(started) <= 2:
            raise GenerationStalled("no join of the consumer group within 60 s")
        stop.set()  # the third one runs until the part stops
        await its_stop.wait()

    return generation


@pytest.mark.parametrize("watched", [True, False], ids=["watched", "unwatched"])
async def test_a_stalled_generation_is_followed_by_a_new_one_after_the_topics(
    watched: bool,
) -> None:
    stop, started, ensured = asyncio.Event(), [], []

    async def ensure() -> None:
        ensured.append(len(started))

    with capture_logs() as logs:
        await asyncio.wait_for(
            recover_in_place(
                "worker",
                QuietWatch() if watched else None,  # type: ignore[arg-type]
                stop,
                stalling_twice(stop, started),
                ensure_topics=ensure,
            ),
            5,
        )
    assert started == [0, 1, 2] and ensured == [1, 2]
    stalled = [e for e in logs if e["event"] == "generation_stalled"]
    assert [(e["part"], e["reason"]) for e in stalled] == [
        ("worker", "no join of the consumer group within 60 s")
    ] * 2


async def test_a_generation_failing_otherwise_still_ends_the_part() -> None:
    async def generation(its_stop: asyncio.Event, recovery: Recovery) -> None:
        raise RuntimeError("a bug")

    async def ensure() -> None:
        raise AssertionError("no new generation after a failure that is not a stall")

    with pytest.raises(RuntimeError, match="a bug"):
        await recover_in_place(
            "worker", QuietWatch(), asyncio.Event(), generation, ensure_topics=ensure
        )  # type: ignore[arg-type]


class FakeConsumer:
    """A FetchState: partitions assigned, and the high watermarks fetches reported."""

    def __init__(self) -> None:
        self.assigned: set[TopicPartition] = set()
        self.highwaters: dict[TopicPartition, int] = {}

    def assignment(self) -> set[TopicPartition]:
        return set(self.assigned)

    def highwater(self, tp: TopicPartition) -> int | None:
        return self.highwaters.get(tp)

    async def position(self, tp: TopicPartition) -> int | None:
        return None


async def watchdog(
    consumer: FakeConsumer, joined: asyncio.Event, stop: asyncio.Event, now: list[float]
):  # type: ignore[no-untyped-def]
    task = asyncio.ensure_future(
        joined_and_fetching(consumer, EVENTS, joined, stop, 60, every_s=0.001, clock=lambda: now[0])
    )
    await asyncio.sleep(0.01)  # started: its clock starts at now[0]
    return task


async def advance(now: list[float], seconds: float) -> None:
    now[0] += seconds
    await asyncio.sleep(0.02)  # a few of the watchdog's rounds


EVENTS = "file-events"


async def test_a_worker_that_never_joins_its_group_is_stalled_after_the_timeout() -> None:
    now, consumer, joined, stop = [0.0], FakeConsumer(), asyncio.Event(), asyncio.Event()
    waiting = await watchdog(consumer, joined, stop, now)
    await advance(now, 59)
    assert not waiting.done()
    await advance(now, 1)
    with pytest.raises(GenerationStalled, match="no join of the consumer group within 60 s"):
        await asyncio.wait_for(waiting, 1)


async def test_an_assigned_partition_never_fetched_stalls_and_a_fetched_one_never() -> None:
    now, consumer, joined, stop = [0.0], FakeConsumer(), asyncio.Event(), asyncio.Event()
    waiting = await watchdog(consumer, joined, stop, now)
    joined.set()  # joined with nothing: a worker beside others on few partitions
    await advance(now, 100)
    consumer.assigned = {TopicPartition(EVENTS, 1), TopicPartition(EVENTS, 3)}
    consumer.assigned.add(TopicPartition("other-topic", 0))  # not the worker's to fetch
    await advance(now, 0)  # seen at 100
    await advance(now, 30)
    consumer.highwaters[TopicPartition(EVENTS, 1)] = 0  # an empty partition, fetched
    await advance(now, 29)
    assert not waiting.done()
    await advance(now, 1)
    with pytest.raises(GenerationStalled, match=r"partitions \[3\] of file-events"):
        await asyncio.wait_for(waiting, 1)


async def test_a_fetching_worker_runs_until_the_stop_and_a_revoked_partition_is_forgotten() -> None:
    now, consumer, joined, stop = [0.0], FakeConsumer(), asyncio.Event(), asyncio.Event()
    waiting = await watchdog(consumer, joined, stop, now)
    joined.set()
    consumer.assigned = {TopicPartition(EVENTS, 0), TopicPartition(EVENTS, 2)}
    await advance(now, 50)
    consumer.assigned = {TopicPartition(EVENTS, 0)}  # 2 revoked before its first fetch
    consumer.highwaters[TopicPartition(EVENTS, 0)] = 12
    await advance(now, 600)
    assert not waiting.done()
    stop.set()
    await asyncio.wait_for(waiting, 1)
