"""The org simulation's projection (issue 18): from measured per-file costs to a
deployment of a given size. Pure arithmetic, pinned by tests/unit/test_org_projection.py.

Given what the simulation measured (a shard replica's memory above a bare process, per
file it holds; the state's disk per file; a worker's indexing throughput; the router's
org-wide search p95 for the shards it fans out to), an organization of ``repos``
repositories of ``files_per_repo`` files is sized as:

- files per shard: what fits a replica's memory budget (``replica_budget_mb`` less the
  bare process, over the per-file cost), rounded down;
- shards: the files over the files per shard, rounded up; replicas: ``copies`` of each;
- partitions: the next power of two at least ``partitions_per_shard`` times the shards
  (so that each shard can later split without repartitioning the topics), at least 8;
- memory: replicas x (bare process + files per shard actually held x per-file cost);
- disk: files x per-file state disk, once per copy (each replica keeps its own
  snapshots of its shard's files) plus the broker's copy (per-file broker disk);
- initial index: files over (workers x files/s a worker);
- what breaks first: the first of these limits to be passed, in the order written:
  a replica that cannot hold one repository (``one repository exceeds a replica``), the
  initial index beyond ``index_hours_limit``, more shards than partitions allow, the
  inotify watches of one watcher (directories per repository x repositories) beyond
  ``inotify_watches``; else ``nothing within these limits``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Costs:
    """Measured figures (from one simulation run)."""

    replica_base_mb: float
    replica_mb_per_file: float
    state_disk_kb_per_file: float
    broker_disk_kb_per_file: float
    worker_files_per_s: float
    dirs_per_file: float


@dataclass(frozen=True, slots=True)
class Sizing:
    """Limits of the deployment being planned."""

    replica_budget_mb: float = 8192.0
    copies: int = 2
    partitions_per_shard: int = 4
    workers: int = 4
    index_hours_limit: float = 1.0
    inotify_watches: int = 1_048_576
    max_partitions: int = 1024


def next_power_of_two(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def project(costs: Costs, repos: int, files_per_repo: int, sizing: Sizing) -> dict[str, Any]:
    """The deployment for ``repos`` repositories of ``files_per_repo`` files."""
    files = repos * files_per_repo
    room = sizing.replica_budget_mb - costs.replica_base_mb
    per_shard = math.floor(room / costs.replica_mb_per_file) if room > 0 else 0
    shards = math.ceil(files / per_shard) if per_shard else 0
    held = math.ceil(files / shards) if shards else 0
    partitions = max(8, next_power_of_two(shards * sizing.partitions_per_shard))
    replicas = shards * sizing.copies
    replica_mb = costs.replica_base_mb + held * costs.replica_mb_per_file
    state_gb = files * costs.state_disk_kb_per_file / 1e6
    broker_gb = files * costs.broker_disk_kb_per_file / 1e6
    index_h = files / (sizing.workers * costs.worker_files_per_s) / 3600
    watches = math.ceil(files * costs.dirs_per_file)
    if per_shard < files_per_repo:
        breaks = "one repository exceeds a replica"
    elif index_h > sizing.index_hours_limit:
        breaks = f"initial index {index_h:.1f} h with {sizing.workers} workers"
    elif partitions > sizing.max_partitions:
        breaks = f"{partitions} partitions > {sizing.max_partitions}"
    elif watches > sizing.inotify_watches:
        breaks = f"{watches:,} inotify watches for one watcher"
    else:
        breaks = "nothing within these limits"
    return {
        "repos": repos,
        "files_per_repo": files_per_repo,
        "files": files,
        "files_per_shard_max": per_shard,
        "shards": shards,
        "replicas": replicas,
        "partitions": partitions,
        "replica_mb": round(replica_mb, 1),
        "memory_gb": round(replicas * replica_mb / 1024, 1),
        "disk_gb": round(sizing.copies * state_gb + broker_gb, 1),
        "initial_index_h": round(index_h, 2),
        "inotify_watches": watches,
        "breaks_first": breaks,
        "sizing": asdict(sizing),
    }
