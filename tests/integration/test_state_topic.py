"""State snapshots on the broker (issue 16 §2), on both brokers.

A query replica with a data dir of its own (another machine), started after a scan and
edits, loads each repository's snapshot from the state-snapshots topic, folds only the
deltas after it (it seeks to the snapshot's own delta: the ones it covers are not even
fetched), and answers as the replica that folded the whole log. A snapshot message that
cannot be trusted is refused with its reason and the log decides. A worker on another
machine starts the repository from the topic as well, fetching only the snapshot's delta.
(Tansu is told to publish here; `up` does not.)
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from structlog.testing import capture_logs

import processors.app as worker_app
import stores.state_topic as state_topic_module
from deploy.runtime import state_topic
from query.materializer import partition_of
from stores.state_snapshot import MAGIC
from stores.state_topic import FETCH_BYTES
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually, running_stack
from tests.integration.test_reconcile import FILES, content_of, fresh_at

pytestmark = pytest.mark.integration

ANSWERS = (
    "/repositories/{rid}/files?limit=100",
    "/repositories/{rid}/files/pkg/m3.py",
    "/repositories/{rid}/neighborhoods",
    "/repositories/{rid}/importance",
    "/repositories/{rid}/search?q=return+edited&limit=5",
    "/repositories/{rid}/context?q=f3&budget=2000",
    "/repositories/{rid}/graph-search?q=f1",
)
"""What an agent asks, state-derived (the churn ledger is history: a replica started
from a snapshot starts it there, as issue 16 says)."""


async def answers(stack: Stack, rid: str) -> list[object]:
    """The answers, without the freshness each carries (its lag is the clock's)."""
    return [timeless(await stack.get(path.format(rid=rid))) for path in ANSWERS]


async def answer_alike(replica: Stack, stack: Stack, rid: str) -> None:
    """The replica answers as the stack that folded the whole log, both asked at the same
    moment: a recluster the worker publishes after an edit reaches both (the neighborhoods
    topic), a moment after `fresh`, so answers taken before the replica started can be
    older than both."""
    seen: list[object] = []

    async def alike() -> bool:
        seen[:] = [await answers(replica, rid), await answers(stack, rid)]
        return seen[0] == seen[1]

    try:
        await eventually(alike, 30, "the replica's answers to be the stack's")
    except AssertionError:
        assert seen[0] == seen[1]  # the difference, shown
        raise


def timeless(answer: object) -> object:
    if isinstance(answer, dict):
        return {k: timeless(v) for k, v in answer.items() if k != "freshness"}
    if isinstance(answer, list):
        return [timeless(v) for v in answer]
    return answer


async def published(stack: Stack, rid: str, seq: int) -> int:
    """The delta the topic's snapshot of ``rid`` covers, once it covers at least ``seq``."""
    topic = state_topic(stack.settings, stack.cluster)
    covered = 0

    async def check() -> bool:
        nonlocal covered
        offered = await topic.latest(range(stack.settings.partitions))
        covered = offered[rid].header.seq if rid in offered else 0
        return covered >= seq

    await eventually(check, 60, f"a snapshot of {rid} covering delta {seq} on the topic")
    return covered


async def edited(stack: Stack, repo: GitRepo, rid: str, edits: int) -> str:
    head = repo.head()
    for i in range(edits):
        repo.write("pkg/m3.py", f"def f3():\n    return 'edited {i}'\n")
        head = repo.commit(f"edit {i}")
        await fresh_at(stack, repo.root, head)
    return head


def elsewhere(stack: Stack, data_dir: Path) -> Stack:
    """A part of the same deployment on another machine: its own data dir, no files."""
    return Stack(stack.settings.model_copy(update={"data_dir": data_dir}), stack.cluster)


@pytest.mark.parametrize("in_parts", [False, True], ids=["whole", "in-parts"])
async def test_a_new_replica_starts_from_the_topic_and_answers_as_one_that_folded_the_log(
    broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_parts: bool
) -> None:
    sent: list[int] = []  # messages per snapshot published
    if in_parts:  # every snapshot over the limit: sent in parts of 4 KB, joined by readers
        monkeypatch.setattr(state_topic_module, "MAX_SNAPSHOT_BYTES", 0)
        monkeypatch.setattr(state_topic_module, "PART_BYTES", 4096)

        def counted(repo: str, raw: bytes) -> list[tuple[bytes, bytes]]:
            messages = state_topic_module.snapshot_messages(repo, raw)
            sent.append(len(messages))
            return messages

        monkeypatch.setattr(worker_app, "snapshot_messages", counted)
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    async with running_stack(
        broker.bootstrap, tmp_path / "main", snapshots_on_broker=True
    ) as stack:
        await stack.start_sources([repo.root])
        rid = await fresh_at(stack, repo.root, repo.head())
        assert stack.model is not None
        covered = await published(stack, rid, stack.model.repos[rid].state.seq)
        head = await edited(stack, repo, rid, 3)
        last = stack.model.repos[rid].state.seq
        assert last > covered

        replica = elsewhere(stack, tmp_path / "replica")
        with capture_logs() as logs:
            await replica.start_query()
            await fresh_at(replica, repo.root, head)
        try:
            loaded = [e for e in logs if e["event"] == "read_side_state_loaded"]
            assert [(e["repo"], e["seq"]) for e in loaded] == [(rid, covered)]
            assert [e.get("source") for e in logs if e["event"] == "state_snapshot_loaded"] == [
                "topic"
            ]
            assert "state_snapshot_rejected" not in [e["event"] for e in logs]
            ready = [e for e in logs if e["event"] == "materializer_ready"]
            started = [e for e in logs if e["event"] == "materializer_started"]
            part = partition_of(rid, stack.settings.partitions)
            assert list(started[0]["sought"]) == [part]
            assert replica.model is not None
            # The snapshot, then only the deltas after it (up to where the replica is: a
            # delta the worker made after `last` was read, a commit's barrier seen by the
            # watcher and the commit follower, is folded too).
            held = replica.model.repos[rid].state.seq
            assert held >= last
            assert replica.model.deltas_applied == 1 + held - covered
            # Issue 16: none of the deltas the snapshot covers was fetched (each delta is
            # one message here): its own, checked against the log, and those after it.
            assert ready and ready[0]["skipped"] == 0
            assert 1 + last - covered <= ready[0]["delta_messages"] <= 1 + held - covered
            assert content_of(replica, rid) == content_of(stack, rid)
            await answer_alike(replica, stack, rid)
            assert not in_parts or (sent and min(sent) >= 2), sent
        finally:
            await replica.close()


async def test_a_corrupt_snapshot_message_is_refused_and_the_log_decides(
    broker, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    async with running_stack(
        broker.bootstrap, tmp_path / "main", snapshots_on_broker=True
    ) as stack:
        await stack.start_sources([repo.root])
        rid = await fresh_at(stack, repo.root, repo.head())
        assert stack.model is not None
        await published(stack, rid, stack.model.repos[rid].state.seq)
        head = await edited(stack, repo, rid, 1)
        await stack.stop("worker")  # nothing publishes over the damaged message
        offered = await state_topic(stack.settings, stack.cluster).latest(
            range(stack.settings.partitions)
        )
        covered = offered[rid].header.seq  # the stop's last snapshot, if it wrote one
        damaged = bytearray(offered[rid].raw)
        # In the body's first section (the state): the header still checks. (Damage in
        # the chunk postings only leaves them unused: tests/unit/test_state_snapshot.py.)
        damaged[damaged.index(b"\n", len(MAGIC)) + 20] ^= 0xFF
        producer = AIOKafkaProducer(
            bootstrap_servers=stack.cluster.bootstrap, max_request_size=FETCH_BYTES
        )
        await producer.start()
        try:
            await producer.send_and_wait(
                stack.settings.topics.state_snapshots,
                bytes(damaged),
                key=rid.encode(),
                partition=partition_of(rid, stack.settings.partitions),
            )
        finally:
            await producer.stop()

        replica = elsewhere(stack, tmp_path / "replica")
        with capture_logs() as logs:
            await replica.start_query()
            await fresh_at(replica, repo.root, head)
        try:
            refused = [e for e in logs if e["event"] == "state_snapshot_rejected"]
            assert [(e["source"], e["repo"], e["seq"], e["reason"]) for e in refused] == [
                ("topic", rid, covered, "checksum")
            ]
            assert "read_side_state_loaded" not in [e["event"] for e in logs]
            assert replica.model is not None
            assert replica.model.deltas_applied == stack.model.repos[rid].state.seq
            assert content_of(replica, rid) == content_of(stack, rid)
            await answer_alike(replica, stack, rid)
        finally:
            await replica.close()


async def test_a_worker_on_another_machine_starts_from_the_topic(broker, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    async with running_stack(
        broker.bootstrap, tmp_path / "main", snapshots_on_broker=True
    ) as stack:
        await stack.start_sources([repo.root])
        rid = await fresh_at(stack, repo.root, repo.head())
        assert stack.model is not None
        covered = await published(stack, rid, stack.model.repos[rid].state.seq)
        await stack.stop("worker")
        other = elsewhere(stack, tmp_path / "other-worker")
        with capture_logs() as logs:
            await other.start_worker()
            head = await edited(stack, repo, rid, 1)
        try:
            restored = [e for e in logs if e["event"] == "index_restored_from_snapshot"]
            assert [(e["repo"], e["seq"]) for e in restored] == [(rid, covered)]
            assert "state_snapshot_rejected" not in [e["event"] for e in logs]
            # It seeks to the snapshot's own delta: the one message it fetches (issue 16).
            reads = [e for e in logs if e["event"] == "partition_read_from_snapshots"]
            assert [e["fetched"] for e in reads] == [1]
            assert "partition_read_after_snapshots" not in [e["event"] for e in logs]
            # Its first change is published from the state it restored.
            await published(stack, rid, stack.model.repos[rid].state.seq)
            assert stack.model.repos[rid].state.indexed_commit == head
        finally:
            await other.close()
        await asyncio.sleep(0)


async def test_a_worker_publishes_an_idle_repository_it_is_assigned(broker, tmp_path: Path) -> None:
    """A repository indexed before snapshots went to the broker, and never edited since:
    the worker assigned its partition restores it at once and publishes it, with no
    event (what a finite retention of graph-deltas waits for)."""
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    async with running_stack(
        broker.bootstrap, tmp_path / "main", snapshots_on_broker=False
    ) as stack:
        await stack.start_sources([repo.root])
        rid = await fresh_at(stack, repo.root, repo.head())
        assert stack.model is not None
        seq = stack.model.repos[rid].state.seq
        await stack.stop("sources")
        await stack.stop("worker")
        topic = state_topic(stack.settings, stack.cluster)
        assert rid not in await topic.latest(range(stack.settings.partitions))
        other = Stack(
            stack.settings.model_copy(
                update={"data_dir": tmp_path / "other-worker", "snapshots_on_broker": True}
            ),
            stack.cluster,
        )
        with capture_logs() as logs:
            await other.start_worker()
            try:
                assert await published(stack, rid, seq) == seq
            finally:
                await other.close()
        restored = [e for e in logs if e["event"] == "partition_restored"]
        assert [
            e["repos"]
            for e in restored
            if e["partition"] == partition_of(rid, stack.settings.partitions)
        ] == [1]
        assert "event_indexed" not in [e["event"] for e in logs]
