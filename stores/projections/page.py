"""A bounded slice of a sorted answer, with the true total beside it.

Every list the overview and the folder listings return is a Page: the caller asked for at
most ``limit`` items from ``offset``, and ``total`` says how many there were before the cut
(STYLE.md rule 9: every list capped, the true count beside the truncated list).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    items: tuple[T, ...]
    total: int
    offset: int
    limit: int

    @property
    def truncated(self) -> bool:
        """True when items exist past this page."""
        return self.offset + len(self.items) < self.total


def paged(ordered: Sequence[T], offset: int = 0, limit: int = 50) -> Page[T]:
    """The slice [offset, offset + limit) of an already sorted sequence."""
    if offset < 0 or limit < 0:
        raise ValueError(f"offset and limit must be >= 0, got {offset} and {limit}")
    return Page(tuple(ordered[offset : offset + limit]), len(ordered), offset, limit)
