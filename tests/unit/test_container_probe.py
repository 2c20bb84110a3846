"""gazetteer-probe, the image's health checks, against real processes and the real API."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import uvicorn

from deploy.container import probe
from deploy.settings import Settings
from query.api import create_api
from query.read_model import ReadModel

TIMEOUT_S = 10.0


def settings_with(**values: Any) -> Settings:
    """Settings from the environment, with ``values`` on top."""
    return Settings(**values)


def fake_proc(root: Path, processes: dict[str, tuple[bytes, str]]) -> Path:
    for pid, (cmdline, stat) in processes.items():
        (root / pid).mkdir(parents=True)
        (root / pid / "cmdline").write_bytes(cmdline)
        (root / pid / "stat").write_text(stat)
    (root / "self").mkdir()
    (root / "15").mkdir()  # a process that ended between listing and reading
    return root


def test_only_live_gazetteer_processes_of_the_verb_count(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path,
        {
            "10": (b"tini\0--\0gazetteer\0worker\0", "10 (tini) S 1 10"),
            "11": (b"/usr/local/bin/python3.11\0/usr/local/bin/gazetteer\0worker\0", "11 (g) S"),
            "12": (b"/usr/local/bin/gazetteer\0worker\0", "12 (gazetteer) Z 1"),
            "13": (b"/usr/local/bin/gazetteer\0serve\0", "13 (gazetteer) S 1"),
            "14": (b"/usr/bin/python3\0-m\0pytest\0worker\0", "14 (python3) R 1"),
            "16": (b"gazetteer\0--log-format\0json\0worker\0", "16 (a) b) R 1"),
        },
    )
    assert probe.gazetteer_pids("worker", proc) == [11, 16]
    assert probe.gazetteer_pids("serve", proc) == [13]
    assert probe.gazetteer_pids("watch", proc) == []


def until_listed(pid: int, verb: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while pid not in probe.gazetteer_pids(verb):  # until the child has exec'd
        assert time.monotonic() < deadline, f"{pid} never listed as {verb}"
        time.sleep(0.02)


def test_a_worker_counts_once_its_run_directory_exists(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "gazetteer"
    script.parent.mkdir()
    script.write_text("import time\ntime.sleep(60)\n")
    settings = settings_with(data_dir=tmp_path / "data")
    child = subprocess.Popen([sys.executable, str(script), "--log-format", "json", "worker"])
    try:
        until_listed(child.pid, "worker")
        assert child.pid not in probe.gazetteer_pids("watch")
        assert probe.check("worker", settings) is False
        (settings.data_dir / "runs" / f"worker-{child.pid}").mkdir(parents=True)
        assert probe.check("worker", settings) is True
    finally:
        child.kill()
        child.wait()
    assert child.pid not in probe.gazetteer_pids("worker")
    assert probe.check("worker", settings) is False


def test_a_watcher_counts_while_it_runs(tmp_path: Path) -> None:
    script = tmp_path / "gazetteer"
    script.write_text("import time\ntime.sleep(60)\n")
    child = subprocess.Popen([sys.executable, str(script), "watch", "/repos/a/"])
    try:
        until_listed(child.pid, "watch")
        assert probe.check("watch", settings_with()) is True
    finally:
        child.kill()
        child.wait()
    assert child.pid not in probe.gazetteer_pids("watch")


async def test_ready_follows_the_read_side_and_live_the_server(tmp_path: Path) -> None:
    caught_up = threading.Event()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    settings = settings_with(port=sock.getsockname()[1], data_dir=tmp_path)
    api = create_api(ReadModel(), ready=caught_up.is_set)
    server = uvicorn.Server(uvicorn.Config(api, log_config=None, access_log=False))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(TIMEOUT_S):
            while not server.started:
                await asyncio.sleep(0.02)
        assert await asyncio.to_thread(probe.check, "live", settings) is True
        assert await asyncio.to_thread(probe.check, "ready", settings) is False
        caught_up.set()
        assert await asyncio.to_thread(probe.check, "ready", settings) is True
    finally:
        server.should_exit = True
        await serving
    assert await asyncio.to_thread(probe.check, "live", settings) is False
    assert await asyncio.to_thread(probe.check, "ready", settings) is False


def test_the_command_refuses_unknown_probes() -> None:
    assert probe.main([]) == 2
    assert probe.main(["alive"]) == 2
    assert probe.main(["ready", "extra"]) == 2
