"""A worker restarted on a durable log continues from its state snapshot (issue 16).

On both brokers the topics outlive the worker here, so the snapshot it wrote at its
clean stop is judged against the log (`stores.state_snapshot.against_log`) and taken;
the restarted worker numbers its deltas on from the log's last one (1..N on the topic,
no gap, no duplicate), and what it indexes after the restart equals a full index.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from stores.delta_log import KafkaDeltaLog
from stores.state_files import StateFiles, state_directory
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually
from tests.integration.test_reconcile import FILES, content_of, fresh_at, full_index

pytestmark = pytest.mark.integration


async def test_a_restarted_worker_continues_from_its_snapshot(
    broker, stack: Stack, tmp_path: Path
) -> None:
    repo = GitRepo.create(tmp_path / "app", dict(FILES))
    await stack.start_sources([repo.root])
    rid = await fresh_at(stack, repo.root, repo.head())
    await stack.stop("worker")  # a clean stop writes the snapshot
    files = StateFiles(state_directory(stack.settings.data_dir, stack.settings.namespace))
    snapshot = files.load(rid)
    assert snapshot is not None and snapshot.indexed_commit == repo.head()

    with capture_logs() as logs:
        await stack.start_worker()
        repo.write("pkg/m1.py", "def f1():\n    return 'after the restart'\n")
        head = repo.commit("after the restart")
        await fresh_at(stack, repo.root, head)
    events = [e["event"] for e in logs]
    assert "index_restored_from_snapshot" in events
    assert "state_snapshot_rejected" not in events
    # Its files resolved in the background (issue 16), unless its first change came first
    # and resolved them.
    ended = [
        (e["repo"], e["event"], e.get("reason"))
        for e in logs
        if e["event"] in ("resolution_warmed", "resolution_warm_stopped")
    ]
    assert ended in (
        [(rid, "resolution_warmed", None)],
        [(rid, "resolution_warm_stopped", "changed")],
    )

    log = KafkaDeltaLog(
        stack.cluster.bootstrap, stack.settings.topics.graph_deltas, stack.cluster.end_offsets
    )
    seqs: list[int] = []
    for partition in range(stack.settings.partitions):
        seqs += [d.seq for d in await log.read_partition(partition) if d.repo == rid]
    seqs.sort()
    assert seqs == list(range(1, seqs[-1] + 1)), "the delta log has a gap or a duplicate"
    assert seqs[-1] > snapshot.seq

    async def indexed() -> bool:
        return stack.model is not None and stack.model.repos[rid].state.seq == seqs[-1]

    await eventually(indexed, 30, "the read side at the log's end")
    assert content_of(stack, rid) == await full_index(broker, tmp_path, repo.root, head)
