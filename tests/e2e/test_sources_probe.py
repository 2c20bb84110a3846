"""A quiet repository's answers say `fresh` one after another, on both brokers.

Before an answer about a repository the read side asks the broker for the end of the
repository's sources partition (`Materializer.probe_sources`), and an answer whose look
is not answered within 250 ms says `updating`. Apache Kafka answers a connection's
requests in order, so a look sent on the connection where the read side's fetch waits
for records waited for that fetch (aiokafka's 500 ms `fetch_max_wait_ms`): a quarter
second on every answer, and 25 of 60 answers about untouched repositories said
`updating`. The embedded broker's fetches wait 100 ms (deploy/tansu_quirks.py (c)),
which hid it. `gazetteer up` runs as a process here: the in-process integration tests
share one interpreter, where the Tansu cap, once installed, holds for Kafka too.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.bench.load_freshness import gazetteer_up, wait_fresh
from tests.e2e.test_freshness_under_load import BROKERS, broker_url
from tests.gitrepo import GitRepo

pytestmark = pytest.mark.e2e

FILES = {
    "app/__init__.py": '"""The app package."""\n',
    "app/models.py": "class User:\n    def name(self):\n        return 'x'\n",
    "app/views.py": "from app.models import User\n\n\ndef show(u: User):\n    return u.name()\n",
}
ANSWERS = 30


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", [k for k in ("tansu", "kafka") if k in BROKERS])
async def test_a_quiet_repository_answers_fresh_every_time(kind: str, tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "app", FILES)
    env = {"GAZETTEER_EMBEDDER": "none"}
    async with broker_url(kind) as broker:
        with gazetteer_up(repo.root, tmp_path / "data", broker, env) as up:
            rid = await wait_fresh(up.url, repo.root, repo.head(), timeout=120)
            statuses, took = [], []
            async with httpx.AsyncClient(base_url=up.url, timeout=30) as http:
                for _ in range(ANSWERS):
                    started = time.monotonic()
                    answer = await http.get(f"/repositories/{rid}/search", params={"q": "User"})
                    took.append(time.monotonic() - started)
                    answer.raise_for_status()
                    body = answer.json()
                    statuses.append(body["freshness"]["status"])
    assert body["items"][0]["path"] == "app/models.py"
    assert statuses == ["fresh"] * ANSWERS, statuses
    # Not a timing target (the statuses are the test): names the cause when it is the
    # one, a look that waited for the fetch and took its 250 ms.
    assert sorted(took)[ANSWERS // 2] < 0.2, took
