"""Tell when the broker lost our data: restarted empty, topics recreated or repartitioned.

A Kafka-protocol broker that comes back without its log (Tansu is memory-only; a Kafka
node whose storage was formatted again) looks, to every client, like a broker that was
away for a while: producers resend into new topics, consumers' positions point past
the new log ends, and the read side keeps the state of a log that no longer exists.
`BrokerWatch` polls what identifies the cluster's data and says when it changed:

- the cluster id (Tansu gets a new one per start, `deploy.embedded_broker`);
- whether each of our topics exists, and its partition count;
- each partition's end offset, which never goes backwards on a broker that kept its
  log (a broker restarted with the same cluster id and empty storage is caught here).

The comparison is pure (`compare`, `advance`: values in, values out); the poll is a
thin aiokafka adapter (`observe`). Every part of one process shares one watch through
`Cluster.watch` (`deploy.runtime`), and each waits for the next reset with
`BrokerWatch.next_reset(after=epoch)`.

End offsets come from ListOffsets. On Tansu those are the last batch's base offset + 1
(`deploy.tansu_quirks` bug (b)), short of the high watermark but just as monotonic
while the log lives, and back to 0 when it is gone: enough for this rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import structlog
from aiokafka import AIOKafkaClient
from aiokafka.errors import KafkaError
from aiokafka.protocol.metadata import MetadataRequest
from aiokafka.protocol.offset import OffsetRequest

log = structlog.get_logger(__name__)

POLL_S = 2.0
"""How often the broker is asked: a reset is noticed within this (plus one request)."""

_EMPTY: Mapping[Any, Any] = MappingProxyType({})
_UNKNOWN_TOPIC = 3  # UNKNOWN_TOPIC_OR_PARTITION


# ------------------------------------------------------------------ pure core


@dataclass(frozen=True, slots=True)
class ClusterView:
    """One poll's answer: the cluster id, our topics' partition counts (a missing topic
    is absent) and the end offset of each of their partitions."""

    cluster_id: str | None
    partitions: Mapping[str, int] = field(default_factory=lambda: _EMPTY)
    end_offsets: Mapping[tuple[str, int], int] = field(default_factory=lambda: _EMPTY)
    missing: frozenset[str] = frozenset()  # the broker said: no such topic


@dataclass(frozen=True, slots=True)
class Baseline:
    """What this broker has shown since the last reset: its id, the topics seen and
    their partition counts, and the highest end offset seen per partition."""

    cluster_id: str | None
    partitions: Mapping[str, int]
    high_offsets: Mapping[tuple[str, int], int]


class BrokerReset(Exception):
    """The broker's data is not the data this process built on; ``reason`` says how."""

    def __init__(self, reason: str, at: float) -> None:
        super().__init__(reason)
        self.reason = reason
        self.at = at

    def describe(self) -> str:
        """The sentence readers are given while the state is rebuilt."""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at))
        return f"the broker came back empty at {when} ({self.reason}); re-indexing"


def compare(baseline: Baseline | None, seen: ClusterView) -> str | None:
    """Why ``seen`` cannot be the broker of ``baseline`` (None: it can).

    A topic never seen is no reset (it may not be created yet); a topic seen and now
    gone, repartitioned, or whose end offset went backwards, is. So is a new cluster id.
    """
    if baseline is None:
        return None
    if baseline.cluster_id and seen.cluster_id and seen.cluster_id != baseline.cluster_id:
        return f"cluster id changed from {baseline.cluster_id} to {seen.cluster_id}"
    for topic in sorted(baseline.partitions):
        had = baseline.partitions[topic]
        now = seen.partitions.get(topic)
        if topic in seen.missing:
            return f"topic {topic} is gone"
        if now is not None and now != had:
            return f"topic {topic} has {now} partitions, had {had}"
    for (topic, partition), high in sorted(baseline.high_offsets.items()):
        end = seen.end_offsets.get((topic, partition))
        if end is not None and end < high:
            return f"{topic}[{partition}] ends at offset {end}, was at {high}"
    return None


def advance(baseline: Baseline | None, seen: ClusterView) -> Baseline:
    """The baseline after ``seen`` was accepted: topics added, offsets' highs raised."""
    partitions = dict(baseline.partitions) if baseline else {}
    partitions.update(seen.partitions)
    highs = dict(baseline.high_offsets) if baseline else {}
    for key, end in seen.end_offsets.items():
        highs[key] = max(end, highs.get(key, 0))
    cluster_id = seen.cluster_id or (baseline.cluster_id if baseline else None)
    return Baseline(cluster_id, MappingProxyType(partitions), MappingProxyType(highs))


# ------------------------------------------------------------- aiokafka adapter


async def observe(bootstrap: str, topics: Iterable[str], timeout_ms: int = 5000) -> ClusterView:
    """Ask the broker for its cluster id, our topics and their end offsets.

    The metadata request says ``allow_auto_topic_creation=False``: asking must not
    create a missing topic (both Tansu and Kafka would, with their default count).
    Raises `KafkaError` (or OSError) when the broker does not answer.
    """
    names = sorted(topics)
    client = AIOKafkaClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout_ms)
    try:
        await client.bootstrap()
        node = client.get_random_node()
        metadata = await client.send(node, MetadataRequest(names, allow_auto_topic_creation=False))
        answer = metadata.to_object()
        partitions: dict[str, int] = {}
        missing = set()
        by_leader: dict[int, dict[str, list[tuple[int, int]]]] = {}
        for topic in answer["topics"]:
            if topic["error_code"] == _UNKNOWN_TOPIC:
                missing.add(topic["topic"])
            if topic["error_code"] != 0 or not topic["partitions"]:
                continue  # another error (a leader being elected): no answer, no reset
            partitions[topic["topic"]] = len(topic["partitions"])
            for part in topic["partitions"]:
                if part["leader"] >= 0:
                    by_leader.setdefault(part["leader"], {}).setdefault(topic["topic"], []).append(
                        (part["partition"], -1)
                    )
        ends: dict[tuple[str, int], int] = {}
        for leader, wanted in sorted(by_leader.items()):
            response = await client.send(leader, OffsetRequest(-1, 0, sorted(wanted.items())))
            for topic_name, answers in response.topics:
                for partition, error_code, *info in answers:
                    if error_code == 0 and len(info) >= 2:  # v1+: timestamp, offset, ...
                        ends[(topic_name, partition)] = int(info[1])
        return ClusterView(answer.get("cluster_id"), partitions, ends, frozenset(missing))
    finally:
        await client.close()


class BrokerWatch:
    """Polls the broker every ``every_s`` while some part watches; counts resets.

    ``epoch`` is the number of resets seen; a part remembers it when it (re)starts and
    awaits ``next_reset(after=epoch)``. The polling runs while at least one part is
    inside ``watching()``, so that a process with nothing running polls nothing.
    """

    def __init__(
        self,
        bootstrap: str,
        topics: Iterable[str],
        *,
        every_s: float = POLL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._bootstrap = bootstrap
        self._topics = tuple(sorted(topics))
        self._every_s = every_s
        self._clock = clock
        self.baseline: Baseline | None = None
        self.resets: list[BrokerReset] = []
        self._changed = asyncio.Condition()
        self._watchers = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def epoch(self) -> int:
        return len(self.resets)

    async def prime(self) -> None:
        """Take the baseline now (at connect), so that a reset before the first poll
        is still measured against what the parts started on."""
        self.accept(await observe(self._bootstrap, self._topics))

    def accept(self, seen: ClusterView) -> BrokerReset | None:
        """Compare one observation; a reset is recorded and returned, and the new
        broker's answer becomes the baseline."""
        reason = compare(self.baseline, seen)
        if reason is None:
            self.baseline = advance(self.baseline, seen)
            return None
        reset = BrokerReset(reason, self._clock())
        self.resets.append(reset)
        self.baseline = advance(None, seen)
        return reset

    async def next_reset(self, after: int) -> BrokerReset:
        """The first reset after the ``after``-th (at once if it already happened)."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.epoch > after)
        return self.resets[after]

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[BrokerWatch]:
        self._watchers += 1
        if self._task is None:
            self._task = asyncio.create_task(self._poll(), name="broker-watch")
        try:
            yield self
        finally:
            self._watchers -= 1
            if self._watchers == 0 and self._task is not None:
                task, self._task = self._task, None
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _poll(self) -> None:
        away = False
        while True:
            try:
                seen = await observe(self._bootstrap, self._topics)
            except (KafkaError, OSError, TimeoutError) as exc:
                if not away:
                    log.warning("broker_unreachable", bootstrap=self._bootstrap, error=repr(exc))
                away = True
                await asyncio.sleep(min(1.0, self._every_s))
                continue
            if away:
                log.info("broker_reachable", bootstrap=self._bootstrap)
            away = False
            reset = self.accept(seen)
            if reset is not None:
                log.warning("broker_reset_seen", reason=reset.reason, epoch=self.epoch)
                async with self._changed:
                    self._changed.notify_all()
            await asyncio.sleep(self._every_s)
