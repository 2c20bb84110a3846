"""The Kafka sink keeps a batch until the broker takes it, whole and in order."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
import structlog
from aiokafka.errors import (
    InvalidTopicError,
    KafkaConnectionError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    NotLeaderForPartitionError,
    RecordTooLargeError,
    UnknownError,
)

from processors.pipeline import PermanentPublishError, RetryPolicy, with_retry
from producers.events import FileChanged, SourceStatus, decode_file_event
from producers.kafka_sink import EventRefused, KafkaSink, PublishStopped
from producers.refusal import permanent
from producers.signing import verify
from producers.topics import DEFAULT_TOPICS
from query.read_model import ReadModel
from stores.dead_letters import decode_dead_letter
from tests.factories import Stamp


class FlakyProducer:
    """Fails the first ``failures`` sends, like a broker that is away for a while."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.sent: list[tuple[str, bytes, bytes]] = []

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.failures:
            self.failures -= 1
            future.set_exception(KafkaConnectionError("broker away"))
        else:
            self.sent.append((topic, key, value))
            future.set_result(None)
        return future


async def test_a_failed_batch_is_sent_again_until_the_broker_takes_it() -> None:
    producer = FlakyProducer(failures=3)
    sink = KafkaSink("unused:0", first_delay_s=0.001, max_delay_s=0.002, producer=producer)  # type: ignore[arg-type]
    s = Stamp(claimed=False)
    events = [s.changed("a.py", "A = 1"), s.changed("b.py", "B = 1")]
    await asyncio.wait_for(sink.publish(events), 5)
    delivered = [decode_file_event(value) for _, _, value in producer.sent]
    # Every event arrives; an event sent twice carries the same (producer, seq),
    # which the indexer skips as a replay.
    assert [(e.path, e.seq) for e in delivered][-2:] == [("a.py", 1), ("b.py", 2)]
    assert {topic for topic, _, _ in producer.sent} == {"gazetteer.file-events.v1"}
    assert {key for _, key, _ in producer.sent} == {b"app-1"}


class RefusingProducer:
    """A broker whose file-events topic refuses messages above ``max_bytes`` for good,
    and that is away (every send fails) while ``down``; counts every attempt."""

    def __init__(self, max_bytes: int = 10_000, down: bool = False) -> None:
        self.max_bytes, self.down = max_bytes, down
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.attempts = 0
        self.on_attempt: Callable[[int], None] = lambda n: None

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[None]:
        self.attempts += 1
        self.on_attempt(self.attempts)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.down:
            future.set_exception(KafkaConnectionError("broker away"))
        elif topic == DEFAULT_TOPICS.file_events and len(value) > self.max_bytes:
            future.set_exception(MessageSizeTooLargeError("over max.message.bytes"))
        else:
            self.sent.append((topic, key, value))
            future.set_result(None)
        return future

    async def send_and_wait(self, topic: str, key: bytes, value: bytes) -> None:
        await (await self.send(topic, key, value))

    def on(self, topic: str) -> list[bytes]:
        return [value for t, _, value in self.sent if t == topic]


def sink_over(producer: RefusingProducer, stop: asyncio.Event | None = None) -> KafkaSink:
    return KafkaSink(
        "unused:0",
        first_delay_s=0.001,
        max_delay_s=0.002,
        stop=stop,
        stop_grace_s=0.01,
        clock=lambda: 2000.0,
        producer=producer,  # type: ignore[arg-type]
    )


async def test_a_file_the_broker_refuses_is_sent_without_content_under_its_seq() -> None:
    producer = RefusingProducer(max_bytes=10_000)
    sink = sink_over(producer)
    s = Stamp()
    sink.sign_substitutes(s.producer, s.key.sign)
    events = [s.changed("a.py", "A = 1"), s.changed("big.py", "x" * 50_000), s.changed("c.py", "C")]
    await asyncio.wait_for(sink.publish(events), 5)
    delivered = [decode_file_event(v) for v in producer.on(DEFAULT_TOPICS.file_events)]
    # a.py once; big.py refused 5 times (c.py was sent behind it each time) then its
    # substitute; c.py again after it: the log reads 2, 3, 4, 3, 4, which the worker
    # takes as seq 2, 3, 4 (the later 3 and 4 are replays).
    assert [(e.seq, e.path) for e in delivered] == [  # type: ignore[union-attr]
        (2, "a.py"),
        *[(4, "c.py")] * 5,
        (3, "big.py"),
        (4, "c.py"),
    ]
    instead = delivered[-2]
    assert isinstance(instead, FileChanged)
    assert (instead.content, instead.skipped, instead.size) == (None, "too_large", 50_000)
    assert verify(instead, s.key.public_key)  # signed by the session's key
    assert producer.attempts == 3 + 4 * 2 + 1 + 2  # a, big, c; 4 x (big, c); letter; big', c
    (raw,) = producer.on(DEFAULT_TOPICS.dead_letters)
    letter = decode_dead_letter(raw)
    assert (letter.failure, letter.key, letter.partition, letter.offset) == (
        "rejected",
        b"app-1",
        -1,
        -1,
    )
    assert letter.reason.startswith("refused by the broker: file_changed big.py (seq 3): ")
    assert "MessageSizeTooLargeError" in letter.reason
    assert letter.value is not None and decode_file_event(letter.value) == instead
    assert sink.refused == 1


async def test_the_read_side_counts_a_refused_event_against_its_repository() -> None:
    producer = RefusingProducer(max_bytes=10_000)
    sink = sink_over(producer)
    s = Stamp()
    sink.sign_substitutes(s.producer, s.key.sign)
    await sink.publish([s.changed("big.py", "x" * 50_000)])
    model = ReadModel()
    model.view("app-1")
    (raw,) = producer.on(DEFAULT_TOPICS.dead_letters)
    model.apply_dead_letter(decode_dead_letter(raw), "app-1")
    assert (model.repos["app-1"].dead_letters, model.dead_letters_total) == (1, 1)


async def test_a_refused_event_without_a_substitute_stops_the_session_after_its_letter() -> None:
    producer = RefusingProducer(max_bytes=2_000)
    sink = sink_over(producer)
    s = Stamp()  # no signer registered: a substitute could not be signed
    events = [s.changed("big.py", "x" * 5_000), s.deleted("gone.py")]
    with pytest.raises(EventRefused) as refused:
        await asyncio.wait_for(sink.publish(events), 5)
    assert refused.value.event == events[0]
    # gone.py went out behind big.py each time, before the refusal was known: a worker
    # holds it as past a gap; nothing is sent once the refusal is final.
    sent = [decode_file_event(v) for v in producer.on(DEFAULT_TOPICS.file_events)]
    assert [e.seq for e in sent] == [3] * 5
    assert len(producer.on(DEFAULT_TOPICS.dead_letters)) == 1
    assert producer.attempts == 5 * 2 + 1  # bounded: five refusals, then the letter


async def test_a_stop_while_the_broker_is_away_ends_the_retries() -> None:
    producer = RefusingProducer(down=True)
    stop = asyncio.Event()
    producer.on_attempt = lambda n: stop.set() if n == 7 else None
    sink = sink_over(producer, stop)
    s = Stamp()
    with pytest.raises(PublishStopped):
        await asyncio.wait_for(sink.publish([s.changed("a.py", "A = 1")]), 5)
    assert producer.attempts == 7  # no attempt after the stop
    # The last status is tried once more, then dropped instead of held.
    await asyncio.wait_for(sink.publish_status(status_of(s)), 5)
    assert producer.attempts == 8


async def test_a_stop_abandons_a_send_the_broker_never_answers() -> None:
    class Hanging(RefusingProducer):
        async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[None]:
            self.attempts += 1
            await asyncio.Event().wait()  # waiting for metadata from a broker that is gone
            raise AssertionError("unreachable")

    producer = Hanging()
    stop = asyncio.Event()
    sink = sink_over(producer, stop)
    publishing = asyncio.ensure_future(sink.publish([Stamp().changed("a.py", "A")]))
    await asyncio.sleep(0)
    stop.set()
    with pytest.raises(PublishStopped):
        await asyncio.wait_for(publishing, 5)
    assert producer.attempts == 1


def status_of(s: Stamp) -> SourceStatus:
    return SourceStatus(
        repo=s.repo,
        producer=s.producer,
        root="/r",
        branch=None,
        head_commit=None,
        working_tree_dirty=False,
        last_seq=1,
        batch_first_seq=1,
        batch_started_at=1000.0,
        sent_at=1000.0,
        heartbeat_s=5.0,
        state="stopped",
    )


def test_permanent_errors_are_the_non_retriable_ones_but_timeouts() -> None:
    assert [
        permanent(e)
        for e in (
            MessageSizeTooLargeError(),
            RecordTooLargeError(),
            InvalidTopicError(),
            KafkaTimeoutError(),
            KafkaConnectionError(),
            NotLeaderForPartitionError(),
        )
    ] == [True, True, True, False, False, False]


async def test_the_worker_retries_transient_errors_and_raises_permanent_ones() -> None:
    calls: list[str] = []
    errors = [KafkaConnectionError("away"), KafkaTimeoutError(), MessageSizeTooLargeError("big")]

    async def send() -> None:
        calls.append("send")
        raise errors[len(calls) - 1]

    policy = RetryPolicy(first_delay_s=0.001, max_delay_s=0.002)
    with pytest.raises(PermanentPublishError) as raised:
        await asyncio.wait_for(with_retry(send, structlog.get_logger(), policy), 5)
    assert calls == ["send"] * 3  # two transient failures retried, the refusal raised
    assert isinstance(raised.value.__cause__, MessageSizeTooLargeError)


async def test_an_unknown_server_error_is_retried_a_few_times_then_refused() -> None:
    calls: list[int] = []

    async def flaky() -> None:  # Tansu just after a restart: -1 twice, then fine
        calls.append(1)
        if len(calls) <= 2:
            raise UnknownError()

    policy = RetryPolicy(first_delay_s=0.001, max_delay_s=0.002, unknown_attempts=3)
    await asyncio.wait_for(with_retry(flaky, structlog.get_logger(), policy), 5)
    assert len(calls) == 3

    async def always() -> None:
        calls.append(1)
        raise UnknownError()

    calls.clear()
    with pytest.raises(PermanentPublishError) as raised:
        await asyncio.wait_for(with_retry(always, structlog.get_logger(), policy), 5)
    assert len(calls) == 4 and isinstance(raised.value.__cause__, UnknownError)
