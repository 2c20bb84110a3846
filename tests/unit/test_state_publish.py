"""The worker's sink publishes a state snapshot whole, or in parts on the repository's
partition in order, and tombstones the parts a larger snapshot left once a smaller one
replaces it (stores/state_topic.py)."""

from __future__ import annotations

from types import SimpleNamespace

from processors.app import FaustDeltaSink
from producers.topics import DEFAULT_TOPICS
from stores.state_snapshot import capture, encode
from tests.unit.test_state_snapshot import fold, history, reader_fold

TOPIC = DEFAULT_TOPICS.state_snapshots


class Producer:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes, int | None, int | None]] = []  # key, partition, size

    async def send_and_wait(self, topic, key, value, partition, timestamp, headers):  # type: ignore[no-untyped-def]
        assert topic == TOPIC
        self.sent.append((key, partition, None if value is None else len(value)))


async def test_parts_go_to_the_repositorys_partition_and_leftovers_are_tombstoned(
    monkeypatch,  # type: ignore[no-untyped-def]
) -> None:
    import stores.state_topic as state_topic

    _, deltas = fold(history(8, edits=6))
    raw = encode(capture(reader_fold(deltas)))
    producer = Producer()
    sink = FaustDeltaSink(SimpleNamespace(producer=producer), DEFAULT_TOPICS, lambda repo: 5)  # type: ignore[arg-type]
    await sink.publish_state("app-1", raw)
    assert producer.sent == [(b"app-1", None, len(raw))]  # whole: the key's partition

    monkeypatch.setattr(state_topic, "MAX_SNAPSHOT_BYTES", 0)
    monkeypatch.setattr(state_topic, "PART_BYTES", len(raw) // 3 + 1)
    producer.sent.clear()
    await sink.publish_state("app-1", raw)
    assert [(k, p) for k, p, _ in producer.sent] == [(f"app-1\0{i}".encode(), 5) for i in range(3)]
    monkeypatch.setattr(state_topic, "PART_BYTES", len(raw) // 2 + 1)
    producer.sent.clear()
    await sink.publish_state("app-1", raw)  # two parts now: the third is tombstoned
    assert [(k, p, n is None) for k, p, n in producer.sent] == [
        (b"app-1\x000", 5, False),
        (b"app-1\x001", 5, False),
        (b"app-1\x002", 5, True),
    ]
    monkeypatch.setattr(state_topic, "MAX_SNAPSHOT_BYTES", len(raw))
    producer.sent.clear()
    await sink.publish_state("app-1", raw)  # whole again: both parts tombstoned
    assert [(k, p, n is None) for k, p, n in producer.sent] == [
        (b"app-1", 5, False),
        (b"app-1\x000", 5, True),
        (b"app-1\x001", 5, True),
    ]
    producer.sent.clear()
    await sink.publish_state("app-1", raw)
    assert producer.sent == [(b"app-1", None, len(raw))]
