"""Session memory: recency weights, bounds and expiry."""

from __future__ import annotations

from query.search.session_memory import SessionMemory


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_latest_touch_weighs_one_and_older_ones_fade_by_half_lives() -> None:
    memory = SessionMemory(half_life=2, clock=Clock())
    memory.touch("r", "s", ["a.py", "b.py"])  # a.py the most relevant of the two
    memory.touch("r", "s", ["c.py"])
    assert memory.boosts("r", "s") == {"c.py": 1.0, "a.py": 0.5**0.5, "b.py": 0.5}
    memory.touch("r", "s", ["b.py"])  # touched again: the latest, not twice
    assert memory.boosts("r", "s") == {"b.py": 1.0, "c.py": 0.5**0.5, "a.py": 0.5}
    assert memory.boosts("r", "other") == {} and memory.boosts("q", "s") == {}


def test_paths_sessions_and_idle_time_are_bounded() -> None:
    clock = Clock()
    memory = SessionMemory(max_sessions=2, max_paths=3, ttl_s=10, clock=clock)
    memory.touch("r", "s1", [f"{i}.py" for i in range(5)])
    assert set(memory.boosts("r", "s1")) == {"0.py", "1.py", "2.py"}
    memory.touch("r", "s2", ["x.py"])
    memory.touch("r", "s3", ["y.py"])  # s1, the least recently used, goes
    assert memory.boosts("r", "s1") == {} and memory.boosts("r", "s3") == {"y.py": 1.0}
    clock.now = 11
    assert memory.boosts("r", "s2") == {} and memory.boosts("r", "s3") == {}
