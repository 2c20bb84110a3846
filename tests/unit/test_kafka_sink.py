"""The Kafka sink keeps a batch until the broker takes it, whole and in order."""

from __future__ import annotations

import asyncio

from aiokafka.errors import KafkaConnectionError

from producers.events import decode_file_event
from producers.kafka_sink import KafkaSink
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
    s = Stamp()
    events = [s.changed("a.py", "A = 1"), s.changed("b.py", "B = 1")]
    await asyncio.wait_for(sink.publish(events), 5)
    delivered = [decode_file_event(value) for _, _, value in producer.sent]
    # Every event arrives; an event sent twice carries the same (producer, seq),
    # which the indexer skips as a replay.
    assert [(e.path, e.seq) for e in delivered][-2:] == [("a.py", 1), ("b.py", 2)]
    assert {topic for topic, _, _ in producer.sent} == {"gazetteer.file-events.v1"}
    assert {key for _, key, _ in producer.sent} == {b"app-1"}
