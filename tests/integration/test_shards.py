"""Query replicas that serve a shard (issue 18), on both brokers.

Three repositories are indexed by one worker; a replica of every partition serves them
all. Two more replicas, each told its partitions (one: the first repository's; the
other: every other partition), read only those partitions of the repository-keyed
topics: each holds and lists exactly the repositories keyed there, answers for them as
the whole replica does (its files), says which partitions it serves, and answers 404 for a
repository of the other shard, as for one that does not exist.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from query.materializer import partition_of
from query.shard import parse_partitions, spans
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually, running_stack
from tests.integration.test_reconcile import FILES, fresh_at
from tests.integration.test_state_topic import timeless

pytestmark = pytest.mark.integration

PARTITIONS = 4  # tests.integration.stack.stack_settings


async def listed(stack: Stack) -> set[str]:
    return {item["repo"] for item in (await stack.get("/repositories"))["items"]}


async def test_a_shard_serves_its_partitions_repositories_and_no_others(
    broker, tmp_path: Path
) -> None:
    repos = [
        GitRepo.create(tmp_path / f"svc{i}", {**FILES, "pkg/own.py": f"NAME = 'svc{i}'\n"})
        for i in range(3)
    ]
    async with running_stack(broker.bootstrap, tmp_path / "main") as stack:
        await stack.start_sources([r.root for r in repos])
        rids = [await fresh_at(stack, r.root, r.head()) for r in repos]
        first = partition_of(rids[0], PARTITIONS)
        specs = {"a": str(first), "b": ",".join(str(p) for p in range(PARTITIONS) if p != first)}
        expected = {
            "a": {r for r in rids if partition_of(r, PARTITIONS) == first},
            "b": {r for r in rids if partition_of(r, PARTITIONS) != first},
        }
        shards = {
            name: Stack(
                stack.settings.model_copy(
                    update={"data_dir": tmp_path / name, "serve_partitions": spec}
                ),
                stack.cluster,
            )
            for name, spec in specs.items()
        }
        try:
            for name, shard in shards.items():
                await shard.start_query()

                async def ready(shard: Stack = shard) -> bool:
                    return bool((await shard.get("/health"))["ready"])

                await eventually(ready, 60, f"shard {name} ready")
                health = await shard.get("/health")
                assert health["partitions"] == spans(parse_partitions(specs[name]))
                assert health["repositories"] == len(expected[name])
                assert await listed(shard) == expected[name]
                for rid in expected[name]:
                    files = f"/repositories/{rid}/files?limit=100"
                    answer = timeless(await shard.get(files))
                    assert answer == timeless(await stack.get(files))
                    assert "pkg/own.py" in {f["path"] for f in answer["items"]}
                for rid in set(rids) - expected[name]:
                    with pytest.raises(httpx.HTTPStatusError) as missing:
                        await shard.get(f"/repositories/{rid}")
                    assert missing.value.response.status_code == 404
            assert expected["a"] and expected["a"] | expected["b"] == set(rids)
            assert await listed(stack) == set(rids)
            assert (await stack.get("/health"))["partitions"] == "all"
        finally:
            for shard in shards.values():
                await shard.close()
