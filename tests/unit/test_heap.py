"""A large index is frozen out of the collector's way after a scan or a restore; a
small one is left alone."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from processors.indexer import RepoIndex
from stores.heap import HeapSettler, settle
from tests.factories import Stamp, graph_delta, tiny_parse


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the test session collects as usual


class Cycle:
    def __init__(self) -> None:
        self.me = self


def test_settle_freezes_what_is_tracked_out_of_later_collections() -> None:
    alive = [Cycle()]
    seconds, frozen = settle()
    assert seconds >= 0 and frozen == gc.get_freeze_count() > 0
    assert not any(type(o) is Cycle for o in gc.get_objects())  # frozen: not walked
    dead = Cycle()  # allocated after: collected as usual
    del dead
    assert gc.collect() >= 1
    gc.unfreeze()
    assert sum(type(o) is Cycle for o in gc.get_objects()) == len(alive) == 1


def scan(files: int) -> list:  # type: ignore[type-arg]
    stamp = Stamp()
    index = RepoIndex("app-1", parse=tiny_parse)
    events = [
        stamp.claim(),
        *(
            stamp.changed(f"m{i}.py", f"import m{i + 1}\ndef f\n", origin="scan")
            for i in range(files)
        ),
        stamp.scan_completed("c1"),
    ]
    return [index.handle(e, now=1.0) for e in events]


def test_a_scan_bringing_enough_records_settles_the_heap_at_its_barrier() -> None:
    deltas = scan(30)
    settler = HeapSettler(threshold=sum(d.changes for d in deltas))
    settler.observed(deltas[:-1])  # the scan's files: no barrier yet
    assert settler.settled == 0 and gc.get_freeze_count() == 0
    settler.observed(deltas[-1:])
    assert settler.settled == 1 and gc.get_freeze_count() > 0


def test_the_scans_files_count_with_a_barrier_of_few_records() -> None:
    deltas = scan(30)
    barrier = deltas[-1]
    settler = HeapSettler(threshold=barrier.changes + 1)  # more than the barrier alone
    settler.observed(deltas)
    assert settler.settled == 1


def test_a_small_scan_or_deltas_without_a_barrier_leave_the_heap_alone() -> None:
    deltas = scan(3)
    settler = HeapSettler(threshold=sum(d.changes for d in deltas) + 100)
    settler.observed(deltas)
    settler.observed([graph_delta("app-1", 9, files_removed=tuple(f"x{i}" for i in range(99)))])
    assert settler.settled == 0 and gc.get_freeze_count() == 0


def test_a_restore_of_enough_records_settles_the_heap() -> None:
    deltas = scan(30)
    restored = RepoIndex.restore("app-1", deltas, parse=tiny_parse)
    records = len(restored.state.edges) + len(restored.state.nodes) + len(restored.state.files)
    asyncio.run(HeapSettler(threshold=records + 1).restored(0, [restored.state]))
    assert gc.get_freeze_count() == 0
    settler = HeapSettler(threshold=records)
    asyncio.run(settler.restored(0, [restored.state]))
    assert settler.settled == 1 and gc.get_freeze_count() > 0
