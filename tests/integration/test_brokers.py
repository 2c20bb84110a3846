"""The same client behaviour on the embedded Tansu and on Apache Kafka."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from deploy.embedded_broker import EmbeddedBroker
from deploy.kafka_dist import ApacheKafka
from deploy.tansu_quirks import GROUP_TIMEOUTS, detect_tansu, end_offsets
from deploy.topics_admin import ensure_topics
from producers.topics import TopicSpec

pytestmark = pytest.mark.integration

Broker = EmbeddedBroker | ApacheKafka

# Tansu holds every JoinGroup for session_timeout / 2 = 3 s (GROUP_TIMEOUTS); a member
# that left without LeaveGroup costs the whole session (6 s) on top of that.
JOIN_BUDGET_S = 4.5


async def _consume(consumer: AIOKafkaConsumer, count: int, within: float = 20.0) -> list:
    records: list = []
    deadline = time.monotonic() + within
    while len(records) < count and time.monotonic() < deadline:
        batches = await consumer.getmany(timeout_ms=500)
        for tp in sorted(batches):
            records.extend(batches[tp])
    return records


async def _wait_assigned(consumer: AIOKafkaConsumer, partitions: int, within: float) -> None:
    deadline = time.monotonic() + within
    while len(consumer.assignment()) < partitions:
        if time.monotonic() > deadline:
            raise TimeoutError(f"no assignment of {partitions} partitions within {within} s")
        await asyncio.sleep(0.02)


async def test_keyed_messages_round_trip(broker: Broker, unique_name: Callable[[str], str]) -> None:
    topic = unique_name("keyed")
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 3)])
    sent = [(f"repo-{i % 5}".encode(), f"{i}".encode()) for i in range(40)]
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        for key, value in sent:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(3)])
        records = await _consume(consumer, len(sent))
    finally:
        await consumer.stop()

    assert len(records) == len(sent)
    partitions_of_key: dict[bytes, set[int]] = {}
    values_of_key: dict[bytes, list[int]] = {}
    for record in records:
        partitions_of_key.setdefault(record.key, set()).add(record.partition)
        values_of_key.setdefault(record.key, []).append(int(record.value))
    assert all(len(partitions) == 1 for partitions in partitions_of_key.values())
    for key, values in values_of_key.items():
        assert values == sorted(values), f"{key!r} out of order"
        assert values == [int(v) for k, v in sent if k == key]


async def test_ensure_topics_is_idempotent(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    specs = [TopicSpec(unique_name("events"), 4), TopicSpec(unique_name("deltas"), 4)]
    config = {"retention.ms": "-1"}

    created = await ensure_topics(broker.bootstrap, specs, config=config)
    again = await ensure_topics(broker.bootstrap, specs, config=config)

    assert created == tuple(sorted(spec.name for spec in specs))
    assert again == ()
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics([spec.name for spec in specs])
        assert {t["topic"]: len(t["partitions"]) for t in described} == {s.name: 4 for s in specs}
        if broker.kind == "kafka":
            configs = await admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, specs[0].name)]
            )
            entries = {entry[0]: entry[1] for entry in configs[0].resources[0][4]}
            assert entries["retention.ms"] == "-1"
    finally:
        await admin.close()


async def test_cleanly_closed_member_lets_the_next_join_at_once(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("group"), unique_name("group")
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])

    def member() -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            topic, bootstrap_servers=broker.bootstrap, group_id=group, **GROUP_TIMEOUTS
        )

    first = member()
    await first.start()
    await _wait_assigned(first, 2, within=15)
    first_generation = first._coordinator.generation
    await first.stop()

    second = member()
    started = time.monotonic()
    await second.start()  # returns once the member has its assignment
    try:
        await _wait_assigned(second, 2, within=30)
        joined_after = time.monotonic() - started
    finally:
        await second.stop()

    if broker.kind == "tansu":
        assert first_generation == 0, "the workaround for generation 0 was not exercised"
    assert joined_after < JOIN_BUDGET_S, (
        f"the next member waited {joined_after:.1f} s: the first one did not leave the group"
    )


async def test_end_offsets_are_high_watermarks_after_batches(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("offsets")
    await ensure_topics(broker.bootstrap, [TopicSpec(topic, 2)])
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        for batch_number in range(4):
            batch = producer.create_batch()
            for i in range(5):
                batch.append(key=b"repo", value=f"{batch_number}.{i}".encode(), timestamp=None)
            await (await producer.send_batch(batch, topic, partition=0))
    finally:
        await producer.stop()
    partitions = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    expected = {partitions[0]: 20, partitions[1]: 0}

    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
    await consumer.start()
    try:
        told = await end_offsets(consumer, partitions, broker_is_tansu=broker.kind == "tansu")
        detected = await end_offsets(consumer, partitions)
    finally:
        await consumer.stop()

    assert told == expected
    assert detected == expected


async def test_detect_tansu_tells_the_brokers_apart(broker: Broker) -> None:
    assert await detect_tansu(broker.bootstrap) is (broker.kind == "tansu")


@pytest.mark.usefixtures("tansu_selected")
async def test_two_embedded_brokers_do_not_collide() -> None:
    async with EmbeddedBroker() as one, EmbeddedBroker() as two:
        assert one.bootstrap != two.bootstrap
        assert await detect_tansu(one.bootstrap)
        assert await detect_tansu(two.bootstrap)


_CTRL_C_SCRIPT = """
import asyncio, sys
from deploy.embedded_broker import EmbeddedBroker
from deploy.kafka_dist import ApacheKafka

async def main():
    async with EmbeddedBroker() as broker:
        print("PID", broker.pid, flush=True)
        await asyncio.sleep(60)

asyncio.run(main())
"""


@pytest.mark.usefixtures("tansu_selected")
def test_embedded_broker_stops_on_ctrl_c() -> None:
    launcher = subprocess.Popen(
        [sys.executable, "-c", _CTRL_C_SCRIPT],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    try:
        assert launcher.stdout is not None
        line = ""
        while not line.startswith("PID "):
            line = launcher.stdout.readline()
            assert line, "the launcher exited before starting the broker"
        broker_pid = int(line.split()[1])
        launcher.send_signal(signal.SIGINT)
        launcher.wait(timeout=15)
    finally:
        launcher.kill()
    deadline = time.monotonic() + 5
    while _alive(broker_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(broker_pid), "Tansu outlived its launcher's Ctrl-C"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
