"""A fenced worker generation delivers none of the batches its producer still holds,
and commits no offset.

`processors.fence.abort_pending` reaches into aiokafka (it has no public abort), so it
is checked against a real broker of each kind: batches held back by the producer's
linger (as a retried batch is held while the topics are missing) are failed, not
delivered, and a send after the fence fails at once; a second producer, not fenced,
delivers on the same topic meanwhile. `refuse_commits` replaces a faust consumer's
commit, so a real faust app shows that the events it handles after the fence are never
committed on the broker, while those before it were. `leave_group` closes a faust
consumer's group membership from outside its thread: a faust app whose agent is stuck
(as a fenced one waits at the fence) and that is never stopped gives up its partitions
to the next consumer of the group at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace

import faust
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from deploy.topics_admin import ensure_topics, install_no_topic_auto_creation
from processors.fence import Fence, WriterFenced, leave_group, refuse_commits
from producers.topics import TopicSpec
from tests.integration.stack import eventually

pytestmark = pytest.mark.integration

LINGER_MS = 1500


async def values_on(bootstrap: str, topic: str, wait_s: float) -> list[bytes]:
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    seen: list[bytes] = []
    try:
        deadline = asyncio.get_running_loop().time() + wait_s
        while asyncio.get_running_loop().time() < deadline:
            for records in (await consumer.getmany(timeout_ms=200)).values():
                seen.extend(r.value for r in records if r.value is not None)
    finally:
        await consumer.stop()
    return seen


async def test_a_fenced_producer_delivers_none_of_its_pending_batches(broker, unique_name) -> None:
    topic = unique_name("fenced")
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    fenced = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=LINGER_MS)
    other = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await fenced.start()
    await other.start()
    try:
        pending = [await fenced.send(topic, b"old-%d" % i, partition=0) for i in range(3)]
        fence = Fence()
        aborting = fence.close("the broker came back empty", SimpleNamespace(_producer=fenced))
        assert aborting is not None
        await aborting
        for future in pending:
            with pytest.raises(WriterFenced, match="came back empty"):
                await future
        with pytest.raises(WriterFenced):
            await fenced.send(topic, b"later", partition=0)
        await other.send_and_wait(topic, b"new", partition=0)
        # Past the fenced producer's linger, when it would have delivered its batch.
        assert await values_on(broker.bootstrap, topic, LINGER_MS / 1000 + 1.5) == [b"new"]
    finally:
        await other.stop()
        await fenced.stop()


async def committed_offset(bootstrap: str, group: str, topic: str) -> int | None:
    """The group's committed offset of the topic's partition 0, read by a consumer of
    the group that joins nothing (Tansu's answer to the admin client's OffsetFetch does
    not decode)."""
    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await reader.start()
    try:
        return await reader.committed(TopicPartition(topic, 0))
    finally:
        await reader.stop()


def worker_like_app(group: str, bootstrap: str, datadir: Path) -> faust.App:
    return faust.App(
        group,
        broker=f"kafka://{bootstrap}",
        datadir=str(datadir),
        store="memory://",
        value_serializer="raw",
        web_enabled=False,
        topic_disable_leader=True,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=3600.0,  # only the commits this test asks for
        broker_session_timeout=6.0,  # the worker's (processors/app.py): a join in seconds
        broker_heartbeat_interval=1.0,
    )


async def test_a_fenced_consumer_commits_nothing_it_handles_after_the_fence(
    broker, unique_name, tmp_path: Path
) -> None:
    topic, group = unique_name("commits"), unique_name("group")
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
    app = worker_like_app(group, broker.bootstrap, tmp_path)
    seen: list[bytes] = []

    def handled_count(n: int) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return len(seen) >= n

        return check

    @app.agent(app.topic(topic, value_serializer="raw"), name="handled")
    async def handled(stream):  # type: ignore[no-untyped-def]
        async for value in stream:
            seen.append(value)

    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    await app.start()
    try:
        for i in range(3):
            await producer.send_and_wait(topic, b"before-%d" % i, partition=0)
        await eventually(handled_count(3), 60, "the first events handled")
        await eventually(app.consumer.commit, 30, "the first commit")
        assert await committed_offset(broker.bootstrap, group, topic) == 3

        refuse_commits(app.consumer, "the broker came back empty")
        for i in range(2):
            await producer.send_and_wait(topic, b"after-%d" % i, partition=0)
        await eventually(handled_count(5), 60, "the later events handled")
        await asyncio.sleep(0.5)  # the stream acknowledges the last one when it moves on
        assert await app.consumer.commit() is False
        await app.stop()  # faust commits what it acknowledged on stop, too
        assert await committed_offset(broker.bootstrap, group, topic) == 3
    finally:
        await producer.stop()
        await app.stop()


async def test_a_stuck_consumer_that_left_its_group_holds_no_partition(
    broker, unique_name, tmp_path: Path
) -> None:
    topic, group = unique_name("left"), unique_name("group")
    partitions = {0, 1, 2, 3}
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, len(partitions))])
    stuck, release = asyncio.Event(), asyncio.Event()
    handled: set[int] = set()  # partitions of the events the next app handled

    old = worker_like_app(group, broker.bootstrap, tmp_path / "old")

    @old.agent(old.topic(topic, value_serializer="raw"), name="stuck")
    async def wait_at_the_fence(stream):  # type: ignore[no-untyped-def]
        async for _ in stream:
            stuck.set()
            await release.wait()  # as a fenced agent waits at the fence

    new = worker_like_app(group, broker.bootstrap, tmp_path / "new")

    @new.agent(new.topic(topic, value_serializer="raw"), name="stuck")
    async def handle(stream):  # type: ignore[no-untyped-def]
        async for event in stream.events():
            handled.add(event.message.partition)

    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    await old.start()
    try:
        await producer.send_and_wait(topic, b"first", partition=0)

        async def is_stuck() -> bool:
            return stuck.is_set()

        await eventually(is_stuck, 60, "the old app's agent to be stuck on an event")
        leaving = leave_group(old.consumer, "the broker came back empty")
        assert leaving is not None
        await asyncio.wait_for(leaving, 10)
        # The old app is not stopped and its agent does not return: without leaving its
        # group it stays a member, heartbeating, and keeps its share of the partitions,
        # whose events the new app then never sees.
        await new.start()
        await asyncio.sleep(3 * 1.0)  # three of the old app's heartbeat intervals
        for partition in sorted(partitions):
            await producer.send_and_wait(topic, b"event", partition=partition)

        async def all_handled() -> bool:
            return handled == partitions

        await eventually(all_handled, 60, "the new app to handle an event of every partition")
    finally:
        release.set()
        await producer.stop()
        for app in (new, old):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(app.stop(), 30)


async def test_a_commit_retried_from_before_the_fence_never_lands(broker, unique_name) -> None:
    # A commit of offsets of a topic the broker lost is retried by aiokafka until the
    # topic exists again; fenced meanwhile, it must fail instead of landing there.
    topic, group = unique_name("retried"), unique_name("group")
    install_no_topic_auto_creation()  # as every part installs it: the topic stays missing
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])  # a member of no group: commits as a simple consumer
        committing = asyncio.ensure_future(consumer.commit({tp: 7}))
        await asyncio.sleep(1.0)
        if committing.done():  # this broker takes commits of a topic it does not have
            pytest.skip(f"{broker.kind} answered the commit at once: {committing.exception()!r}")
        faust_like = SimpleNamespace(_thread=SimpleNamespace(_consumer=consumer))
        refuse_commits(faust_like, "the broker came back empty")
        await ensure_topics(broker.bootstrap, [TopicSpec(topic, 1)])
        with pytest.raises(WriterFenced):
            await asyncio.wait_for(committing, 30)
        assert await committed_offset(broker.bootstrap, group, topic) is None
    finally:
        await consumer.stop()
