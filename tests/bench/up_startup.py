"""``gazetteer up``'s start-up: from its process start to the first scan (issue 21).

    python -m tests.bench.up_startup [--runs 5] [--code DIR] [--embedder NAME]

Each run starts a real ``python -m deploy.cli up REPO --port 0`` (as a user types it,
``GAZETTEER_LOG_FORMAT=json``, a fresh ``GAZETTEER_DATA_DIR``) on a small generated git
repository (`cli_startup.small_repository`: the scan itself is trivial), reads its log
lines as they come, and stops everything once the producers log ``scan_started``
(producers/scan.py): that moment ends the start-up. One unmeasured warm-up run first,
so the page cache and the bytecode caches are warm (written even where
PYTHONDONTWRITEBYTECODE is set, as an installed package has its modules compiled).

Phases, in seconds from the process's start (the log's UTC timestamps against the
wall clock at the spawn), each child's lines told apart by their ``part`` key
(deploy/logging_setup.py):

- ``up_imports_s``: the interpreter and ``up``'s imports, to the broker's launch
  (``broker_started`` less its ``startup_ms``);
- ``broker_s``: Tansu launched to answering the Kafka protocol (``startup_ms``);
- per child (``watch``, ``worker``, ``serve``): ``spawned_s`` (``part_started``) and
  ``first_line_s``, from its spawn to its first log line (its interpreter, imports,
  settings);
- the producers' path: ``watch_connected_s`` (topics ensured, ``broker_connected``),
  ``watch_state_read_s`` (``materializer_ready``), ``source_started_s`` and
  ``scan_started_s``, the total.

CPU seconds (user + system, from /proc, Linux) of ``up``, the broker and each child
as ``scan_started`` is read, since a loaded machine stretches the wall times and not
these. ``--code`` measures another checkout (e.g. a worktree of the commit before). The
machine may be shared: the load average is recorded with every run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.bench import harness
from tests.bench.cli_startup import small_repository
from tests.e2e.cli import Gazetteer

NAME = "up_startup"
ROOT = Path(__file__).resolve().parents[2]
ROLES = ("watch", "worker", "serve")
WATCH_STEPS = {
    "watch_connected_s": "broker_connected",
    "watch_state_read_s": "materializer_ready",
    "source_started_s": "source_started",
    "scan_started_s": "scan_started",
}


def records(lines: list[str]) -> list[dict[str, Any]]:
    """The JSON log lines, each with ``t`` (its timestamp, seconds since the epoch)."""
    found = []
    for line in list(lines):
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:  # a line still being written
            continue
        stamp = datetime.datetime.fromisoformat(record["timestamp"].replace("Z", "+00:00"))
        record["t"] = stamp.timestamp()
        found.append(record)
    return found


def first(found: list[dict[str, Any]], event: str, part: str | None = None) -> dict[str, Any]:
    for record in found:
        if record.get("event") == event and (part is None or record.get("part") == part):
            return record
    raise LookupError(f"no {event!r} line" + (f" of the {part}" if part else ""))


def phases(found: list[dict[str, Any]], started: float) -> dict[str, float]:
    """What the log says of one start-up, in seconds from ``started``."""
    broker = first(found, "broker_started")
    launched = broker["t"] - broker["startup_ms"] / 1000
    out = {"up_imports_s": launched - started, "broker_s": broker["startup_ms"] / 1000}
    for role in ROLES:
        spawned = next(
            r for r in found if r.get("event") == "part_started" and r.get("role") == role
        )
        out[f"{role}_spawned_s"] = spawned["t"] - started
        lines = [r for r in found if r.get("part") == role]
        if lines:
            out[f"{role}_first_line_s"] = lines[0]["t"] - spawned["t"]
    for key, event in WATCH_STEPS.items():
        out[key] = first(found, event, "watch")["t"] - started
    return out


def one_run(code: Path, repo: Path, data: Path, env: dict[str, str], timeout: float) -> dict:
    started = time.time()
    up = Gazetteer(
        ["up", str(repo), "--port", "0"],
        data,
        cwd=str(code),
        GAZETTEER_LOG_FORMAT="json",
        **env,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            found = records(up.stderr)
            if any(r.get("event") == "scan_started" for r in found):
                break
            if up.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"no scan_started (exit {up.proc.poll()}): {''.join(up.stderr[-20:])}"
                )
            time.sleep(0.005)
        pids = {r["role"]: r["pid"] for r in found if r.get("event") == "part_started"}
        pids["up"] = up.pid
        pids["broker"] = first(found, "broker_started")["pid"]
        cpu = {f"{name}_cpu_s": harness.process_cpu_s(pid) for name, pid in sorted(pids.items())}
        load = os.getloadavg()[0]
    finally:
        up.interrupt(timeout=60)
        up.kill()
    result: dict[str, Any] = phases(records(up.stderr), started)
    result.update(cpu)
    result["cpu_s"] = sum(cpu.values())
    result["load_avg"] = load
    harness.progress(
        f"scan started at {result['scan_started_s']:.2f} s, CPU {result['cpu_s']:.2f} s "
        f"(watch {result['watch_cpu_s']:.2f}), load {load:.1f}"
    )
    return result


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    keys = [k for k in runs[0] if all(k in run for run in runs)]
    return {
        key: {
            "median": statistics.median(run[key] for run in runs),
            "max": max(run[key] for run in runs),
        }
        for key in keys
    }


ROWS = [
    ("interpreter + `up`'s imports", "up_imports_s"),
    ("broker (Tansu) up", "broker_s"),
    *[(f"{role} spawned", f"{role}_spawned_s") for role in ROLES],
    *[(f"{role}: spawn to its first log line", f"{role}_first_line_s") for role in ROLES],
    ("watch: topics ensured (broker_connected)", "watch_connected_s"),
    ("watch: state read (materializer_ready)", "watch_state_read_s"),
    ("watch: source_started", "source_started_s"),
    ("**scan_started** (the start-up)", "scan_started_s"),
    ("CPU s: up", "up_cpu_s"),
    ("CPU s: broker", "broker_cpu_s"),
    *[(f"CPU s: {role}", f"{role}_cpu_s") for role in ROLES],
    ("CPU s: all", "cpu_s"),
    ("load average (1 min)", "load_avg"),
]


def run(args: argparse.Namespace) -> dict[str, Any]:
    code = args.code.resolve()
    # Bytecode caching on, in the processes started (`cli_startup._environment`): an
    # installed package has its modules compiled, and the warm-up run writes them.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    env = {"GAZETTEER_EMBEDDER": args.embedder} if args.embedder else {}
    with tempfile.TemporaryDirectory(prefix="gz-up-startup-") as tmp:
        repo = small_repository(Path(tmp) / "small")
        one_run(code, repo, Path(tmp) / "warm-up", env, args.timeout)
        runs = [
            one_run(code, repo, Path(tmp) / f"data-{i}", env, args.timeout)
            for i in range(args.runs)
        ]
    stats = summary(runs)
    table = harness.markdown_table(
        ["phase (s from `up`'s start; CPU s at scan start)", "median", "worst"],
        [[label, stats[key]["median"], stats[key]["max"]] for label, key in ROWS if key in stats],
    )
    print(table)
    return {
        "benchmark": NAME,
        "machine": harness.machine(),
        "code": str(code),
        "embedder": args.embedder or "(Settings' default)",
        "runs": runs,
        "summary": stats,
        "table": table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="measured start-ups")
    parser.add_argument(
        "--code", type=Path, default=ROOT, help="the checkout whose `up` is measured"
    )
    parser.add_argument(
        "--embedder", help="GAZETTEER_EMBEDDER of the `up` (default: unset, as a newcomer's)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="per start-up")
    args = parser.parse_args()
    path = harness.write_json(f"{NAME}-{args.code.resolve().name}", run(args))
    harness.progress(f"wrote {path}")


if __name__ == "__main__":
    main()
