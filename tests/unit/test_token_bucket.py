"""Token buckets: exact admissions, waits and ``Retry-After`` seconds on a given clock,
and memory that stays bounded."""

from __future__ import annotations

import pytest

from query.token_bucket import Buckets, Rate, TokenBucket, retry_after_s

RATE = Rate(per_s=2.0, burst=3)


def test_a_burst_then_the_rate() -> None:
    buckets = Buckets(RATE)
    # Three at once (the burst), the fourth waits half a second for its token.
    assert [buckets.take("a", 100.0) for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]
    assert buckets.take("a", 100.25) == 0.25  # a quarter of a second later: half a token
    assert buckets.take("a", 100.5) == 0.0  # its token has come
    assert buckets.take("a", 100.5) == 0.5


def test_a_refused_request_costs_nothing() -> None:
    bucket = TokenBucket(tokens=0.0, at=0.0)
    assert [bucket.take(RATE, 0.1) for _ in range(3)] == pytest.approx([0.4, 0.4, 0.4])
    assert bucket.take(RATE, 0.5) == 0.0


def test_a_bucket_refills_to_its_burst_and_no_further() -> None:
    bucket = TokenBucket(tokens=0.0, at=0.0)
    assert bucket.level(RATE, 1.0) == 2.0
    assert bucket.level(RATE, 3600.0) == 3.0


def test_a_clock_going_back_adds_no_tokens() -> None:
    bucket = TokenBucket(tokens=0.5, at=10.0)
    assert bucket.take(RATE, 9.0) == 0.25
    assert bucket.take(RATE, 10.25) == 0.0


def test_callers_are_counted_apart() -> None:
    buckets = Buckets(Rate(per_s=1.0, burst=1))
    assert buckets.take("token:ci", 0.0) == 0.0
    assert buckets.take("token:ci", 0.0) == 1.0
    assert buckets.take("client:10.0.0.7", 0.0) == 0.0


@pytest.mark.parametrize(
    ("wait", "seconds"),
    [(0.001, 1), (0.5, 1), (1.0, 1), (1.0 + 1e-12, 1), (1.01, 2), (2.5, 3), (59.0, 59)],
)
def test_retry_after_is_the_wait_rounded_up(wait: float, seconds: int) -> None:
    assert retry_after_s(wait) == seconds


def test_retry_after_of_a_slow_rate() -> None:
    buckets = Buckets(Rate(per_s=0.1, burst=1))  # one request every ten seconds
    buckets.take("a", 0.0)
    assert retry_after_s(buckets.take("a", 0.0)) == 10
    assert retry_after_s(buckets.take("a", 7.5)) == 3


def test_idle_callers_are_forgotten() -> None:
    buckets = Buckets(RATE)
    for key in ("a", "b", "c"):
        buckets.take(key, 0.0)
    assert len(buckets) == 3
    # Half a second on, a, b and c are full again (2/s from 2 tokens): the same as none.
    buckets.take("d", 0.5)
    assert len(buckets) == 1


def test_no_more_than_max_keys_are_kept() -> None:
    buckets = Buckets(RATE, max_keys=2)
    for key in ("a", "b", "c"):
        buckets.take(key, 0.0)
        buckets.take(key, 0.0)
        buckets.take(key, 0.0)
    assert len(buckets) == 2
    # "a", least recently used, was dropped: it starts over with a full burst.
    assert [buckets.take("a", 0.0) for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]
    assert buckets.take("c", 0.0) == 0.5  # c, kept, is still empty


def test_a_rate_is_positive() -> None:
    with pytest.raises(ValueError, match="per_s > 0"):
        Rate(per_s=0.0, burst=1)
    with pytest.raises(ValueError, match="burst >= 1"):
        Rate(per_s=1.0, burst=0)
