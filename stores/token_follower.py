"""Following the tokens topic: a process's `TokenBook` kept up to date (issue 19).

Every process that checks a token folds the whole topic: all its partitions assigned
(no consumer group, so each process reads every record, and none commits offsets),
from the beginning, then followed for as long as the process runs; a revocation holds
from the poll that reads its record (within ``poll_ms``). The query replicas fold it in
their materializer (query/materializer.py) with their other topics; this is for the
processes that read no other topic this way: the worker's and the producers' metrics
endpoint (deploy/metrics_server.py), and ``gazetteer token list`` (deploy/token_cli.py),
which reads it once to its end.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import ValidationError

from stores.tokens import TokenBook, decode_token

log = structlog.get_logger(__name__)


async def topic_partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    """Every partition of ``topic``, in order; RuntimeError if the broker has no such
    topic after 5 s. A consumer without a subscription tracks no topic's metadata, so it
    is asked for (as query/materializer.py does)."""
    for _ in range(50):
        found = consumer.partitions_for_topic(topic)
        if found:
            return [TopicPartition(topic, p) for p in sorted(found)]
        client = consumer._client  # aiokafka offers no public way to ask
        client.set_topics([topic])
        await client.force_metadata_update()
        await asyncio.sleep(0.1)
    raise RuntimeError(f"no topic {topic} on the broker")


def fold(book: TokenBook, value: bytes | None) -> bool:
    """One message of the topic folded into ``book``; False (logged) if it is no token
    record: one malformed record must not stop a process from reading the others."""
    if value is None:  # a tombstone: the compacted topic forgets a key, no record says so
        return True
    try:
        book.apply(decode_token(value))
    except (ValidationError, ValueError) as exc:
        log.error("token_record_rejected", error=str(exc)[:500])
        return False
    return True


RETRY_S = (0.5, 1.0, 2.0, 5.0)
"""Waits before following again after a failure (the broker away): capped."""


async def follow_tokens(
    bootstrap: str, topic: str, book: TokenBook, stop: asyncio.Event, poll_ms: int = 500
) -> None:
    """Fold every record of ``topic`` into ``book``, from its beginning, until ``stop``.

    A failure (the broker away, the topic missing for a while) is logged and the topic
    followed again from its beginning after a capped backoff: folding a record twice
    changes nothing (the latest of an id wins), and the book answers as it was meanwhile
    (no record can be published to a broker that is away)."""
    failures = 0
    while not stop.is_set():
        try:
            await _follow(bootstrap, topic, book, stop, poll_ms)
        except Exception:  # transient: the broker, the network; retried in place
            wait = RETRY_S[min(failures, len(RETRY_S) - 1)]
            failures += 1
            log.warning("tokens_follow_failed", topic=topic, retry_in_s=wait, exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)


async def _follow(
    bootstrap: str, topic: str, book: TokenBook, stop: asyncio.Event, poll_ms: int
) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    try:
        partitions = await topic_partitions(consumer, topic)
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        log.info("tokens_followed", topic=topic, partitions=len(partitions))
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=poll_ms)
            for messages in batches.values():
                for message in messages:
                    fold(book, message.value)
    finally:
        await consumer.stop()
