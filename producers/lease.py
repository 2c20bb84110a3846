"""Leases: which producer session owns a repository, and how a fenced one learns it.

A lease is the pair ``(epoch, producer)``, compared as a tuple: the greater epoch wins,
and of two sessions that chose the same epoch (started at once), the greater producer
id wins, the same way everywhere. A producer picks as its epoch one more than the
largest it knows for the repository (the materialized state's lease and the epochs of
the statuses it has read), claims it (``LeaseClaimed``), and then follows the sources
topic through a ``LeaseWatch``: a status of its repository with a greater lease means
another session owns it now, and the producer stops (the worker already refuses its
events as fenced).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from producers.events import SourceStatus

Lease = tuple[int, str]
"""``(epoch, producer)``: ordered as a tuple."""


def lease_of(status: SourceStatus) -> Lease:
    return (status.epoch, status.producer)


def next_epoch(known: int) -> int:
    """The epoch a new session claims: one more than the largest known (from 1)."""
    return max(known, 0) + 1


class LeaseWatch(Protocol):
    """Where a producer learns that its lease was taken over: the sources topic."""

    async def fenced(self, repo: str, lease: Lease) -> SourceStatus:
        """Return the first status of ``repo`` (seen from now on) of a greater lease."""
        ...


@dataclass
class InMemoryLeaseWatch:
    """A LeaseWatch fed by hand (``observe``): the test double, and the core of the
    Kafka adapter, which observes every status it consumes."""

    _waiters: list[tuple[str, Lease, asyncio.Future[SourceStatus]]] = field(default_factory=list)
    seen: int = 0

    def observe(self, status: SourceStatus) -> None:
        """A status from the topic: it wakes every waiter whose lease it fences."""
        self.seen += 1
        kept = []
        for repo, lease, waiter in self._waiters:
            if waiter.done():
                continue
            if repo == status.repo and lease_of(status) > lease:
                waiter.set_result(status)
            else:
                kept.append((repo, lease, waiter))
        self._waiters = kept

    async def fenced(self, repo: str, lease: Lease) -> SourceStatus:
        waiter: asyncio.Future[SourceStatus] = asyncio.get_running_loop().create_future()
        self._waiters.append((repo, lease, waiter))
        return await waiter


class NoLeaseWatch:
    """A LeaseWatch that never fences: a producer on its own (unit tests of a session)."""

    async def fenced(self, repo: str, lease: Lease) -> SourceStatus:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


KnownEpoch = Callable[[str], int]
"""The largest epoch known for a repository (0 when none)."""

__all__ = [
    "InMemoryLeaseWatch",
    "KnownEpoch",
    "Lease",
    "LeaseWatch",
    "NoLeaseWatch",
    "lease_of",
    "next_epoch",
]
