"""A producer session for one repository: stamps events with a sequence and sends them.

Scanning, watching and commit following build *drafts* (an event class and its fields);
the Source stamps each with the repository id, the producer session id, the next
sequence number and the emit time, sends them in order through an EventSink, and then
publishes a SourceStatus so that readers know exactly how much has been emitted.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from producers.events import EventBase, SourceStatus


@dataclass(frozen=True, slots=True)
class Draft:
    """An event before it is stamped: its class and every field but the stamp."""

    cls: type[EventBase]
    fields: Mapping[str, object]


class EventSink(Protocol):
    """Where a Source sends: a Kafka topic in production, a list in tests."""

    async def publish(self, events: Sequence[EventBase]) -> None:
        """Send in order and return once every event is acknowledged."""
        ...

    async def publish_status(self, status: SourceStatus) -> None: ...


@dataclass
class InMemorySink:
    """An EventSink that keeps everything: the test double of the Kafka sink."""

    events: list[EventBase] = field(default_factory=list)
    statuses: list[SourceStatus] = field(default_factory=list)

    async def publish(self, events: Sequence[EventBase]) -> None:
        self.events.extend(events)

    async def publish_status(self, status: SourceStatus) -> None:
        self.statuses.append(status)


def new_producer_id() -> str:
    """Unique per producer session: host, pid and a random part."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


class Source:
    """Stamps and sends the events of one repository; serializes concurrent emitters."""

    def __init__(
        self,
        repo: str,
        root: str,
        sink: EventSink,
        *,
        producer: str | None = None,
        heartbeat_s: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.repo = repo
        self.root = root
        self.producer = producer or new_producer_id()
        self.heartbeat_s = heartbeat_s
        self._sink = sink
        self._clock = clock
        self._lock = asyncio.Lock()
        self.last_seq = 0
        self.branch: str | None = None
        self.head_commit: str | None = None
        self.working_tree_dirty = False
        self.state: Literal["scanning", "watching", "stopped"] = "scanning"
        self._batch_first_seq = 1
        self._batch_started_at = clock()

    def observe(
        self,
        *,
        branch: str | None = None,
        head_commit: str | None = None,
        working_tree_dirty: bool | None = None,
        state: Literal["scanning", "watching", "stopped"] | None = None,
    ) -> None:
        """Record what the producer currently sees; sent with the next status."""
        if branch is not None:
            self.branch = branch
        if head_commit is not None:
            self.head_commit = head_commit
        if working_tree_dirty is not None:
            self.working_tree_dirty = working_tree_dirty
        if state is not None:
            self.state = state

    async def emit(self, drafts: Sequence[Draft]) -> list[EventBase]:
        """Stamp, send and report one batch; returns the events as sent."""
        if not drafts:
            return []
        async with self._lock:
            now = self._clock()
            events = [
                d.cls.model_validate(
                    {
                        "repo": self.repo,
                        "producer": self.producer,
                        "seq": self.last_seq + i,
                        "emitted_at": now,
                        **d.fields,
                    }
                )
                for i, d in enumerate(drafts, start=1)
            ]
            await self._sink.publish(events)
            self._batch_first_seq = self.last_seq + 1
            self._batch_started_at = now
            self.last_seq += len(events)
            await self._sink.publish_status(self.status(now))
            return events

    async def heartbeat(self) -> None:
        """An idle status: nothing new emitted, but the producer is alive."""
        async with self._lock:
            await self._sink.publish_status(self.status())

    def status(self, now: float | None = None) -> SourceStatus:
        now = self._clock() if now is None else now
        return SourceStatus(
            repo=self.repo,
            producer=self.producer,
            root=self.root,
            branch=self.branch,
            head_commit=self.head_commit,
            working_tree_dirty=self.working_tree_dirty,
            last_seq=self.last_seq,
            batch_first_seq=self._batch_first_seq,
            batch_started_at=self._batch_started_at,
            sent_at=now,
            heartbeat_s=self.heartbeat_s,
            state=self.state,
        )
