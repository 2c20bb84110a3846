"""Neighborhoods end to end on a real broker: scan -> recluster -> HTTP, commits, restarts.

Runs once per broker (embedded Tansu, Apache Kafka) through the ``broker`` fixture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually, running_stack
from tests.integration.test_streaming import fresh_repo
from tests.unit.test_neighborhood_stream import FILES

pytestmark = pytest.mark.integration


@pytest.fixture
async def stack(broker, tmp_path: Path):
    quick = {"recluster_quiet_ms": 100, "recluster_max_wait_ms": 1000}
    async with running_stack(broker.bootstrap, tmp_path / "data", **quick) as stack:
        yield stack


async def neighborhoods_at(stack: Stack, rid: str, graph_seq_above: int = 0) -> dict:
    page: dict = {}

    async def clustered() -> bool:
        nonlocal page
        page = await stack.get(f"/repositories/{rid}/neighborhoods")
        stamp = page["snapshot"]
        return (
            stamp["seq"] is not None and stamp["graph_seq"] > graph_seq_above and not stamp["stale"]
        )

    await eventually(clustered, 60, "a current neighborhood snapshot")
    return page


async def test_neighborhoods_follow_the_scan_a_commit_and_a_worker_restart(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    await stack.start_sources([repo.root])
    rid = (await fresh_repo(stack))["repo"]
    first = await neighborhoods_at(stack, rid)
    labels = {n["label"]: n["id"] for n in first["items"]}
    assert sorted(labels) == ["pkg_a", "pkg_b"]

    # b3 now leans on pkg_a: three calls there, none left in pkg_b.
    leaning = "from pkg_a.a1 import f1\nfrom pkg_a.a2 import f2\n"
    repo.write("pkg_b/b3.py", leaning + "def g3():\n    f1()\n    f2()\n    f2()\n")
    head = repo.commit("b3 leans on pkg_a")
    await fresh_repo(stack, rid, commit=head)
    second = await neighborhoods_at(stack, rid, first["snapshot"]["graph_seq"])
    assert second["snapshot"]["seq"] > first["snapshot"]["seq"]
    of = await stack.get(f"/repositories/{rid}/neighborhood-of?path=pkg_b/b3.py")
    assert of["neighborhood"]["id"] == labels["pkg_a"]  # ids survive reclustering
    changes = await stack.get(f"/repositories/{rid}/neighborhood-changes")
    moved = [c["change"] for c in changes["items"] if c["change"]["kind"] == "files_moved"]
    assert moved[0]["paths"] == ["pkg_b/b3.py"] and moved[0]["target"] == labels["pkg_a"]

    # A new worker takes the partitions over: it continues from the last snapshot.
    await stack.stop("worker")
    await stack.start_worker()
    repo.write("pkg_a/a2.py", FILES["pkg_a/a2.py"] + "from pkg_b.b2 import g2\n")
    head = repo.commit("a2 imports g2")
    await fresh_repo(stack, rid, commit=head)
    third = await neighborhoods_at(stack, rid, second["snapshot"]["graph_seq"])
    assert third["snapshot"]["seq"] == second["snapshot"]["seq"] + 1
    assert {n["id"] for n in third["items"]} == set(labels.values())
    overview = await stack.get(f"/repositories/{rid}/overview")
    assert overview["neighborhoods_total"] == 2 and overview["sizes"]["source_files"] == 6
