"""Tansu's two known bugs, observed raw: these tests fail the day upstream fixes them.

When one fails, delete the workaround it names in deploy/tansu_quirks.py (and its
use by the callers), then this test.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.consumer.group_coordinator import GroupCoordinator

from deploy.embedded_broker import EmbeddedBroker
from deploy.tansu_quirks import (
    FETCH_WAIT_CAP_MS,
    GROUP_TIMEOUTS,
    install_leave_group_fix,
    leave_group_fix_installed,
)
from deploy.topics_admin import ensure_topics
from producers.topics import TopicSpec

pytestmark = pytest.mark.integration

FIXED_A = "Tansu fixed bug (a): remove the workaround in deploy/tansu_quirks.py"
FIXED_B = "Tansu fixed bug (b): remove the workaround in deploy/tansu_quirks.py"
FIXED_C = "Tansu fixed bug (c): remove the workaround in deploy/tansu_quirks.py"


async def test_bug_a_first_group_generation_is_still_zero(
    tansu_broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("quirk-a")
    await ensure_topics(tansu_broker.bootstrap, [TopicSpec(topic, 1)])
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=tansu_broker.bootstrap, group_id=topic, **GROUP_TIMEOUTS
    )
    await consumer.start()
    try:
        deadline = time.monotonic() + 15
        while not consumer.assignment() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert consumer.assignment(), "the first member was never assigned a partition"
        # The JoinGroup response's generation id, as aiokafka stored it.
        generation = consumer._coordinator.generation
    finally:
        await consumer.stop()

    if generation != 0:
        pytest.fail(f"{FIXED_A} (first generation is {generation}, was 0)")


async def test_bug_b_list_offsets_latest_still_misses_the_last_batch(
    tansu_broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("quirk-b")
    await ensure_topics(tansu_broker.bootstrap, [TopicSpec(topic, 1)])
    tp = TopicPartition(topic, 0)
    producer = AIOKafkaProducer(bootstrap_servers=tansu_broker.bootstrap)
    await producer.start()
    try:
        for batch_number in range(3):
            batch = producer.create_batch()
            for i in range(5):
                batch.append(key=b"repo", value=f"{batch_number}.{i}".encode(), timestamp=None)
            await (await producer.send_batch(batch, topic, partition=0))
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=tansu_broker.bootstrap)
    await consumer.start()
    try:
        listed = (await consumer.end_offsets([tp]))[tp]  # raw ListOffsets(latest)
        consumer.assign([tp])
        consumer.seek(tp, 0)
        records = 0
        deadline = time.monotonic() + 15
        while records < 15 and time.monotonic() < deadline:
            batches = await consumer.getmany(tp, timeout_ms=500)
            records += len(batches.get(tp, []))
        high_watermark = consumer.highwater(tp)  # from the Fetch responses
    finally:
        await consumer.stop()

    assert records == 15
    assert high_watermark == 15
    if listed == high_watermark:
        pytest.fail(f"{FIXED_B} (ListOffsets(latest) answered the high watermark {listed})")
    assert listed == 11, "ListOffsets(latest) was the last batch's base offset + 1 (10 + 1)"


def test_leave_group_fix_is_idempotent() -> None:
    install_leave_group_fix()
    patched = GroupCoordinator._maybe_leave_group

    assert install_leave_group_fix() is False
    assert GroupCoordinator._maybe_leave_group is patched
    assert leave_group_fix_installed()


async def _delivery_delays_ms(
    bootstrap: str, topic: str, consumer: AIOKafkaConsumer
) -> list[float]:
    """How long a record takes to reach a consumer already waiting in a Fetch."""
    tp = TopicPartition(topic, 0)
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await consumer.start()
    await producer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_end(tp)
        delays = []
        for _ in range(5):
            got = asyncio.ensure_future(consumer.getone())
            await asyncio.sleep(0.3)  # the consumer is now waiting inside a Fetch
            sent = time.monotonic()
            await producer.send_and_wait(topic, b"x")
            await asyncio.wait_for(got, 10)
            delays.append((time.monotonic() - sent) * 1000)
        return sorted(delays)
    finally:
        await producer.stop()
        await consumer.stop()


async def test_bug_c_a_waiting_fetch_is_still_answered_late(
    tansu_broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("quirk-c")
    await ensure_topics(tansu_broker.bootstrap, [TopicSpec(topic, 1)])
    # Built with aiokafka's own __init__, around the cap that the fixture installed.
    raw = AIOKafkaConsumer.__new__(AIOKafkaConsumer)
    unwrapped = getattr(AIOKafkaConsumer.__init__, "__wrapped__", AIOKafkaConsumer.__init__)
    unwrapped(raw, bootstrap_servers=tansu_broker.bootstrap, fetch_max_wait_ms=1500)
    delays = await _delivery_delays_ms(tansu_broker.bootstrap, topic, raw)
    if delays[2] < 50:
        pytest.fail(f"{FIXED_C} (median delivery {delays[2]:.0f} ms with a 1.5 s Fetch wait)")


async def test_capped_fetch_wait_delivers_promptly_on_tansu(
    tansu_broker: EmbeddedBroker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("quirk-c-capped")
    await ensure_topics(tansu_broker.bootstrap, [TopicSpec(topic, 1)])
    capped = AIOKafkaConsumer(bootstrap_servers=tansu_broker.bootstrap, fetch_max_wait_ms=1500)
    delays = await _delivery_delays_ms(tansu_broker.bootstrap, topic, capped)
    assert delays[2] < FETCH_WAIT_CAP_MS, delays
