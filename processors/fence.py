"""A worker generation that writes nothing once the broker came back empty.

When the broker loses our topics (deploy/broker_watch.py) the stopping generation still
holds sends: batches in its producer, retried while the topics are missing, and
publishes its pipeline, neighborhoods and keeper are about to make. Once the topics are
recreated those would land there: deltas and a state snapshot of the old history at the
head of the new one, which the next generation and every reader then disagree about
(the next worker continues the old snapshot, a reader refuses it as another history,
and the repository stays ``updating`` with a delta gap).

`Fence` closes that door at the moment the reset is seen, before the generation is
told to stop: the producer's pending and in-flight batches are failed instead of
delivered (`abort_pending`), every publish from then on waits until the generation
is cancelled (`Fence.hold`), and its consumer commits no offset again
(`refuse_commits`): nothing it handles is acknowledged, committed or dead-lettered, so
the next generation handles it again on the recreated topics.

The commits matter as much as the sends. Apache Kafka comes back on the same address
with the same cluster id, so the stopping generation's consumer rejoins its group on the
new broker and may be handed the partitions again before it stops. Handling the
rescan's events there publishes nothing (the files are unchanged for its index), so
faust acknowledges and commits them; the next generation then starts past them and
never indexes the repository on the new topics.

And the group itself: a stopping generation whose consumer stays a member of the group
on the new broker keeps the partitions it is handed there, and handles nothing of
them (its agents wait at the fence), so a repository keyed on one of them is never
indexed by the next generation. Its stop can hang exactly then (faust's revocation
waits for an agent that waits at the fence), and the generation is abandoned with its
consumer still heartbeating. So the fence also makes the consumer leave its group at
once (`leave_group`), whatever its own tasks are waiting for.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

log = structlog.get_logger(__name__)


class WriterFenced(Exception):
    """A send failed because its generation was fenced (the broker came back empty)."""


class Fence:
    """Open until `close`; then `hold` waits for good (until its task is cancelled)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._never = asyncio.Event()

    @property
    def closed(self) -> bool:
        return self.reason is not None

    def close(self, reason: str, producer: Any = None) -> asyncio.Task[None] | None:
        """Fence from now on; given the app's producer (faust's), abort its sends. The
        task that finishes the abort (None when there is nothing to abort)."""
        if self.reason is not None:
            return None
        self.reason = reason
        log.warning("worker_writes_fenced", reason=reason)
        return abort_pending(producer, reason) if producer is not None else None

    async def hold(self) -> None:
        """Return at once while open; once closed, never (the caller's task is cancelled
        when its generation stops)."""
        if self.reason is not None:
            await self._never.wait()


def refuse_commits(consumer: Any, reason: str) -> None:
    """Make faust's ``consumer`` commit no offset from now on.

    Every commit faust makes (the periodic one, on a rebalance, on stop) goes through
    the consumer's ``_commit(offsets) -> bool`` (faust-streaming 0.15: `Consumer._commit_offsets`),
    which is replaced by one that refuses: faust then records nothing as committed on
    the broker, and the group's offsets stay those the next generation commits. A commit
    already inside aiokafka's retry loop is failed at its next try (its client's
    coordinator's ``_do_commit_offsets``)."""

    async def refused(offsets: Any) -> bool:
        log.info("worker_commit_fenced", partitions=len(offsets), reason=reason)
        return False

    consumer._commit = refused
    coordinator = _coordinator_of(consumer)
    if coordinator is not None:
        # A commit made before the fence may still be inside aiokafka's retry loop:
        # refused while the topics are missing (UnknownTopicOrPartition is retriable),
        # it would land once they are recreated, its old offsets then the group's on the
        # new topics, and the next generation would start past the rescan. Each retry
        # calls ``_do_commit_offsets``: from now on that fails for good.
        async def never(assignment: Any, offsets: Any) -> None:
            raise WriterFenced(reason)

        coordinator._do_commit_offsets = never


def _coordinator_of(consumer: Any) -> Any:
    """The group coordinator of faust's ``consumer``'s aiokafka client, if it has one."""
    thread = getattr(consumer, "_thread", None)
    client = getattr(thread, "_consumer", None)
    coordinator = getattr(client, "_coordinator", None)
    return coordinator if hasattr(coordinator, "_closing") else None


def leave_group(consumer: Any, reason: str) -> asyncio.Future[None] | None:
    """Make faust's ``consumer`` leave its consumer group now and never join it again.

    faust runs its aiokafka consumer in a thread of its own (faust-streaming 0.15:
    ``AIOKafkaConsumerThread``, its client ``_consumer``, its loop ``thread_loop``). On
    that loop the client's group coordinator is closed the way ``close`` does it, with
    one difference: its coordination task is cancelled instead of awaited, since it may
    be inside a rebalance faust will not finish. Heartbeats stop, a LeaveGroup is sent
    (at most once: the broker rebalances the group at once; if it fails, the member is
    dropped after one session timeout) and nothing rejoins. A later ``stop`` of the
    consumer finds the coordinator closed and returns. The future of that work, on this
    loop (None when the consumer has no client or group yet)."""
    coordinator = _coordinator_of(consumer)
    if coordinator is None:
        return None  # not started, or no group (a consumer without a group id)
    thread: Any = consumer._thread

    async def leave() -> None:
        if coordinator._closing.done():
            return
        coordinator._closing.set_result(None)
        coordinator._coordination_task.cancel()
        await coordinator._stop_heartbeat_task()
        await coordinator._stop_commit_offsets_refresh_task()
        await coordinator._maybe_leave_group()
        log.info("worker_left_group", reason=reason)

    done = asyncio.run_coroutine_threadsafe(leave(), thread.thread_loop)
    return asyncio.wrap_future(done)


def abort_pending(producer: Any, reason: str) -> asyncio.Task[None] | None:
    """Fail every batch faust's ``producer`` has not delivered, and deliver no more.

    aiokafka has no public abort: ``stop`` delivers what is pending first, the very
    thing to prevent. So its sender task is cancelled (it then only awaits the requests
    already on the wire, one round trip each, and puts back those refused for a retry),
    and its accumulator fails the batches it holds before and after that; a failed
    accumulator also refuses every later send. Checked against aiokafka 0.14
    (tests/integration/test_writer_fence.py exercises it on both brokers)."""
    client = getattr(producer, "_producer", None)  # faust's aiokafka driver keeps it here
    if client is None:
        return None
    sender, batches = client._sender, client._message_accumulator
    task = sender.sender_task
    if task is not None and not task.done():
        task.cancel()  # first: a failed batch left in the accumulator would still be sent
    error = WriterFenced(reason)
    batches.fail_all(error)

    async def finish() -> None:
        try:
            await sender.close()
        except Exception as exc:  # the cancelled sender's last requests failing
            log.info("fenced_sender_closed_with_error", error=repr(exc))
        batches.fail_all(error)  # those put back by a retry meanwhile

    return asyncio.ensure_future(finish())
