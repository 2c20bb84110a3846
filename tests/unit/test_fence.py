"""`Fence`: open until closed, then every write waits for good (processors/fence.py)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from processors.app import FaustDeltaSink
from processors.fence import Fence
from producers.topics import Topics


async def test_an_open_fence_holds_nothing_and_a_closed_one_holds_until_cancelled() -> None:
    fence = Fence()
    await asyncio.wait_for(fence.hold(), 0.1)
    assert fence.close("reset") is None  # no producer: nothing to abort
    assert fence.closed and fence.reason == "reset"
    held = asyncio.ensure_future(fence.hold())
    await asyncio.sleep(0.05)
    assert not held.done()
    held.cancel()
    with pytest.raises(asyncio.CancelledError):
        await held
    assert fence.close("again") is None
    assert fence.reason == "reset"  # the first reason stays


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes]] = []

    async def send_and_wait(self, topic: str, key: bytes, value: bytes, *_: object) -> None:
        self.sent.append((topic, key))


async def test_a_fenced_sink_sends_nothing_more() -> None:
    producer, consumer = Recorder(), SimpleNamespace()
    app = SimpleNamespace(producer=producer, consumer=consumer)
    sink = FaustDeltaSink(app, Topics())  # type: ignore[arg-type]
    await sink.publish_state("r", b"state")
    assert len(producer.sent) == 1
    assert sink.fence_writes("broker reset") is None  # a producer without aiokafka inside
    for publish in (sink.publish_state("r", b"state"), sink.publish_deltas([])):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(publish, 0.05)
    assert len(producer.sent) == 1
    assert await consumer._commit({"partition": 7}) is False  # the consumer commits nothing
