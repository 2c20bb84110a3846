"""The retrieval's definers against the dict of sorted tuples they replaced, over random
adds and discards (present and absent, a name down to one file and back up): the same
names to the same tuples; a name of one file holds the path alone."""

from __future__ import annotations

import random
from bisect import insort

import pytest

from query.search.definers import Definers

NAMES = ["run", "Auth", "x", "__init__"]
PATHS = ["a.py", "b.py", "pkg/c.py", "pkg/a.py"]


@pytest.mark.parametrize("seed", range(20))
def test_definers_are_the_dict_of_sorted_tuples(seed: int) -> None:
    rng = random.Random(seed)
    definers, oracle = Definers(), {}
    for _ in range(200):
        name, path = rng.choice(NAMES), rng.choice(PATHS)
        files = list(oracle.get(name, ()))
        if rng.random() < 0.6:
            definers.add(name, path)
            if path not in files:
                insort(files, path)
        else:
            definers.discard(name, path)
            files = [p for p in files if p != path]
        if files:
            oracle[name] = tuple(files)
        else:
            oracle.pop(name, None)
        assert definers == oracle and len(definers) == len(oracle)
        assert sorted(definers) == sorted(oracle)
        for n in [*NAMES, "none"]:
            assert definers.get(n) == oracle.get(n) and (n in definers) == (n in oracle)
            assert definers.get(n, ()) == oracle.get(n, ())
    held = definers._held
    assert all(isinstance(held[n], str) == (len(oracle[n]) == 1) for n in oracle)
