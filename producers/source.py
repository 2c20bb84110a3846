"""A producer session for one repository: stamps events with a sequence and sends them.

Scanning, watching and commit following build *drafts* (an event class and its fields);
the Source stamps each with the repository id, the producer session id, the next
sequence number, the emit time and the session's lease epoch, signs it with the
session's key (producers/signing.py), sends them in order through an EventSink, and then
publishes a SourceStatus so that readers know exactly how much has been emitted.

A session opens with ``claim()``: its LeaseClaimed is seq 1 and carries the session's
public key. Once fenced (``fence``: a greater lease owns the repository), a Source emits
nothing more; its statuses say ``fenced``.
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

import structlog

from producers.events import EventBase, LeaseClaimed, SourceStatus
from producers.lease import InMemoryLeaseWatch, Lease
from producers.signing import SessionKey

log = structlog.get_logger(__name__)

State = Literal["scanning", "watching", "stopped", "fenced"]


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

    def sign_substitutes(self, producer: str, sign: Callable[[EventBase], EventBase]) -> None:
        """How to sign, for session ``producer``, an event the sink sends in place of one
        the broker refused for good (producers/refusal.py): a substitute is a new event."""
        ...


@dataclass
class InMemorySink:
    """An EventSink that keeps everything: the test double of the Kafka sink. With
    ``leases``, every status is also shown to that watch, as the sources topic would."""

    events: list[EventBase] = field(default_factory=list)
    statuses: list[SourceStatus] = field(default_factory=list)
    leases: InMemoryLeaseWatch | None = None

    async def publish(self, events: Sequence[EventBase]) -> None:
        self.events.extend(events)

    async def publish_status(self, status: SourceStatus) -> None:
        self.statuses.append(status)
        if self.leases is not None:
            self.leases.observe(status)

    def sign_substitutes(self, producer: str, sign: Callable[[EventBase], EventBase]) -> None:
        """Nothing is ever refused here."""


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
        epoch: int = 1,
        key: SessionKey | None = None,
        host: str | None = None,
    ) -> None:
        if epoch < 1:
            raise ValueError(f"a lease epoch starts at 1, not {epoch}")
        self.repo = repo
        self.root = root
        self.producer = producer or new_producer_id()
        self.epoch = epoch
        self.key = key or SessionKey.generate()
        self.host = host or socket.gethostname()
        self.heartbeat_s = heartbeat_s
        self._sink = sink
        sink.sign_substitutes(self.producer, self.key.sign)
        self._clock = clock
        self._lock = asyncio.Lock()
        self.last_seq = 0
        self.branch: str | None = None
        self.head_commit: str | None = None
        self.working_tree_dirty = False
        self.state: State = "scanning"
        self.fenced_by: Lease | None = None
        self._batch_first_seq = 1
        self._batch_started_at = clock()
        self._started_at = self._batch_started_at

    @property
    def lease(self) -> Lease:
        return (self.epoch, self.producer)

    async def claim(self) -> LeaseClaimed:
        """Open the session: its LeaseClaimed, seq 1, signed by the session's own key."""
        if self.last_seq != 0:
            raise RuntimeError(f"{self.producer} has emitted already: a claim is seq 1")
        draft = Draft(
            LeaseClaimed,
            {
                "public_key": self.key.public_key,
                "host": self.host,
                "root": self.root,
                "started_at": self._started_at,
            },
        )
        (claim,) = await self.emit([draft])
        assert isinstance(claim, LeaseClaimed)
        return claim

    def fence(self, by: Lease) -> None:
        """A greater lease owns the repository now: emit nothing more, say ``fenced``."""
        self.fenced_by = by
        self.state = "fenced"

    def observe(
        self,
        *,
        branch: str | None = None,
        head_commit: str | None = None,
        working_tree_dirty: bool | None = None,
        state: State | None = None,
    ) -> None:
        """Record what the producer currently sees; sent with the next status (a fenced
        Source stays ``fenced``)."""
        if branch is not None:
            self.branch = branch
        if head_commit is not None:
            self.head_commit = head_commit
        if working_tree_dirty is not None:
            self.working_tree_dirty = working_tree_dirty
        if state is not None and self.fenced_by is None:
            self.state = state

    async def emit(self, drafts: Sequence[Draft]) -> list[EventBase]:
        """Stamp, sign, send and report one batch; returns the events as sent (none once
        the Source is fenced: the worker would refuse them)."""
        if not drafts:
            return []
        async with self._lock:
            if self.fenced_by is not None:
                log.debug("events_dropped_fenced", repo=self.repo, events=len(drafts))
                return []
            now = self._clock()
            events = [
                self.key.sign(
                    d.cls.model_validate(
                        {
                            "repo": self.repo,
                            "producer": self.producer,
                            "seq": self.last_seq + i,
                            "emitted_at": now,
                            "epoch": self.epoch,
                            "sig": "",
                            **d.fields,
                        }
                    )
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
            epoch=self.epoch,
        )
