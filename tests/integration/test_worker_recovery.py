"""SIGKILL the worker in the middle of a scan: the restarted worker ends in the same state.

The worker runs as its own process (``gazetteer worker``), as in a deployment. The
state after the crash and restart must equal the state of an uninterrupted run of the
same events, and the delta log must hold every delta exactly once (seq 1..N, no gaps,
no duplicates), so that no reader can see anything indexed twice.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from deploy.settings import Settings
from producers.events import FileChanged, ScanCompleted, content_hash
from producers.kafka_sink import KafkaSink
from producers.source import Draft, Source
from stores.delta_log import KafkaDeltaLog
from tests.integration.stack import Stack, eventually, open_stack, stack_settings

pytestmark = pytest.mark.integration

FILES = 1200
REPO = "synthetic-1"


def scan_drafts() -> list[Draft]:
    drafts = []
    for i in range(FILES):
        text = (
            f"import pkg.m{i // 2}\nimport os\n\n"
            f"class C{i}:\n    def run(self):\n        return {i}\n"
        )
        data = text.encode()
        drafts.append(
            Draft(
                FileChanged,
                {
                    "path": f"pkg/m{i}.py",
                    "content": data,
                    "content_hash": content_hash(data),
                    "size": len(data),
                    "origin": "scan",
                    "commit": "c" * 40,
                    "working_tree": True,
                },
            )
        )
    drafts.append(
        Draft(
            ScanCompleted,
            {
                "commit": "c" * 40,
                "branch": "main",
                "files": FILES,
                "full": True,
                "working_tree_dirty": False,
            },
        )
    )
    return drafts


async def emit_scan(stack: Stack) -> None:
    sink = KafkaSink(stack.cluster.bootstrap, topics=stack.settings.topics)
    await sink.start()
    try:
        source = Source(REPO, "/synthetic", sink, heartbeat_s=60.0)
        source.observe(branch="main", head_commit="c" * 40, state="watching")
        await source.claim()  # a session opens with its lease (issue 15)
        drafts = scan_drafts()
        for start in range(0, len(drafts), 200):
            await source.emit(drafts[start : start + 200])
    finally:
        await sink.stop()


def spawn_worker(settings: Settings, log_path: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "GAZETTEER_NAMESPACE": settings.namespace,
        "GAZETTEER_APP_ID": settings.app_id,
        "GAZETTEER_PARTITIONS": str(settings.partitions),
        "GAZETTEER_DATA_DIR": str(settings.data_dir),
        "GAZETTEER_LOG_FORMAT": "json",
    }
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "deploy.cli", "--broker", settings.broker, "worker"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


async def indexed(stack: Stack, at_least: int) -> bool:
    view = stack.model.repos.get(REPO) if stack.model else None
    return view is not None and view.state.seq >= at_least


async def all_applied(stack: Stack) -> bool:
    return (
        REPO in stack.model.repos
        and stack.model.freshness(REPO).pending_events == 0
        and stack.model.repos[REPO].state.scans_completed == 1
    )


async def test_sigkill_mid_scan_then_restart_equals_an_uninterrupted_run(
    broker, tmp_path: Path
) -> None:
    # The uninterrupted reference run.
    reference = await open_stack(stack_settings(broker.bootstrap, tmp_path / "ref"))
    await reference.start_query()
    await reference.start_worker()
    await emit_scan(reference)
    await eventually(lambda: all_applied(reference), 180, "the reference run")
    expected = reference.model.repos[REPO].state.fingerprint()
    await reference.close()

    # The same events; the worker is killed in the middle and started again.
    stack = await open_stack(stack_settings(broker.bootstrap, tmp_path / "crash"))
    await stack.start_query()
    log_path = tmp_path / "worker.log"
    worker = spawn_worker(stack.settings, log_path)
    try:
        await emit_scan(stack)
        await eventually(lambda: indexed(stack, FILES // 4), 120, "a quarter of the scan")
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        seq_at_kill = stack.model.repos[REPO].state.seq
        assert seq_at_kill < FILES, "the scan finished before the kill; nothing was tested"
        worker = spawn_worker(stack.settings, log_path)
        await eventually(lambda: all_applied(stack), 180, "the restarted worker to finish")
        await asyncio.sleep(1.0)  # anything published twice would arrive now
        assert stack.model.repos[REPO].state.fingerprint() == expected

        log = KafkaDeltaLog(
            stack.cluster.bootstrap, stack.settings.topics.graph_deltas, stack.cluster.end_offsets
        )
        seqs = [
            d.seq
            for p in range(stack.settings.partitions)
            for d in await log.read_partition(p)
            if d.repo == REPO
        ]
        # The claim, every file, the barrier: one delta each.
        assert seqs == list(range(1, FILES + 3)), "the delta log holds a gap or a duplicate"
    finally:
        worker.kill()
        worker.wait(10)
        await stack.close()
