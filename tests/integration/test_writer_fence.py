"""A fenced worker generation delivers none of the batches its producer still holds.

`processors.fence.abort_pending` reaches into aiokafka (it has no public abort), so it
is checked against a real broker of each kind: batches held back by the producer's
linger (as a retried batch is held while the topics are missing) are failed, not
delivered, and a send after the fence fails at once; a second producer, not fenced,
delivers on the same topic meanwhile.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from deploy.topics_admin import ensure_topics
from processors.fence import Fence, WriterFenced
from producers.topics import TopicSpec

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
