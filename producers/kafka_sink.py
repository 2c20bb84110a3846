"""The EventSink over Kafka: events keyed by repository, statuses by producer session
on their repository's partition (`by_repository`), acknowledged.

A broker that is away does not lose events: what was not acknowledged is sent again,
in order, with capped backoff, until the broker takes it (sending an event twice is
harmless: the processors skip a sequence number they already applied). A refusal no
retry changes (``producers.refusal.permanent``: a message too large for the topic, a
topic that may not be written) is tried ``refused_attempts`` times, then the event is
replaced by its content-free substitute under the same sequence number and dead-lettered
with the reason; an event without a substitute raises `EventRefused` (nothing after it
is sent, so the sequence keeps no gap). With ``stop`` set, a send still waiting on the
broker is given ``stop_grace_s`` and then abandoned: `PublishStopped` (issue 15: Ctrl-C
used to wait for a broker that was not coming back).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import structlog
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.partitioner import DefaultPartitioner

from producers.events import EventBase, SourceStatus, encode
from producers.metrics import produced
from producers.refusal import permanent, refused_letter, substitute, too_large
from producers.topics import DEFAULT_TOPICS, Topics, partition_key, status_key

log = structlog.get_logger(__name__)

MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""Above the largest event: a file at the content cap, base64-encoded, in JSON."""

T = TypeVar("T")


def by_repository(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """The sink's partitioner: Kafka's default (murmur2) over the key's repository part
    (`producers.topics.partition_key`), so that a status keyed by producer session lands
    on its repository's partition, and a repository key where the default puts it."""
    return int(
        DefaultPartitioner()(None if key is None else partition_key(key), all_partitions, available)
    )


Signer = Callable[[EventBase], EventBase]


class PublishStopped(Exception):
    """A stop was requested while the broker had not acknowledged: nothing more is sent."""


class EventRefused(Exception):
    """The broker refused an event for good and it has no content-free substitute (or
    the substitute was refused too): the producer cannot go on without a gap."""

    def __init__(self, event: EventBase, reason: str) -> None:
        super().__init__(reason)
        self.event = event


class KafkaSink:
    def __init__(
        self,
        bootstrap: str,
        *,
        topics: Topics = DEFAULT_TOPICS,
        first_delay_s: float = 0.2,
        max_delay_s: float = 10.0,
        refused_attempts: int = 5,
        stop: asyncio.Event | None = None,
        stop_grace_s: float = 2.0,
        clock: Callable[[], float] = time.time,
        producer: AIOKafkaProducer | None = None,
    ) -> None:
        self._topics = topics
        self._first_delay_s = first_delay_s
        self._max_delay_s = max_delay_s
        self._refused_attempts = refused_attempts
        self._stop = stop
        self._stop_grace_s = stop_grace_s
        self._clock = clock
        self._signers: dict[str, Signer] = {}
        self.refused = 0
        self._producer = producer or AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks="all",
            linger_ms=5,
            max_request_size=MAX_REQUEST_BYTES,
            partitioner=by_repository,
        )

    def sign_substitutes(self, producer: str, sign: Signer) -> None:
        """How to sign the substitute of a refused event of session ``producer`` (its
        session key's ``sign``): events are signed, and a substitute is a new event."""
        self._signers[producer] = sign

    async def start(self) -> None:
        await self._producer.start()

    async def stop(self) -> None:
        await self._producer.stop()

    async def publish(self, events: Sequence[EventBase]) -> None:
        """Send in order; return once every event (or its substitute) is acknowledged."""
        pending = list(events)
        delay, refusals = self._first_delay_s, 0
        while pending:
            sent, error = await self._attempt(functools.partial(self._send_in_order, pending))
            if sent:
                produced(self._topics.file_events, sent)
                pending, refusals = pending[sent:], 0
            if error is None:
                continue
            if permanent(error):
                refusals += 1
                if refusals >= self._refused_attempts:
                    pending[0] = await self._replace(pending[0], error)
                    refusals = 0
                    continue
            log.warning(
                "publish_retried",
                what="events",
                count=len(pending),
                seq=pending[0].seq,
                error=repr(error),
                delay_s=delay,
            )
            await self._pause(delay)
            delay = min(delay * 2, self._max_delay_s)

    async def publish_status(self, status: SourceStatus) -> None:
        """Send a status. A status repeats the session's whole progress and the next one
        supersedes it, so one the broker refuses for good, or that cannot go out once a
        stop is requested, is dropped (logged) rather than held.

        Keyed by session (`producers.topics.status_key`), on the repository's partition:
        the compacted topic keeps the last status of every session (issue 16)."""
        key = status_key(status.repo, status.producer)

        async def send() -> None:
            await self._producer.send_and_wait(self._topics.sources, key=key, value=encode(status))

        delay, refusals = self._first_delay_s, 0
        while True:
            try:
                await self._attempt(send)
                produced(self._topics.sources)
                return
            except PublishStopped:
                log.warning("status_dropped", repo=status.repo, reason="stop requested")
                return
            except KafkaError as exc:
                refusals += permanent(exc)
                if refusals >= self._refused_attempts:
                    log.error("status_dropped", repo=status.repo, error=repr(exc))
                    return
                log.warning("publish_retried", what="status", error=repr(exc), delay_s=delay)
            try:
                await self._pause(delay)
            except PublishStopped:
                log.warning("status_dropped", repo=status.repo, reason="stop requested")
                return
            delay = min(delay * 2, self._max_delay_s)

    async def _send_in_order(self, events: Sequence[EventBase]) -> tuple[int, KafkaError | None]:
        """How many of ``events``, from the first, the broker acknowledged, and the error
        that stopped the others. One repository, one key, one partition: sending without
        waiting in between keeps the order; waiting on every future acknowledges."""
        futures: list[asyncio.Future[object]] = []
        refused: KafkaError | None = None
        for event in events:
            try:
                futures.append(
                    await self._producer.send(
                        self._topics.file_events, key=event.repo.encode(), value=encode(event)
                    )
                )
            except KafkaError as exc:  # refused before it left (the client's size check)
                refused = exc
                break
        results = await asyncio.gather(*futures, return_exceptions=True)
        for i, result in enumerate(results):
            if isinstance(result, KafkaError):
                return i, result
            if isinstance(result, BaseException):
                raise result
        return len(results), refused

    async def _replace(self, event: EventBase, error: KafkaError) -> EventBase:
        """The substitute of ``event``, refused for good, once its dead letter is out."""
        self.refused += 1
        instead = substitute(event) if too_large(error) else None
        sign = self._signers.get(event.producer)
        if instead is not None and sign is not None:
            instead = sign(instead)
        else:
            instead = None
        letter = refused_letter(event, self._topics.file_events, error, self._clock(), sent=instead)
        log.error(
            "event_refused",
            repo=event.repo,
            seq=event.seq,
            kind=getattr(event, "kind", None),
            path=getattr(event, "path", None),
            error=repr(error),
            substituted=instead is not None,
        )
        await self._send_letter(letter.key or b"", encode(letter))
        if instead is None:
            raise EventRefused(event, letter.reason)
        return instead

    async def _send_letter(self, key: bytes, value: bytes) -> None:
        async def send() -> None:
            await self._producer.send_and_wait(self._topics.dead_letters, key=key, value=value)

        delay, refusals = self._first_delay_s, 0
        while True:
            try:
                await self._attempt(send)
                produced(self._topics.dead_letters)
                return
            except KafkaError as exc:
                refusals += permanent(exc)
                if refusals >= self._refused_attempts:
                    log.error("dead_letter_refused", error=repr(exc))
                    return
                log.warning("publish_retried", what="dead_letter", error=repr(exc))
            await self._pause(delay)
            delay = min(delay * 2, self._max_delay_s)

    async def _attempt(self, send: Callable[[], Awaitable[T]]) -> T:
        """``send()``, unless a stop is requested before the broker answers: then it gets
        ``stop_grace_s`` more (a healthy broker answers in milliseconds) and is
        abandoned with `PublishStopped`."""
        task = asyncio.ensure_future(send())
        if self._stop is None:
            return await task
        stopping = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                await asyncio.wait({task}, timeout=self._stop_grace_s)
            if not task.done():
                task.cancel()
                raise PublishStopped("stop requested before the broker acknowledged")
            return task.result()
        finally:
            stopping.cancel()

    async def _pause(self, delay: float) -> None:
        """Wait ``delay`` before a retry, or raise `PublishStopped` once a stop is asked."""
        if self._stop is None:
            await asyncio.sleep(delay)
            return
        if self._stop.is_set():
            raise PublishStopped("stop requested while the broker was away")
        try:
            await asyncio.wait_for(self._stop.wait(), delay)
        except TimeoutError:
            return
        raise PublishStopped("stop requested while the broker was away")


class KafkaLeaseWatch:
    """The LeaseWatch over the sources topic (issue 15): every status read from the end of
    the topic is shown to an InMemoryLeaseWatch, which wakes the producers it fences.

    Reading from the end is enough: a producer that claimed before this one started
    sends a status every heartbeat. No consumer group: each process reads every
    partition itself and commits nothing.
    """

    def __init__(self, bootstrap: str, *, topics: Topics = DEFAULT_TOPICS) -> None:
        # Imported here to keep this class apart from the sink above (issue 15).
        from producers.lease import InMemoryLeaseWatch

        self._bootstrap = bootstrap
        self._topic = topics.sources
        self._core = InMemoryLeaseWatch()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(
            self._topic,
            bootstrap_servers=self._bootstrap,
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="latest",
        )
        await consumer.start()
        self._task = asyncio.create_task(self._read(consumer), name="lease-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def fenced(self, repo: str, lease: tuple[int, str]) -> SourceStatus:
        return await self._core.fenced(repo, lease)

    async def _read(self, consumer: object) -> None:
        from pydantic import ValidationError

        from producers.events import decode_source_status

        try:
            while True:
                try:
                    batches = await consumer.getmany(timeout_ms=500)  # type: ignore[attr-defined]
                except KafkaError as exc:  # the broker away: read on when it is back
                    log.warning("lease_watch_retried", error=repr(exc))
                    await asyncio.sleep(1.0)
                    continue
                for records in batches.values():
                    for record in records:
                        try:
                            self._core.observe(decode_source_status(record.value))
                        except (ValidationError, ValueError) as exc:
                            log.warning("source_status_malformed", error=str(exc)[:200])
        finally:
            await consumer.stop()  # type: ignore[attr-defined]
