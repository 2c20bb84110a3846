"""The EventSink over Kafka: events and statuses keyed by repository, acknowledged.

A broker that is away does not lose events: a batch that fails is sent again, whole,
with capped backoff, until the broker takes it. Sending a batch twice is harmless,
because the processors skip an event whose producer sequence they already applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError

from producers.events import EventBase, SourceStatus, encode
from producers.topics import DEFAULT_TOPICS, Topics
from stores.metrics import produced

log = structlog.get_logger(__name__)

MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""Above the largest event: a file at the content cap, base64-encoded, in JSON."""


class KafkaSink:
    def __init__(
        self,
        bootstrap: str,
        *,
        topics: Topics = DEFAULT_TOPICS,
        first_delay_s: float = 0.2,
        max_delay_s: float = 10.0,
        producer: AIOKafkaProducer | None = None,
    ) -> None:
        self._topics = topics
        self._first_delay_s = first_delay_s
        self._max_delay_s = max_delay_s
        self._producer = producer or AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=5,
            max_request_size=MAX_REQUEST_BYTES,
        )

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def publish(self, events: Sequence[EventBase]) -> None:
        async def send_all() -> None:
            # One repository, one key, one partition: sending without waiting in
            # between keeps the order; waiting on every future acknowledges the batch.
            futures = [
                await self._producer.send(
                    self._topics.file_events, key=e.repo.encode(), value=encode(e)
                )
                for e in events
            ]
            await asyncio.gather(*futures)

        await self._retrying(send_all, "events", len(events))
        produced(self._topics.file_events, len(events))

    async def publish_status(self, status: SourceStatus) -> None:
        async def send() -> None:
            await self._producer.send_and_wait(
                self._topics.sources, key=status.repo.encode(), value=encode(status)
            )

        await self._retrying(send, "status", 1)
        produced(self._topics.sources)

    async def _retrying(self, send: Callable[[], Awaitable[None]], what: str, count: int) -> None:
        delay = self._first_delay_s
        while True:
            try:
                await send()
                return
            except KafkaError as exc:
                log.warning(
                    "publish_retried", what=what, count=count, error=repr(exc), delay_s=delay
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._max_delay_s)
