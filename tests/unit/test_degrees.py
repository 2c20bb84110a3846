"""The adjacency's degrees against the dict they replaced: random assignments (new and
present ids, values past int64 that stay beside the columns), deletions (present and
absent), merges after many steps and after none; the same keys to the same values and
an iteration that gives each key once."""

from __future__ import annotations

import random

import pytest

import query.search.degrees as degrees_module
from query.search.degrees import Degrees

IDS = [f"sym:a{i % 3}.py:n{i}" for i in range(16)] + ["file:a.py", "ext:os", "dir:"]


def check(table: Degrees, oracle: dict[str, int]) -> None:
    assert table == oracle and len(table) == len(oracle)
    assert sorted(table) == sorted(oracle) and len(list(table)) == len(oracle)
    assert sorted(table.values()) == sorted(oracle.values())
    assert dict(table.items()) == oracle
    for key in [*IDS, "none"]:
        assert (key in table) == (key in oracle)
        assert table.get(key, 0) == oracle.get(key, 0)


@pytest.mark.parametrize("seed", range(24))
def test_degrees_are_the_dict(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    monkeypatch.setattr(degrees_module, "LIVE_FLOOR", seed % 5)
    rng = random.Random(seed)
    start = {k: rng.randint(1, 9) for k in rng.sample(IDS, rng.randint(0, len(IDS)))}
    table, oracle = Degrees(start.items()), dict(start)
    assert table._changed == {}
    for _ in range(300):
        key = rng.choice(IDS)
        if rng.random() < 0.6:
            value = rng.choice([1, 2, 70_000, 2**63, -(2**63) - 1])
            table[key] = oracle[key] = value
        elif key in oracle:
            del table[key], oracle[key]
        else:
            with pytest.raises(KeyError):
                del table[key]
        if rng.random() < 0.1:
            table.compact()
        check(table, oracle)
