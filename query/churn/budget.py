"""Sharing a token budget between the lists of one answer.

An answer with several lists (files added, removed, changed, dependencies, cycles...)
under one ``max_tokens`` takes their items in turns, one from each list per round, so
a long first list cannot starve the others; an item is taken while it fits (the first
item of the whole answer is always taken). A token is counted as four characters of the
item's JSON, as every bounded answer of the query service counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def share(
    lists: Sequence[Sequence[object]], budget: int, cost: Callable[[object], int]
) -> list[int]:
    """How many items of each list fit in ``budget``, taken round-robin."""
    taken = [0] * len(lists)
    used = 0
    anything = False
    progress = True
    while progress:
        progress = False
        for i, items in enumerate(lists):
            if taken[i] >= len(items):
                continue
            price = cost(items[taken[i]])
            if anything and used + price > budget:
                continue
            taken[i] += 1
            used += price
            anything = progress = True
    return taken
