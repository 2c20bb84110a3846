"""How fast the ``gazetteer`` command starts (issue 20).

    python -m tests.bench.cli_startup [--runs 15] [--code DIR] [--embedder none]

Each measured command is a fresh interpreter (``python -m deploy.cli ...``, as the
console script and ``up``'s children run it), repeated ``--runs`` times after one
unmeasured warm-up run, so the page cache and the bytecode caches are warm (the runs
write ``__pycache__`` even where PYTHONDONTWRITEBYTECODE is set, as an installed package
has its modules compiled) and the interpreter is cold:

- ``--help``: the parser alone;
- ``search``: a query against a running ``gazetteer up`` on a small generated repository
  (process start to exit; the service's own answer time, one GET from this process, is
  shown apart);
- ``mcp initialize``: ``gazetteer mcp`` spawned as an agent spawns it, from the spawn to
  the ``initialize`` answer on its stdout, and on to the ``tools/list`` answer.

Each row gives the median and the slowest run's wall time, and the median CPU time of the
process (user + system, from ``wait4``: what the machine's load cannot inflate); for
``initialize``, the CPU the server had spent when it answered (from /proc, Linux). ``--code``
measures another checkout's CLI (the ``up`` serving the queries is this checkout's), e.g.
a worktree of the commit before, for a before/after pair. The machine may be shared: the
load average is recorded with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx

from tests.bench import harness
from tests.bench.corpus import git
from tests.e2e.cli import Gazetteer

NAME = "cli_startup"
ROOT = Path(__file__).resolve().parents[2]
QUESTION = "parse the settings file"

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "cli_startup", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def small_repository(root: Path, files: int = 24) -> Path:
    """A git repository of ``files`` small Python modules that import each other."""
    root.mkdir(parents=True)
    for i in range(files):
        body = [f"from pkg.mod{(i + 1) % files} import helper{(i + 1) % files}", ""]
        body += [
            f"def helper{i}(value):",
            f'    """Parse the settings file, step {i}."""',
            f"    return helper{(i + 1) % files}(value) if value > {i} else value",
            "",
            f"class Reader{i}:",
            "    def read(self, path):",
            "        return open(path).read()",
        ]
        path = root / "pkg" / f"mod{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(body) + "\n")
    (root / "pkg" / "__init__.py").write_text("")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "small")
    return root


def _environment() -> dict[str, str]:
    """This process's environment, bytecode caching on: an installed package has its
    modules compiled (pip compiles them), and the warm-up run writes what is missing."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _cpu_s(usage: Any) -> float:
    return float(usage.ru_utime + usage.ru_stime)


def timed_command(code: Path, args: Sequence[str]) -> dict[str, float]:
    """One fresh ``python -m deploy.cli ARGS`` in ``code``: wall and CPU seconds."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", *args],
        cwd=code,
        env=_environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise RuntimeError(f"gazetteer {' '.join(args)} exited {proc.returncode}: {err[-500:]}")
    return {"wall_s": wall, "cpu_s": _cpu_s(usage)}


def timed_mcp(code: Path, url: str) -> dict[str, float]:
    """``gazetteer mcp`` as an agent spawns it: spawn -> initialize answer -> tools/list."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deploy.cli", "mcp", "--url", url],
        cwd=code,
        env=_environment(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(INITIALIZE) + "\n")
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    initialized = time.perf_counter() - started
    initialized_cpu = _cpu_so_far(proc.pid)
    if answer.get("id") != 1 or "result" not in answer:
        raise RuntimeError(f"initialize answered {answer}")
    proc.stdin.write(json.dumps(INITIALIZED) + "\n" + json.dumps(LIST_TOOLS) + "\n")
    proc.stdin.flush()
    tools = json.loads(proc.stdout.readline())
    listed = time.perf_counter() - started
    if len(tools.get("result", {}).get("tools", [])) == 0:
        raise RuntimeError(f"tools/list answered {str(tools)[:300]}")
    proc.stdin.close()  # end of input: the server stops
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return {
        "wall_s": initialized,
        "tools_s": listed,
        "cpu_s": _cpu_s(usage),
        "initialize_cpu_s": initialized_cpu,
    }


def _cpu_so_far(pid: int) -> float:
    """A running process's CPU seconds (user + system) from /proc (Linux), NaN elsewhere:
    what the server spent until it answered ``initialize``, its tool list not counted."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    # After the command's ")": state is field 3, utime and stime fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def repeat(measure: Callable[[], dict[str, float]], runs: int, label: str) -> dict[str, Any]:
    measure()  # warm-up: the page cache, the bytecode caches
    samples = [measure() for _ in range(runs)]
    walls = [s["wall_s"] for s in samples]
    summary: dict[str, Any] = {
        "what": label,
        "runs": runs,
        "median_s": statistics.median(walls),
        "max_s": max(walls),
        "median_cpu_s": statistics.median(s["cpu_s"] for s in samples),
        "load_avg": os.getloadavg()[0],
    }
    if "tools_s" in samples[0]:
        summary["tools_median_s"] = statistics.median(s["tools_s"] for s in samples)
        summary["initialize_median_cpu_s"] = statistics.median(
            s["initialize_cpu_s"] for s in samples
        )
    harness.progress(f"{label}: {summary}")
    return summary


def _fresh(url: str) -> str | None:
    try:
        items = httpx.get(f"{url}/repositories", timeout=10).json().get("items", [])
    except httpx.HTTPError:
        return None
    fresh = [i for i in items if i["freshness"]["status"] == "fresh"]
    return fresh[0]["repo"] if fresh else None


def _wait_fresh(url: str, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        repo = _fresh(url)
        if repo is not None:
            return repo
        time.sleep(0.2)
    raise TimeoutError(f"no repository fresh at {url} within {timeout} s")


def run(args: argparse.Namespace) -> dict[str, Any]:
    code = args.code.resolve()
    rows = [repeat(lambda: timed_command(code, ["--help"]), args.runs, "gazetteer --help")]
    with tempfile.TemporaryDirectory(prefix="gz-cli-startup-") as tmp:
        repo_root = small_repository(Path(tmp) / "small")
        env = {"GAZETTEER_EMBEDDER": args.embedder, "GAZETTEER_LOG_LEVEL": "warning"}
        up = Gazetteer(["up", str(repo_root), "--port", "0"], Path(tmp) / "data", **env)
        try:
            url = up.url(timeout=args.timeout)
            repo = _wait_fresh(url, args.timeout)
            query = ["search", repo, QUESTION, "--url", url]
            rows.append(repeat(lambda: timed_command(code, query), args.runs, "gazetteer search"))
            answers = []
            for _ in range(args.runs):
                started = time.perf_counter()
                httpx.get(f"{url}/repositories/{repo}/search", params={"q": QUESTION})
                answers.append(time.perf_counter() - started)
            service_s = statistics.median(answers)
            rows.append(repeat(lambda: timed_mcp(code, url), args.runs, "gazetteer mcp"))
        finally:
            up.interrupt(timeout=60)
            up.kill()
    table = harness.markdown_table(
        ["command", "median (s)", "slowest (s)", "median CPU (s)", "runs"],
        [
            ["gazetteer --help", *_cells(rows[0])],
            [f"gazetteer search (service's answer {service_s:.3f} s)", *_cells(rows[1])],
            [
                "gazetteer mcp: spawn to initialize answer",
                rows[2]["median_s"],
                rows[2]["max_s"],
                rows[2]["initialize_median_cpu_s"],
                rows[2]["runs"],
            ],
            [
                "gazetteer mcp: spawn to tools/list answer (CPU: the whole process)",
                rows[2]["tools_median_s"],
                "",
                rows[2]["median_cpu_s"],
                "",
            ],
        ],
    )
    print(table)
    return {
        "benchmark": NAME,
        "machine": harness.machine(),
        "code": str(code),
        "embedder": args.embedder,
        "service_answer_median_s": service_s,
        "rows": rows,
        "table": table,
    }


def _cells(row: dict[str, Any]) -> list[object]:
    return [row["median_s"], row["max_s"], row["median_cpu_s"], row["runs"]]


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per command")
    parser.add_argument(
        "--code", type=Path, default=ROOT, help="the checkout whose CLI is measured"
    )
    parser.add_argument("--embedder", default="none", help="GAZETTEER_EMBEDDER of the `up`")
    parser.add_argument("--timeout", type=float, default=180.0)
    args = parser.parse_args()
    path = harness.write_json(f"{NAME}-{args.code.resolve().name}", run(args))
    harness.progress(f"wrote {path}")


if __name__ == "__main__":
    main()
