"""Token buckets, one per caller: how many requests a caller may make, and when next.

A bucket holds up to ``burst`` tokens and gains ``per_s`` a second; a request takes
one. So a caller may send ``burst`` requests at once, then ``per_s`` a second for as
long as it likes; a request finding less than one token is refused, told how long
until there is one (`Buckets.take`). Pure: the time is passed in.

Memory is bounded: a bucket that has refilled to ``burst`` is the same as no bucket,
so idle ones are dropped as they come to the front of the least-recently-used order,
and past ``max_keys`` the least recently used is dropped whatever it holds (it forgets
that caller's debt: at worst one more burst).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

MAX_KEYS = 10_000
"""Callers remembered at most: a few hundred kilobytes of buckets."""


@dataclass(frozen=True, slots=True)
class Rate:
    """``per_s`` requests a second on average, ``burst`` at once."""

    per_s: float
    burst: int

    def __post_init__(self) -> None:
        if not self.per_s > 0 or self.burst < 1:
            raise ValueError(f"a rate needs per_s > 0 and burst >= 1, not {self}")

    def describe(self) -> str:
        return f"{self.per_s:g} requests/s, burst {self.burst}"


@dataclass(slots=True)
class TokenBucket:
    """``tokens`` as they were at time ``at``."""

    tokens: float
    at: float

    def level(self, rate: Rate, now: float) -> float:
        """The tokens at ``now`` (a clock going back adds none)."""
        return min(float(rate.burst), self.tokens + max(0.0, now - self.at) * rate.per_s)

    def take(self, rate: Rate, now: float) -> float:
        """Take one token: 0.0 when taken, else the seconds until one is there (and
        nothing is taken: a refused request costs nothing)."""
        tokens = self.level(rate, now)
        self.at = max(self.at, now)
        if tokens >= 1.0:
            self.tokens = tokens - 1.0
            return 0.0
        self.tokens = tokens
        return (1.0 - tokens) / rate.per_s


class Buckets:
    """One `TokenBucket` per key, at most ``max_keys`` of them."""

    def __init__(self, rate: Rate, max_keys: int = MAX_KEYS) -> None:
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1, not {max_keys}")
        self.rate = rate
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, key: str, now: float) -> float:
        """`TokenBucket.take` of ``key``'s bucket (a new key starts full)."""
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = TokenBucket(float(self.rate.burst), now)
        else:
            self._buckets.move_to_end(key)
        wait = bucket.take(self.rate, now)
        self._evict(now)
        return wait

    def _evict(self, now: float) -> None:
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            full = oldest.level(self.rate, now) >= self.rate.burst
            if not full and len(self._buckets) <= self.max_keys:
                return
            del self._buckets[key]


def retry_after_s(wait_s: float) -> int:
    """``Retry-After``'s whole seconds for a wait: rounded up (a client that waits as
    told finds a token), at least 1. The nanosecond of slack keeps a float's error in
    ``(1 - tokens) / per_s`` from adding a second."""
    return max(1, math.ceil(wait_s - 1e-9))
