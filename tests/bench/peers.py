"""The peers of issue 21's first-index benchmark, each in a virtual environment of its own.

- vortexa 0.3.7: its cold index of a tree, BM25 only, offline
  (`peer_drivers/vortexa_index.py`: the CLI's `CodebaseIndexer.index()`, with a
  stand-in encoder where the CLI would fetch embedding weights from a model hub);
- Aider's repo map (aider-chat from PyPI): `aider.repomap.RepoMap` with a token budget
  and no files in the chat, cold (`peer_drivers/aider_repo_map.py`).

Each peer is installed with pip, at a pinned version, into
``~/.cache/gazetteer/peers/NAME-VERSION`` (or found there, at that version), never into
the project's environment. A run is one fresh process of the peer's interpreter, timed
from its start to its exit, its peak RSS read from the kernel (`os.wait4`); the driver's
last stdout line is JSON, parsed by `driver_report`, and Aider's map text by
`repo_map_files`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.harness import progress

PEERS_DIR = Path.home() / ".cache" / "gazetteer" / "peers"
DRIVERS = Path(__file__).with_name("peer_drivers")
AIDER_CACHE = ".aider.tags.cache.v4"
# No peer reaches the network: a hub or model-metadata fetch fails at once, not in retries.
OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "AIDER_ANALYTICS": "false",
    "AIDER_CHECK_UPDATE": "false",
}


@dataclass(frozen=True, slots=True)
class Peer:
    """A package from PyPI at a pinned version, and the module that proves it installed."""

    package: str
    version: str
    module: str

    @property
    def home(self) -> Path:
        return PEERS_DIR / f"{self.package}-{self.version}"

    @property
    def python(self) -> Path:
        return self.home / "bin" / "python"


VORTEXA = Peer("vortexa", "0.3.7", "vortexa")
AIDER = Peer("aider-chat", "0.86.2", "aider")


def installed_version(peer: Peer) -> str | None:
    """The version the peer's venv holds, None where there is no such venv."""
    if not peer.python.exists():
        return None
    probe = f"from importlib.metadata import version; print(version({peer.package!r}))"
    done = subprocess.run([str(peer.python), "-c", probe], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def ensure(peer: Peer) -> str:
    """The peer's venv at its pinned version: found, or made now (pip, the index)."""
    found = installed_version(peer)
    if found == peer.version:
        return found
    progress(f"installing {peer.package}=={peer.version} into {peer.home}")
    shutil.rmtree(peer.home, ignore_errors=True)
    peer.home.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(peer.home)], check=True)
    pip = [str(peer.python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{peer.package}=={peer.version}"], check=True)
    found = installed_version(peer)
    if found != peer.version:
        raise RuntimeError(f"{peer.home} holds {peer.package} {found}, not {peer.version}")
    return found


@dataclass(frozen=True, slots=True)
class Measured:
    """One process: wall seconds from its start to its exit, peak RSS, its output."""

    seconds: float
    peak_rss_mb: float
    exit_code: int
    stdout: str
    stderr: str


def run_measured(
    argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 900.0
) -> Measured:
    """Run ``argv`` to its end (killed past ``timeout``), its peak RSS from `os.wait4`."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, env={**os.environ, **env}, stdout=out, stderr=err)
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        seconds = time.monotonic() - started
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0), err.seek(0)
        # ru_maxrss is in KiB on Linux.
        return Measured(seconds, usage.ru_maxrss / 1024, proc.returncode, out.read(), err.read())


def driver_report(stdout: str) -> dict[str, Any]:
    """The JSON object on a driver's last non-empty stdout line (libraries may print
    before it)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ValueError("the driver printed nothing")
    report = json.loads(lines[-1])
    if not isinstance(report, dict):
        raise ValueError(f"the driver's last line is not a JSON object: {lines[-1]!r}")
    return report


def repo_map_files(text: str) -> list[str]:
    """The files an Aider repo map shows, in its order: a file with tags is a line
    ``path:`` followed by its ``│`` and ``⋮`` lines; one without, a bare ``path`` line."""
    files = []
    for line in text.splitlines():
        if not line.strip() or line.startswith(("│", "⋮")):
            continue
        files.append(line[:-1] if line.endswith(":") else line)
    return files


def vortexa_index(root: Path, work: Path) -> dict[str, Any]:
    """vortexa's cold index of ``root`` into an empty index directory under ``work``."""
    index_dir = work / "vortexa-index"
    shutil.rmtree(index_dir, ignore_errors=True)
    driver = str(DRIVERS / "vortexa_index.py")
    done = run_measured([str(VORTEXA.python), driver, str(root), str(index_dir)], work, OFFLINE)
    shutil.rmtree(index_dir, ignore_errors=True)
    return _result(done, "vortexa")


def aider_repo_map(root: Path, work: Path, map_tokens: int) -> dict[str, Any]:
    """Aider's repo map of ``root``, its tags cache removed first (cold) and after."""
    shutil.rmtree(root / AIDER_CACHE, ignore_errors=True)
    out = work / "aider-map.txt"
    driver = str(DRIVERS / "aider_repo_map.py")
    argv = [str(AIDER.python), driver, str(root), str(map_tokens), str(out)]
    done = run_measured(argv, work, OFFLINE)
    shutil.rmtree(root / AIDER_CACHE, ignore_errors=True)
    result = _result(done, "aider")
    result["files_in_map"] = len(repo_map_files(out.read_text())) if out.exists() else 0
    return result


def _result(done: Measured, name: str) -> dict[str, Any]:
    if done.exit_code != 0:
        raise RuntimeError(f"{name} exited {done.exit_code}: {done.stderr[-2000:]}")
    return {"s": done.seconds, "peak_rss_mb": done.peak_rss_mb, **driver_report(done.stdout)}
