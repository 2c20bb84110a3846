"""Keeping a large index out of the cyclic garbage collector's way.

A repository's index is millions of long-lived objects (sympy's: 2.3 million tracked
ones). A full collection walks all of them: 1.1-1.3 s on sympy, a pause that lands on
whatever edit or query happens to trigger it. Once a large batch of objects has arrived
(a scan's barrier, a partition restored), `settle` freezes every tracked object
(`gc.freeze`, which moves them aside at no cost): later collections walk only what was
allocated since, and a full collection right after takes under a millisecond. Frozen
objects are still freed when their last reference goes; only a cycle among them would
outlive its use, and the index holds records, tuples, dicts and sets, not cycles. No
collection runs first: it would cost as much as the pause avoided (0.4 s for django's
index), at the end of a scan, for the little cyclic garbage there is then (a collection
right after a sympy build found 10 objects), which stays.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable, Sequence

import structlog

from stores.deltas import GraphDelta
from stores.metrics import HEAP_SETTLED
from stores.repo_state import RepoState

log = structlog.get_logger(__name__)

SETTLE_AFTER_CHANGES = 10_000
"""Records a barrier or a restore must bring before the heap is settled: a small
repository's heap is no burden to walk, and a collection costs a pass over it."""


def settle(side: str = "worker") -> tuple[float, int]:
    """Freeze every tracked object; returns the seconds it took and how many objects are
    frozen now. ``side``: the metric's label."""
    started = time.perf_counter()
    gc.freeze()
    HEAP_SETTLED.labels(side).inc()
    return time.perf_counter() - started, gc.get_freeze_count()


class HeapSettler:
    """A DeltaObserver (processors.pipeline) that settles the heap after a restore that
    brought at least ``threshold`` records, or at a scan's barrier once the deltas since
    the last settling changed that many (the scan's files with its barrier: a scan whose
    files resolve to few edges still brings their nodes and records), as the query
    service's materializer counts."""

    def __init__(self, threshold: int = SETTLE_AFTER_CHANGES) -> None:
        self.threshold = threshold
        self.settled = 0
        self._unsettled = 0  # records changed since the heap was last settled

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        records = sum(len(s.edges) + len(s.nodes) + len(s.files) for s in states)
        if records >= self.threshold:
            self._settle("restored", records)

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        self._unsettled += sum(d.changes for d in deltas)
        barrier = any(d.barrier == "scan_completed" for d in deltas)
        if barrier and self._unsettled >= self.threshold:
            self._settle("scan_completed", self._unsettled)

    def forget(self, repos: Iterable[str]) -> None:
        """Nothing to forget: what another worker now owns is freed with its index."""

    def _settle(self, after: str, records: int) -> None:
        seconds, frozen = settle()
        self.settled, self._unsettled = self.settled + 1, 0
        log.info("heap_settled", after=after, records=records, seconds=seconds, frozen=frozen)
