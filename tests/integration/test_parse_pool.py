"""A scan parsed in the worker's pool of processes (issue 21), through the real path: a
git repository scanned by the producer, the events on a real broker, the worker's pool
(one spawned process), the read side. The graph the read side holds is the one a
RepoIndex builds in this process from the same files, node for node, edge for edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog

from processors.indexer import RepoIndex
from stores.repo_state import RepoState
from tests.factories import Stamp
from tests.gitrepo import GitRepo
from tests.integration.conftest import Broker
from tests.integration.stack import Stack, running_stack
from tests.integration.test_streaming import fresh_repo

pytestmark = pytest.mark.integration

FILES = {
    f"pkg/m{i}.py": f"import pkg.m{(i + 1) % 90} as nxt\n"
    + f"class C{i}(object):\n    def run(self):\n        return nxt.g() + f{i % 7}()\n"
    + "def g():\n    return 1\n"
    + "".join(f"def f{j}():\n    return nxt.g() + f{(j + 1) % 7}()\n" for j in range(7))
    for i in range(90)
}


@pytest.fixture
async def stack(broker: Broker, tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(broker.bootstrap, tmp_path / "data", scan_workers=1) as running:
        yield running


def graph(state: RepoState) -> tuple[list[str], list[str]]:
    return (
        sorted(n.model_dump_json() for n in state.nodes.values()),
        sorted(e.model_dump_json() for e in state.edges.values()),
    )


async def test_a_scan_parsed_in_the_pool_serves_the_graph_one_process_builds(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    with structlog.testing.capture_logs() as logged:
        await stack.start_sources([repo.root])
        body = await fresh_repo(stack, commit=repo.head(), timeout=120)
    assert body["files"] == len(FILES)
    assert [e for e in logged if e["event"] == "parse_pool_started"] == [
        {"event": "parse_pool_started", "workers": 1, "log_level": "info"}
    ]
    assert stack.model is not None
    served = stack.model.repos[body["repo"]].state
    index, stamp = RepoIndex(body["repo"]), Stamp(repo=body["repo"])
    stamp.claimed(index)
    for path, text in sorted(FILES.items()):
        index.handle(stamp.changed(path, text, origin="scan"), 0.0)
    index.handle(stamp.scan_completed(), 0.0)
    assert graph(served) == graph(index.state)
    assert any(e.kind == "CALLS" and e.confidence == "import" for e in served.edges.values())
