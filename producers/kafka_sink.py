"""The EventSink over Kafka: events and statuses keyed by repository, acknowledged."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from aiokafka import AIOKafkaProducer

from producers.events import EventBase, SourceStatus, encode
from producers.topics import DEFAULT_TOPICS, Topics


class KafkaSink:
    def __init__(
        self,
        bootstrap: str,
        *,
        topics: Topics = DEFAULT_TOPICS,
        client_options: Mapping[str, object] | None = None,
    ) -> None:
        self._topics = topics
        self._producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=5,
            max_request_size=8 * 1024 * 1024,
            **dict(client_options or {}),  # type: ignore[arg-type]
        )

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def publish(self, events: Sequence[EventBase]) -> None:
        # One repository, one key, one partition: sending without waiting in between
        # keeps the order; waiting on every future makes the batch acknowledged.
        futures = [
            await self._producer.send(
                self._topics.file_events, key=e.repo.encode(), value=encode(e)
            )
            for e in events
        ]
        await asyncio.gather(*futures)

    async def publish_status(self, status: SourceStatus) -> None:
        await self._producer.send_and_wait(
            self._topics.sources, key=status.repo.encode(), value=encode(status)
        )
