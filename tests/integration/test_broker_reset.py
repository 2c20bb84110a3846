"""A broker killed and restarted empty on the same port: every part recovers by itself.

Worker, query service and producers run as in ``gazetteer up`` (one event loop, one
`Cluster`); the broker is SIGKILLed and a new, empty one takes its port. The query
service must come back to ``fresh`` with the same answers as before, and no answer it
gives while it is behind may say ``fresh`` (each is ``stale``/``updating``, or ``fresh``
with the whole, identical content). Tansu restarts with a new cluster id; Apache Kafka
is formatted again with the same one, so that only the end offsets going backwards
(and the topics gone) tell it apart.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from deploy.broker_process import free_port
from deploy.broker_watch import observe
from deploy.embedded_broker import EmbeddedBroker
from deploy.kafka_dist import ApacheKafka, new_cluster_id
from deploy.tansu_quirks import install
from deploy.topics_admin import TopicMismatch, ensure_topics, install_no_topic_auto_creation
from producers.topics import TopicSpec
from tests.gitrepo import GitRepo
from tests.integration.conftest import selected_kinds
from tests.integration.stack import Stack, eventually, open_stack, stack_settings
from tests.integration.test_streaming import APP_FILES

pytestmark = pytest.mark.integration

# The streaming tests' application, its .gitignore aside (the counts below are its files).
FILES: dict[str, str | bytes] = {p: t for p, t in APP_FILES.items() if p != ".gitignore"}
NO_AUTO_CREATE = {"auto.create.topics.enable": "false"}
RESET_REASON = "the broker came back empty at "


class RestartableBroker:
    """One broker kind, killed with SIGKILL and started again empty on its port."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.port = free_port()
        self.cluster_id = new_cluster_id()
        self.broker: EmbeddedBroker | ApacheKafka | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def start(self) -> None:
        if self.kind == "tansu":
            install(broker_is_tansu=True)
            # A new cluster id per start, as the embedded broker does.
            self.broker = EmbeddedBroker(port=self.port)
        else:
            self.broker = ApacheKafka(
                partitions=1,
                port=self.port,
                cluster_id=self.cluster_id,  # formatted again with the same id
                extra_properties=NO_AUTO_CREATE,
            )
        await self.broker.start()

    async def kill(self) -> None:
        assert self.broker is not None and self.broker.pid is not None
        os.killpg(self.broker.pid, signal.SIGKILL)
        await self.broker.stop()  # reaps it and removes its storage

    async def stop(self) -> None:
        if self.broker is not None:
            await self.broker.stop()


@pytest.fixture(params=selected_kinds())
async def restartable(request: pytest.FixtureRequest) -> AsyncIterator[RestartableBroker]:
    broker = RestartableBroker(request.param)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()


async def answers(url: str, repo: str) -> list[tuple[str, dict[str, Any] | None, Any]]:
    """(what, freshness or None when not there, content) for the three answers."""
    out: list[tuple[str, dict[str, Any] | None, Any]] = []
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        summary = await client.get(f"/repositories/{repo}")
        files = await client.get(f"/repositories/{repo}/files")
        symbols = await client.get(f"/repositories/{repo}/symbols", params={"path": "app/views.py"})
        health = (await client.get("/health")).json()
    if summary.status_code == 200:
        body = summary.json()
        out.append(("summary", body["freshness"], (body["files"], body["symbols"], body["edges"])))
    else:
        out.append(("summary", None, summary.status_code))
    if files.status_code == 200:
        body = files.json()
        listed = sorted((f["path"], f["size"], f["symbols"], f["imports"]) for f in body["items"])
        out.append(("files", body["freshness"], (body["total"], listed)))
    else:
        out.append(("files", None, files.status_code))
    if symbols.status_code == 200:
        body = symbols.json()
        named = sorted((s["kind"], s["name"]) for s in body["items"])
        out.append(("symbols", body["freshness"], named))
    else:
        out.append(("symbols", None, symbols.status_code))
    out.append(("health", None, health["ready"]))
    return out


def content(taken: list[tuple[str, dict[str, Any] | None, Any]]) -> dict[str, Any]:
    return {what: value for what, _, value in taken if what != "health"}


def all_fresh(taken: list[tuple[str, dict[str, Any] | None, Any]]) -> bool:
    return all(f is not None and f["status"] == "fresh" for w, f, _ in taken if w != "health")


async def test_a_broker_restarted_empty_is_recovered_to_the_same_fresh_answers(
    restartable: RestartableBroker, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    stack: Stack = await open_stack(stack_settings(restartable.bootstrap, tmp_path / "data"))
    try:
        await stack.start_worker()
        url = await stack.start_query()
        await stack.start_sources([repo.root])
        await eventually(lambda: fresh_now(url), 120, "the first index to be fresh")
        (rid,) = stack.model.repos  # type: ignore[union-attr]
        # The list does not look at the sources; a repository's answers do, and the
        # first look may time out (the probe's first request to that partition's
        # leader): that answer says updating, rightly. Take them once all say fresh.
        before = await answers(url, rid)
        for _ in range(100):
            if all_fresh(before):
                break
            await asyncio.sleep(0.1)
            before = await answers(url, rid)
        assert all_fresh(before)
        expected = content(before)
        assert expected["summary"][0] == len(FILES)
        assert expected["symbols"] == [("FUNCTION", "show")]

        await restartable.kill()
        await restartable.start()  # empty, on the same port

        taken: list[list[tuple[str, dict[str, Any] | None, Any]]] = []

        async def recovered() -> bool:
            now = await answers(url, rid)
            taken.append(now)
            seen_reset = any(
                f is not None and f["reason"].startswith(RESET_REASON)
                for answer in taken
                for _, f, _ in answer
            )
            return seen_reset and all_fresh(now)

        try:
            await eventually(recovered, 180, "the index to be fresh again after the reset")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the last answers: {taken[-1:]}") from None
        assert content(taken[-1]) == expected
        assert taken[-1][-1] == ("health", None, True)
        for answer in taken:
            for what, freshness, value in answer:
                if freshness is not None and freshness["status"] == "fresh":
                    assert value == expected[what], f"a fresh {what} answer while behind"
        resets = [f for a in taken for _, f, _ in a if f and f["reason"].startswith(RESET_REASON)]
        assert {f["status"] for f in resets} <= {"updating", "stale"}
    finally:
        await stack.close()


async def fresh_now(url: str) -> bool:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        items = (await client.get("/repositories")).json()["items"]
    return bool(items) and items[0]["freshness"]["status"] == "fresh"


async def partition_count(bootstrap: str, topic: str) -> int:
    seen = await observe(bootstrap, [topic])
    return seen.partitions[topic]


async def test_a_topic_with_another_partition_count_is_refused(broker, unique_name) -> None:
    name = unique_name("mismatch")
    await ensure_topics(broker.bootstrap, [TopicSpec(name, 2)])
    with pytest.raises(TopicMismatch) as caught:
        await ensure_topics(broker.bootstrap, [TopicSpec(name, 3)])
    assert caught.value.mismatches == {name: (3, 2)}
    assert str(caught.value).startswith(f"topics with the wrong partition count: {name} has 2")
    assert await partition_count(broker.bootstrap, name) == 2


async def test_after_a_reset_an_empty_mismatched_topic_is_recreated_a_used_one_refused(
    broker, unique_name
) -> None:
    empty, used = unique_name("empty"), unique_name("used")
    await ensure_topics(broker.bootstrap, [TopicSpec(empty, 2), TopicSpec(used, 2)])
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(used, b"kept", partition=0)
    finally:
        await producer.stop()
    created = await ensure_topics(broker.bootstrap, [TopicSpec(empty, 3)], recreate_empty=True)
    assert created == (empty,)
    assert await partition_count(broker.bootstrap, empty) == 3
    with pytest.raises(TopicMismatch):
        await ensure_topics(broker.bootstrap, [TopicSpec(used, 3)], recreate_empty=True)
    assert await partition_count(broker.bootstrap, used) == 2


async def test_no_client_of_ours_creates_a_topic_by_asking_for_it(broker, unique_name) -> None:
    name = unique_name("asked")
    install_no_topic_auto_creation()
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.bootstrap)
    await admin.start()
    try:
        await admin.describe_topics([name])  # a metadata request naming the topic
        assert name not in await admin.list_topics()
    finally:
        await admin.close()
