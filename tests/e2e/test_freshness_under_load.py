"""No answer of ``gazetteer up`` says ``fresh`` while serving a save's old content.

The load benchmark's machinery (`tests.bench.load_phase`) at small scale: a generated git
repository, 4 closed-loop clients, 10 saves, judged by `tests.freshness_checker`'s rule
from outside the service (HTTP, the files, the checker's own topic consumer). That rule
catching a service that always says fresh is pinned in tests/unit/test_freshness_checker.py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from deploy.kafka_dist import ApacheKafka
from tests.bench.load_freshness import gazetteer_up, python_files, questions_of, wait_fresh
from tests.bench.load_phase import PhaseOptions, TopicTap, run_phase
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

BROKERS = [k.strip() for k in os.environ.get("GAZETTEER_TEST_BROKERS", "tansu,kafka").split(",")]


def module(i: int) -> str:
    uses = f"from pkg.mod_{i - 1} import step_{i - 1}\n\n\n" if i else ""
    return (
        f'"""Module {i} of the generated package."""\n\n{uses}'
        f"def step_{i}(value):\n"
        f'    """Step {i} of the pipeline: add {i}."""\n'
        f"    return {f'step_{i - 1}(value)' if i else 'value'} + {i}\n\n\n"
        f"class Stage{i}:\n"
        f"    def run(self, value):\n"
        f"        return step_{i}(value)\n"
    )


@contextlib.asynccontextmanager
async def broker_url(kind: str) -> AsyncIterator[str | None]:
    """None: up starts its own embedded broker (Tansu); else an Apache Kafka's URL."""
    if kind == "tansu":
        yield None
        return
    async with ApacheKafka(partitions=1) as kafka:
        yield f"kafka://{kafka.bootstrap}"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", [k for k in ("tansu", "kafka") if k in BROKERS])
async def test_no_answer_says_fresh_with_old_content_under_load(kind: str, tmp_path: Path) -> None:
    files = {f"pkg/mod_{i}.py": module(i) for i in range(12)}
    repo = GitRepo.create(tmp_path / "app", {"pkg/__init__.py": "", **files})
    env = {"GAZETTEER_EMBEDDER": "hash:256"}  # the 2 cores for the pipeline under test
    async with broker_url(kind) as broker:
        with gazetteer_up(repo.root, tmp_path / "data", broker, env) as up:
            rid = await wait_fresh(up.url, repo.root, repo.head(), timeout=120)
            tap = TopicTap(up.bootstrap, up.namespace)
            tap.start()
            try:
                paths = python_files(repo.root)
                targets = [f"pkg/mod_{i % 6}.py" for i in range(10)]  # each file saved twice
                options = PhaseOptions(clients=4, max_phase_s=300)
                result = await run_phase(
                    up.url, rid, repo.root, tap, targets, questions_of(paths), paths, options
                )
            finally:
                tap.stop()
    verdict = result.verdict
    assert not result.truncated
    assert [s.number for s in verdict.saves] == list(range(1, 11))
    assert verdict.not_seen == 0, "the checker's consumer missed a save: nothing was judged"
    assert verdict.not_visible == 0, [s for s in verdict.saves if s.visible_ms != s.visible_ms]
    assert verdict.violations == ()
    # Not vacuous: fresh answers were requested after due saves and judged.
    assert verdict.judged_by_status.get("fresh", 0) > 0, verdict
    assert sum(1 for a in result.answers if a.client >= 0) > 10
