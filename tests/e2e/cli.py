"""Driving the ``gazetteer`` command as a user does: processes, stdout, HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

URL = re.compile(r"Gazetteer is serving (http://\S+)")


class Gazetteer:
    """One ``gazetteer`` process; stdout and stderr are collected as they come."""

    def __init__(
        self, args: list[str], data_dir: Path, *, cwd: str | None = None, **env: str
    ) -> None:
        """``cwd``: the checkout whose CLI runs (default: this process's directory)."""
        self.args = args
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deploy.cli", *args],
            cwd=cwd,
            env={**os.environ, "GAZETTEER_DATA_DIR": str(data_dir), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            threading.Thread(target=self._drain, args=(stream, sink), daemon=True).start()

    @staticmethod
    def _drain(stream, sink: list[str]) -> None:  # type: ignore[no-untyped-def]
        for line in stream:
            sink.append(line)

    def wait_for_line(self, pattern: re.Pattern[str], timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.stdout):
                if match := pattern.search(line):
                    return match
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(
            f"gazetteer {' '.join(self.args)} printed no {pattern.pattern!r}; "
            f"exit={self.proc.poll()} stderr tail:\n{''.join(self.stderr[-30:])}"
        )

    def url(self, timeout: float = 60.0) -> str:
        return self.wait_for_line(URL, timeout).group(1)

    def interrupt(self, timeout: float = 30.0) -> int:
        """Ctrl-C, as a user would; returns the exit code."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout)

    def interrupt_twice(self, patience: float = 2.0, timeout: float = 10.0) -> int:
        """Ctrl-C, and Ctrl-C again if it is still running after ``patience`` seconds."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(patience)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(timeout)

    def crash(self) -> int:
        """SIGKILL while it runs, as a crash would; returns the exit code (-9)."""
        assert self.proc.poll() is None, f"gazetteer {' '.join(self.args)} already exited"
        self.proc.send_signal(signal.SIGKILL)
        return self.proc.wait(10)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """The cleanup of a test that may have failed: SIGTERM, then SIGTERM again (a forced
        stop, which still stops a broker the process started), and SIGKILL last, which
        would leave that broker running."""
        for sig in (signal.SIGTERM, signal.SIGTERM, signal.SIGKILL):
            if self.proc.poll() is not None:
                return
            self.proc.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    def log_text(self) -> str:
        return "".join(self.stderr)

    def log_events(self, event: str) -> list[dict[str, Any]]:
        """The JSON log lines (``GAZETTEER_LOG_FORMAT=json``) of one event, in order."""
        found = []
        for line in list(self.stderr):
            if line.startswith("{"):
                record = json.loads(line)
                if record.get("event") == event:
                    found.append(record)
        return found


ROOT = Path(__file__).resolve().parents[2]


def run_cli(
    *args: str, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """One ``gazetteer`` command to its end, as a user types it (``stdin``: piped in)."""
    return subprocess.run(
        [sys.executable, "-m", "deploy.cli", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def get(url: str, path: str, **params: object) -> dict:
    response = httpx.get(url + path, params=params, timeout=10)
    response.raise_for_status()
    return response.json()


def fresh_at(url: str, rid: str, head: str) -> bool:
    """Fresh at ``head``; False while the service does not know the repository yet."""
    known = {r["repo"]: r["freshness"] for r in get(url, "/repositories")["items"]}
    freshness = known.get(rid, {})
    return freshness.get("status") == "fresh" and freshness.get("indexed_commit") == head


def answers(url: str, rid: str, leave_out: tuple[str, ...] = ("freshness",)) -> dict:
    """What a replica says about a repository: counts, files and every file's detail."""
    page = get(url, f"/repositories/{rid}/files", limit=1000)
    details = {f["path"]: get(url, f"/repositories/{rid}/files/{f['path']}") for f in page["items"]}
    return {
        "summary": get(url, f"/repositories/{rid}"),
        "files": page["items"],
        "details": {
            path: {k: v for k, v in detail.items() if k not in leave_out}
            for path, detail in details.items()
        },
    }


def eventually(check: Callable[[], bool], timeout: float = 60.0, what: str = "it") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.1)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def processes_of(data_dir: Path) -> list[int]:
    """The live processes started for one test's data directory, found by the
    GAZETTEER_DATA_DIR their environment carries (a broker and a part inherit it), so
    that none escapes the check by having lost its parent."""
    marker = f"GAZETTEER_DATA_DIR={data_dir}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if marker in environ and pid_alive(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)
