"""Reading the neighborhoods topic back: the last snapshot of each repository.

A worker that takes over a partition continues its repositories' snapshots from the
last one published (warm start, stable ids, numbering), read from the same partition
number of the neighborhoods topic (keyed by repository like the graph deltas).
"""

from __future__ import annotations

from typing import Protocol

import structlog
from pydantic import ValidationError

from stores.delta_log import EndOffsets, read_values
from stores.neighborhoods import NeighborhoodSnapshot, decode_snapshot

log = structlog.get_logger(__name__)


class SnapshotLog(Protocol):
    async def latest(self, partition: int) -> dict[str, NeighborhoodSnapshot]:
        """The last snapshot of each repository of one partition."""
        ...


def keep_latest(latest: dict[str, NeighborhoodSnapshot], snapshot: NeighborhoodSnapshot) -> None:
    """Keep the higher-numbered of two snapshots of a repository (a resend is equal)."""
    old = latest.get(snapshot.repo)
    if old is None or snapshot.seq >= old.seq:
        latest[snapshot.repo] = snapshot


class InMemorySnapshotLog:
    """A SnapshotLog over lists: the test double of the Kafka reader."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[NeighborhoodSnapshot]] = {}

    def append(self, partition: int, snapshot: NeighborhoodSnapshot) -> None:
        self.partitions.setdefault(partition, []).append(snapshot)

    async def latest(self, partition: int) -> dict[str, NeighborhoodSnapshot]:
        found: dict[str, NeighborhoodSnapshot] = {}
        for snapshot in self.partitions.get(partition, []):
            keep_latest(found, snapshot)
        return found


class KafkaSnapshotLog:
    def __init__(self, bootstrap: str, topic: str, end_offsets: EndOffsets) -> None:
        self._bootstrap = bootstrap
        self._topic = topic
        self._end_offsets = end_offsets

    async def latest(self, partition: int) -> dict[str, NeighborhoodSnapshot]:
        found: dict[str, NeighborhoodSnapshot] = {}
        values = await read_values(self._bootstrap, self._topic, partition, self._end_offsets)
        for value in values:
            try:
                keep_latest(found, decode_snapshot(value))
            except ValidationError as exc:  # a foreign message: nothing to continue from
                log.error("snapshot_rejected", partition=partition, error=str(exc)[:500])
        return found
