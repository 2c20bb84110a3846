"""The broker-reset rule: which observations mean the broker lost our data."""

from __future__ import annotations

import asyncio

from deploy.broker_watch import Baseline, BrokerReset, BrokerWatch, ClusterView, advance, compare

T = "g.file-events.v1"
U = "g.sources.v1"


def view(
    cluster_id: str | None = "c1",
    partitions: dict[str, int] | None = None,
    ends: dict[tuple[str, int], int] | None = None,
    missing: frozenset[str] = frozenset(),
) -> ClusterView:
    return ClusterView(cluster_id, partitions or {T: 2, U: 2}, ends or {}, missing)


def baseline_after(*views: ClusterView) -> Baseline:
    baseline = None
    for seen in views:
        baseline = advance(baseline, seen)
    assert baseline is not None
    return baseline


def test_no_baseline_is_never_a_reset() -> None:
    assert compare(None, view(missing=frozenset({T}))) is None


def test_the_same_broker_growing_is_no_reset() -> None:
    before = baseline_after(view(ends={(T, 0): 5, (T, 1): 0}))
    assert compare(before, view(ends={(T, 0): 7, (T, 1): 3})) is None


def test_a_new_cluster_id_is_a_reset() -> None:
    before = baseline_after(view(ends={(T, 0): 5}))
    assert compare(before, view(cluster_id="c2", ends={(T, 0): 9})) == (
        "cluster id changed from c1 to c2"
    )


def test_a_topic_gone_is_a_reset() -> None:
    before = baseline_after(view())
    seen = view(partitions={U: 2}, missing=frozenset({T}))
    assert compare(before, seen) == f"topic {T} is gone"


def test_a_topic_not_answered_for_is_no_reset() -> None:
    """A topic with another metadata error (a leader being elected) says nothing."""
    before = baseline_after(view())
    assert compare(before, view(partitions={U: 2})) is None


def test_a_topic_repartitioned_is_a_reset() -> None:
    before = baseline_after(view())
    assert compare(before, view(partitions={T: 4, U: 2})) == f"topic {T} has 4 partitions, had 2"


def test_an_end_offset_going_backwards_is_a_reset_under_the_same_cluster_id() -> None:
    before = baseline_after(view(ends={(T, 0): 5}), view(ends={(T, 0): 8, (T, 1): 2}))
    assert compare(before, view(ends={(T, 0): 8, (T, 1): 0})) == (
        f"{T}[1] ends at offset 0, was at 2"
    )


def test_a_topic_first_seen_later_joins_the_baseline() -> None:
    before = baseline_after(view(partitions={U: 2}, missing=frozenset({T})))
    assert compare(before, view(missing=frozenset({T}), partitions={U: 2})) is None
    after = advance(before, view(ends={(T, 0): 1}))
    assert dict(after.partitions) == {T: 2, U: 2}
    assert dict(after.high_offsets) == {(T, 0): 1}


def test_a_reset_starts_a_new_baseline_from_the_new_broker() -> None:
    watch = BrokerWatch("127.0.0.1:1", [T, U], clock=lambda: 100.0)
    assert watch.accept(view(ends={(T, 0): 5})) is None
    reset = watch.accept(view(cluster_id="c2", partitions={}, missing=frozenset({T, U})))
    assert isinstance(reset, BrokerReset)
    assert (reset.reason, reset.at, watch.epoch) == ("cluster id changed from c1 to c2", 100.0, 1)
    # The new broker without topics is the new baseline: its topics appearing is no reset.
    assert watch.accept(view(cluster_id="c2", ends={(T, 0): 0})) is None
    assert watch.epoch == 1


def test_next_reset_answers_a_reset_already_seen() -> None:
    watch = BrokerWatch("127.0.0.1:1", [T], clock=lambda: 0.0)
    watch.accept(view())
    watch.accept(view(cluster_id="c9"))

    async def first() -> str:
        return (await watch.next_reset(after=0)).reason

    assert asyncio.run(first()) == "cluster id changed from c1 to c9"


def test_the_reset_sentence_names_the_time_and_the_reason() -> None:
    reset = BrokerReset("topic x is gone", 0.0)
    text = reset.describe()
    assert text.startswith("the broker came back empty at ")
    assert text.endswith(" (topic x is gone); re-indexing")
