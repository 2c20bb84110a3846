"""The streaming spine end to end on a real broker: producers -> worker -> read side -> HTTP.

Runs once per broker (embedded Tansu, Apache Kafka) through the ``broker`` fixture.
"""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from producers.events import FileChanged, content_hash
from producers.kafka_sink import KafkaSink
from producers.source import Draft, Source
from stores.delta_log import KafkaDeltaLog, read_values
from stores.deltas import DELTA_PART_BYTES, decode_delta, encode_delta
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually

pytestmark = pytest.mark.integration

APP_FILES = {
    "app/__init__.py": '"""The app package."""\n',
    "app/models.py": "class User:\n    def name(self):\n        return 'x'\n",
    "app/views.py": (
        "from app.models import User\nimport json\n\n"
        "def show(u: User):\n    return json.dumps(u.name())\n"
    ),
    "web/main.js": "import { show } from './util.js';\nexport function main() { show(); }\n",
    "web/util.js": "export function show() { return 1; }\n",
    ".gitignore": "build/\n",
}


async def fresh_repo(
    stack: Stack, repo: str | None = None, commit: str | None = None, timeout: float = 60.0
) -> dict:
    """Wait until the repository is fresh (at ``commit``, once the producer has seen it)."""
    body: dict = {}

    async def check() -> bool:
        nonlocal body
        listing = await stack.get("/repositories")
        items = [r for r in listing["items"] if repo is None or r["repo"] == repo]
        if not items:
            return False
        body = items[0]
        at = commit is None or body["freshness"]["indexed_commit"] == commit
        return at and body["freshness"]["status"] == "fresh"

    await eventually(check, timeout, "the repository to be fresh")
    return body


async def test_scan_is_indexed_and_fresh_with_skipped_files_recorded(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", APP_FILES)
    repo.write("build/out.py", "ignored = 1\n")
    repo.write("logo.png", b"\x89PNG\x00\x00binary")
    os.symlink("/etc/hostname", repo.root / "escape.txt")
    await stack.start_sources([repo.root])
    body = await fresh_repo(stack)
    rid = body["repo"]
    assert body["freshness"]["indexed_commit"] == repo.head()
    assert body["freshness"]["pending_events"] == 0
    files = await stack.get(f"/repositories/{rid}/files", limit=100)
    paths = [f["path"] for f in files["items"]]
    assert "build/out.py" not in paths
    assert {"app/models.py", "app/views.py", "web/main.js", "logo.png", "escape.txt"} <= set(paths)
    skipped = {f["path"]: f["skipped"] for f in files["items"] if f["skipped"]}
    assert skipped == {"logo.png": "binary", "escape.txt": "symlink_outside_repository"}
    views = await stack.get(f"/repositories/{rid}/files/app/views.py")
    assert views["language"] == "python"
    assert [s["name"] for s in views["symbols"]] == ["show"]
    assert views["sections"] == ["L1-2: imports", "L4-5: function show"]
    assert views["keywords"][:2] == ["show", "views"]
    assert views["depends_on"] == ["app/models.py", "json"]
    main = await stack.get(f"/repositories/{rid}/files/web/main.js")
    assert main["language"] == "javascript" and main["depends_on"] == ["web/util.js"]
    # The worker's consumer joined its group, as the join watchdog expects of it.
    assert [app.gazetteer_joined.is_set() for app in stack.worker_apps] == [True]


async def test_edits_creations_renames_deletions_and_commits_are_followed(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", APP_FILES)
    await stack.start_sources([repo.root])
    rid = (await fresh_repo(stack))["repo"]

    # Save a file in the work tree: the state follows, and the tree is dirty.
    repo.write(
        "app/models.py",
        "class User:\n    def name(self):\n        return 'x'\n\nclass Team:\n    pass\n",
    )

    async def team_indexed() -> bool:
        detail = await stack.get(f"/repositories/{rid}/files/app/models.py")
        return [s["name"] for s in detail["symbols"]] == ["User", "name", "Team"]

    await eventually(team_indexed, 30, "the saved edit")
    freshness = await stack.get(f"/repositories/{rid}/freshness")
    assert freshness["working_tree_dirty"] is True

    # Create, rename and delete, then commit: every change and the commit are followed.
    repo.write("app/teams.py", "from app.models import Team\n")
    repo.git("mv", "web/util.js", "web/helpers.js")
    repo.write(
        "web/main.js", "import { show } from './helpers.js';\nexport function main() { show(); }\n"
    )
    (repo.root / "app/__init__.py").unlink()
    head = repo.commit("teams, helpers")
    body = await fresh_repo(stack, rid, commit=head)
    assert body["freshness"]["head_commit"] == head
    assert body["freshness"]["working_tree_dirty"] is False
    listing = await stack.get(f"/repositories/{rid}/files")
    paths = {f["path"] for f in listing["items"]}
    assert "app/teams.py" in paths and "web/helpers.js" in paths
    assert "web/util.js" not in paths and "app/__init__.py" not in paths
    main = await stack.get(f"/repositories/{rid}/files/web/main.js")
    assert main["depends_on"] == ["web/helpers.js"]
    assert main["commit"] == head


async def test_malformed_message_is_dead_lettered_and_the_next_one_is_processed(
    stack: Stack,
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=stack.cluster.bootstrap)
    await producer.start()
    try:
        await producer.send_and_wait(
            stack.settings.topics.file_events, key=b"junk-1", value=b"{not json"
        )
    finally:
        await producer.stop()
    sink = KafkaSink(stack.cluster.bootstrap, topics=stack.settings.topics)
    await sink.start()
    try:
        data = b"def ok():\n    return 1\n"
        source = Source("junk-1", "/nowhere", sink)
        await source.claim()  # a session opens with its lease (issue 15)
        await source.emit(
            [
                Draft(
                    FileChanged,
                    {
                        "path": "ok.py",
                        "content": data,
                        "content_hash": content_hash(data),
                        "size": len(data),
                        "origin": "watch",
                        "commit": None,
                        "working_tree": True,
                    },
                )
            ]
        )
    finally:
        await sink.stop()

    async def both_seen() -> bool:
        letters = await stack.get("/dead-letters")
        repos = await stack.get("/repositories")
        return letters["total"] >= 1 and any(
            r["repo"] == "junk-1" and r["files"] == 1 for r in repos["items"]
        )

    await eventually(both_seen, 30, "the dead letter and the good event")
    letter = (await stack.get("/dead-letters"))["items"][0]
    assert letter["failure"] == "malformed" and letter["key"] == "junk-1"
    assert "JSON" in letter["reason"] or "json" in letter["reason"]
    detail = await stack.get("/repositories/junk-1/files/ok.py")
    assert [s["name"] for s in detail["symbols"]] == ["ok"]


async def test_restarted_query_service_rebuilds_the_same_answers(
    stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", APP_FILES)
    await stack.start_sources([repo.root])
    rid = (await fresh_repo(stack))["repo"]
    await stack.stop("sources")

    async def stopped_seen() -> bool:
        return (await stack.get(f"/repositories/{rid}/freshness"))["status"] == "stale"

    await eventually(stopped_seen, 30, "the producer's last status")
    paths = [
        "/repositories",
        f"/repositories/{rid}/files",
        f"/repositories/{rid}/files/app/views.py",
    ]
    before = [await stack.get(p) for p in paths]
    fingerprint = stack.model.repos[rid].state.fingerprint()
    await stack.stop("query")
    await stack.start_query()

    async def caught_up() -> bool:
        return (await stack.get("/health"))["ready"]

    await eventually(caught_up, 30, "the new replica to catch up")
    after = [await stack.get(p) for p in paths]
    assert stack.model.repos[rid].state.fingerprint() == fingerprint
    for b, a in zip(before, after, strict=True):
        assert json.dumps(a, sort_keys=True, indent=1) == json.dumps(b, sort_keys=True, indent=1)


async def test_a_scan_whose_barrier_delta_is_megabytes_is_indexed_from_parts(
    stack: Stack, tmp_path: Path
) -> None:
    # A scan resolves all its files at its barrier: that one delta carries every edge,
    # and travels in parts of at most 1 MB that the read side and a restore (which reads
    # the log as KafkaDeltaLog does) join again.
    files = {
        f"pkg/m{i}.py": f"from pkg.m{(i + 1) % 300} import f0\n"
        + "".join(f"def f{j}():\n    return f0() + f{(j + 1) % 40}()\n" for j in range(40))
        for i in range(300)
    }
    repo = GitRepo.create(tmp_path / "big", files)
    await stack.start_sources([repo.root])
    body = await fresh_repo(stack, commit=repo.head(), timeout=120)
    assert body["files"] == 300 and body["edges"] > 40_000
    topic = stack.settings.topics.graph_deltas
    log = KafkaDeltaLog(stack.cluster.bootstrap, topic, stack.cluster.end_offsets)
    barrier = [
        d
        for p in range(stack.settings.partitions)
        for d in await log.read_partition(p)
        if d.barrier == "scan_completed"
    ]
    assert len(barrier) == 1 and barrier[0].part is None
    assert len(encode_delta(barrier[0])) > 1_048_576, "not past the default 1 MB limit"
    values = [
        value
        for p in range(stack.settings.partitions)
        for value in await read_values(stack.cluster.bootstrap, topic, p, stack.cluster.end_offsets)
    ]
    assert max(map(len, values)) <= DELTA_PART_BYTES
    parts = [
        d
        for d in map(decode_delta, values)
        if d.seq == barrier[0].seq and d.repo == barrier[0].repo
    ]
    assert len(parts) > 1 and all(d.part is not None for d in parts)
    state = stack.model.repos[barrier[0].repo].state
    assert {e.key for e in barrier[0].edges_upserted} <= set(state.edges)
    # A barrier of 40,000 edges: the worker and the read side froze their heaps after it.
    frozen = gc.get_freeze_count()
    gc.unfreeze()  # the rest of the session collects as usual
    assert frozen > 0
    metrics = await stack.metrics()
    for side in ("worker", "query"):
        assert f'gazetteer_heap_settled_total{{side="{side}"}}' in metrics
