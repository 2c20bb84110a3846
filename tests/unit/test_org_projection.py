"""The org simulation's projection arithmetic (tests/bench/org_projection.py)."""

from __future__ import annotations

from tests.bench.org_projection import Costs, Sizing, next_power_of_two, project

COSTS = Costs(
    replica_base_mb=200.0,
    replica_mb_per_file=0.5,
    state_disk_kb_per_file=20.0,
    broker_disk_kb_per_file=10.0,
    worker_files_per_s=100.0,
    dirs_per_file=0.2,
)


def test_next_power_of_two() -> None:
    assert [next_power_of_two(n) for n in (0, 1, 2, 3, 8, 9, 40)] == [1, 1, 2, 4, 8, 16, 64]


def test_a_thousand_repositories_of_two_thousand_files() -> None:
    got = project(COSTS, 1000, 2000, Sizing())
    # (8192 - 200) / 0.5 = 15,984 files a shard; 2,000,000 / 15,984 -> 126 shards.
    assert {k: v for k, v in got.items() if k != "sizing"} == {
        "repos": 1000,
        "files_per_repo": 2000,
        "files": 2_000_000,
        "files_per_shard_max": 15984,
        "shards": 126,
        "replicas": 252,
        "partitions": 512,
        "replica_mb": 8137.0,
        "memory_gb": 2002.5,  # 252 x 8,137 MB (15,874 files held each)
        "disk_gb": 100.0,  # 2 copies x 40 GB of state + 20 GB in the broker
        "initial_index_h": 1.39,
        "inotify_watches": 400_000,
        "breaks_first": "initial index 1.4 h with 4 workers",
    }


def test_a_repository_larger_than_a_replica_breaks_first() -> None:
    got = project(COSTS, 10, 20_000, Sizing(replica_budget_mb=4096.0))
    assert got["files_per_shard_max"] == 7792
    assert got["breaks_first"] == "one repository exceeds a replica"


def test_small_enough_breaks_nothing() -> None:
    got = project(COSTS, 100, 20, Sizing())
    assert (got["shards"], got["replicas"], got["partitions"]) == (1, 2, 8)
    assert got["replica_mb"] == 1200.0 and got["disk_gb"] == 0.1
    assert got["breaks_first"] == "nothing within these limits"
