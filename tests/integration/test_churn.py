"""The churn ledger and the structural diff end to end on a real broker: a scan, then a
commit that adds an import between two files, read back over HTTP.

Runs once per broker (embedded Tansu, Apache Kafka) through the ``broker`` fixture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, running_stack
from tests.integration.test_streaming import fresh_repo
from tests.unit.test_neighborhood_stream import FILES

pytestmark = pytest.mark.integration

B3_USES_A2 = "from pkg_b.b1 import g1\nfrom pkg_a.a2 import f2\ndef g3():\n    g1()\n    f2()\n"


@pytest.fixture
async def stack(broker, tmp_path: Path):
    quick = {"recluster_quiet_ms": 100, "recluster_max_wait_ms": 1000}
    async with running_stack(broker.bootstrap, tmp_path / "data", **quick) as stack:
        yield stack


async def test_a_commit_adding_an_import_shows_in_the_churn_and_the_diff(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    base = repo.head()
    await stack.start_sources([repo.root])
    rid = (await fresh_repo(stack, commit=base))["repo"]

    repo.write("pkg_b/b3.py", B3_USES_A2)
    head = repo.commit("b3 uses pkg_a's f2")
    await fresh_repo(stack, rid, commit=head)

    churn = await stack.get(f"/repositories/{rid}/churn")
    ids = [item["id"] for item in churn["items"]]
    assert ids[0] == f"scan:{base}" and head in ids
    commit = churn["items"][ids.index(head)]
    assert (commit["kind"], commit["subject"], commit["parents"]) == (
        "commit",
        "b3 uses pkg_a's f2",
        [base],
    )
    assert (commit["files_changed"], commit["dependencies_added"]) == (1, 1)
    assert commit["dependencies_removed"] == 0 and commit["size"]["files"] == 6

    diff = await stack.get(f"/repositories/{rid}/diff", base=base, head=head)
    assert (diff["base"], diff["head"], diff["entries"]) == (base, head, 1)
    assert diff["dependencies_added"] == {
        "total": 1,
        "items": [{"source": "pkg_b/b3.py", "target": "pkg_a/a2.py", "weight": 1.0}],
    }
    assert diff["files_added"]["total"] == diff["files_removed"]["total"] == 0
