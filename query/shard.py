"""Which partitions a query replica serves (issue 18): its shard.

Every topic a replica reads is keyed by repository, on the partition the producers'
default partitioner gives the repository's key, and every topic has the same number of
partitions (`producers.topics.Topics.specs`). So a set of partition numbers names a set
of repositories on every topic alike, and a replica that reads only those partitions
holds, and answers for, only those repositories. Replicas of one shard are
interchangeable. The ranking profiles and the access tokens are the exceptions: keyed
by scope (a repository, or ``*`` for all) and by token, every replica reads all of them.

``--partitions 0-3,8`` names the partitions; ``--shard 1/4`` the shard of index 1 in 4,
the partitions ``p`` with ``p % 4 == 1``. None of either: every partition. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Shard:
    """The partitions served: ``partitions`` named outright, or the ``index`` of
    ``count`` shards (partition ``p`` is shard ``p % count``'s)."""

    partitions: frozenset[int] | None = None
    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index}/{self.count}: the index must be in 0..count-1")
        if self.partitions is not None and not self.partitions:
            raise ValueError("a shard of no partitions serves nothing")
        if self.partitions is not None and self.count != 1:
            raise ValueError("a shard is named by its partitions or by index/count, not both")

    @property
    def whole(self) -> bool:
        """Every partition (no ``--partitions``, no ``--shard``)."""
        return self.partitions is None and self.count == 1

    def owns(self, partition: int) -> bool:
        if self.partitions is not None:
            return partition in self.partitions
        return partition % self.count == self.index

    def of(self, partitions: int) -> list[int]:
        """The partitions served of a topic of ``partitions``; refuses a named partition
        the topics do not have (a shard that would silently serve less than it says)."""
        if self.partitions is not None:
            missing = sorted(p for p in self.partitions if p >= partitions)
            if missing:
                raise ValueError(
                    f"partitions {missing} named, the topics have {partitions} (0-{partitions - 1})"
                )
        return [p for p in range(partitions) if self.owns(p)]

    def describe(self) -> str:
        if self.partitions is not None:
            return spans(self.partitions)
        return "all" if self.whole else f"{self.index}/{self.count}"


def parse_partitions(text: str) -> frozenset[int]:
    """``0-3,8`` -> {0, 1, 2, 3, 8}; refuses anything else, with the part it refuses."""
    found: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high) if dash else int(low)
        except ValueError:
            raise ValueError(f"{part!r} is not a partition or a range like 0-3") from None
        if first < 0 or last < first:
            raise ValueError(f"{part!r} is not a partition or a range like 0-3")
        found.update(range(first, last + 1))
    return frozenset(found)


def parse_shard(text: str) -> Shard:
    """``1/4`` -> the shard of index 1 in 4."""
    index, slash, count = (t.strip() for t in text.partition("/"))
    if not slash or not index.isdigit() or not count.isdigit():
        raise ValueError(f"{text!r} is not a shard like 1/4 (index/count)")
    return Shard(index=int(index), count=int(count))


def spans(partitions: frozenset[int]) -> str:
    """{0, 1, 2, 3, 8} -> ``0-3,8``."""
    out: list[str] = []
    ordered = sorted(partitions)
    start = prev = ordered[0]
    for p in [*ordered[1:], None]:
        if p is not None and p == prev + 1:
            prev = p
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if p is not None:
            start = prev = p
    return ",".join(out)
