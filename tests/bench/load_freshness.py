"""Truth under load: saves while clients hammer `gazetteer up`, every answer judged.

    python -m tests.bench.load_freshness --corpus django --clients 20 0 --edits 20

Method. A private clone of the django corpus (`tests.bench.corpus`) is served by a real
``gazetteer up`` process (`tests.e2e.cli.Gazetteer`; its own embedded broker unless
``--broker kafka://...``), driven from outside only: HTTP on loopback, the files on
disk, and the checker's own consumer of the sources and file-events topics
(`tests.bench.load_phase.TopicTap`). Once the repository is ``fresh`` at its head, one
phase per ``--clients`` value runs, in order, against the same process: that many
closed-loop clients (search 50%, context 20%, file details 30%; half of them about the
latest save's probe) while ``--edits`` .py files (a seeded sample, distinct per phase)
are saved one at a time and polled until their details show the new hash. The rule
that judges the answers is `tests.freshness_checker` (its docstring states it exactly):
a VIOLATION is an answer requested after the producer's status covering a save reached
the checker's consumer (plus ``--allowance-ms``) that says ``fresh`` and shows an older
version of that file.

Reported per phase: search / context / file-details latency p50/p95/p99 and
throughput (load clients only), edit -> visible p50/p95/max (the first answer of any
client showing the new version), write -> seen (the status received) and write ->
emitted (the producer's own stamp), answers by status, answers judged (requested after
a due save of a file they show) and old among them, by status, and the violations.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import httpx

from deploy.listener import listen
from tests.bench import harness
from tests.bench.corpus import clone, django_repo, git
from tests.bench.freshness_latency import percentile
from tests.bench.harness import progress
from tests.bench.load_phase import EDITOR, PhaseOptions, PhaseResult, TopicTap, run_phase
from tests.e2e.cli import Gazetteer

NAME = "load_freshness"
KINDS = ("search", "context", "file")


@dataclass(frozen=True, slots=True)
class RunningUp:
    process: Gazetteer
    url: str
    bootstrap: str
    namespace: str


@contextlib.contextmanager
def gazetteer_up(
    root: Path, data_dir: Path, broker: str | None = None, env: dict[str, str] | None = None
) -> Iterator[RunningUp]:
    """``gazetteer up ROOT --port 0`` as a user runs it, in a fresh topic namespace; the
    broker's address is ``broker`` or, for its own embedded broker, the port its
    ``broker_started`` log line names."""
    namespace = f"lf{uuid.uuid4().hex[:10]}"
    args = [*(["--broker", broker] if broker else []), "up", str(root), "--port", "0"]
    extra = {"GAZETTEER_NAMESPACE": namespace, "GAZETTEER_LOG_FORMAT": "json", **(env or {})}
    up = Gazetteer(args, data_dir, **extra)
    try:
        url = up.url(timeout=120)
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError(f"the query service is not on loopback: {url}")
        if broker:
            bootstrap = broker.removeprefix("kafka://")
        else:
            started = up.log_events("broker_started")
            if not started:
                raise RuntimeError("gazetteer up logged no broker_started line")
            bootstrap = f"127.0.0.1:{started[0]['port']}"
        yield RunningUp(up, url, bootstrap, namespace)
    finally:
        with contextlib.suppress(Exception):
            up.interrupt()
        up.kill()


class ServeProcess(Gazetteer):
    """A ``gazetteer`` process that inherits file descriptors (a listening socket)."""

    def __init__(
        self, args: list[str], data_dir: Path, pass_fds: tuple[int, ...], **env: str
    ) -> None:
        self.args = args
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deploy.cli", *args],
            env={**os.environ, "GAZETTEER_DATA_DIR": str(data_dir), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=pass_fds,
        )
        self.stdout, self.stderr = [], []
        for stream, sink in ((self.proc.stdout, self.stdout), (self.proc.stderr, self.stderr)):
            threading.Thread(target=self._drain, args=(stream, sink), daemon=True).start()


@contextlib.contextmanager
def serve_replicas(
    count: int, bootstrap: str, namespace: str, data_dir: Path
) -> Iterator[tuple[str, list[ServeProcess]]]:
    """``count`` query processes (``gazetteer serve``) sharing one listening socket, as
    ``up`` would run them with a second query process (issue 15): the kernel hands each
    connection to whichever process accepts it. Each has its own data directory (its
    own embedding cache), the topics of ``namespace`` and the default embedder."""
    sock = listen("127.0.0.1", 0)
    fd = sock.fileno()
    os.set_inheritable(fd, True)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    replicas: list[ServeProcess] = []
    try:
        for n in range(count):
            args = ["--broker", f"kafka://{bootstrap}", "serve", "--listen-fd", str(fd)]
            env = {"GAZETTEER_NAMESPACE": namespace, "GAZETTEER_LOG_FORMAT": "json"}
            replicas.append(ServeProcess(args, data_dir / f"replica-{n}", (fd,), **env))
        for replica in replicas:
            replica.url(timeout=120)
        yield url, replicas
    finally:
        for replica in replicas:
            with contextlib.suppress(Exception):
                replica.interrupt()
            replica.kill()
        sock.close()


def rss_mb(pid: int) -> float:
    """A process's resident memory, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def serve_child(up: Gazetteer) -> int | None:
    """The pid of ``up``'s query process (its child running ``serve``)."""
    for stat in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            argv = stat.read_bytes().split(b"\0")
            pid = int(stat.parent.name)
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == up.pid and b"serve" in argv:
                return pid
    return None


async def wait_fresh(url: str, root: Path, head: str, timeout: float, consecutive: int = 1) -> str:
    """The repository id once ``/repositories`` says it is fresh at ``head``
    (``consecutive`` times in a row: behind a shared socket, each answer may come from
    another replica)."""
    deadline, items, streak = time.monotonic() + timeout, [], 0
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        while time.monotonic() < deadline:
            found = None
            with contextlib.suppress(httpx.HTTPError):
                items = (await http.get("/repositories")).json().get("items", [])
                for item in items:
                    fresh = item["freshness"]
                    # Matched by root where the service shows it, else by name.
                    mine = item.get("root", str(root)) == str(root)
                    mine = mine and item.get("name", root.name) == root.name
                    if mine and fresh["status"] == "fresh":
                        if fresh["indexed_commit"] == head:
                            found = str(item["repo"])
            streak = streak + 1 if found else 0
            if found and streak >= consecutive:
                return found
            await asyncio.sleep(0.2 if not found else 0.02)
    raise TimeoutError(f"{root} was not fresh at {head} within {timeout} s: {items}")


def python_files(root: Path) -> list[str]:
    return sorted(p for p in git(root, "ls-files", "*.py").splitlines() if p)


def questions_of(paths: Sequence[str], count: int = 50, seed: int = 0) -> list[str]:
    """Search questions from file names: ``django/db/models/query.py`` -> 'models query'."""
    words = [" ".join(p.removesuffix(".py").split("/")[-2:]).replace("_", " ") for p in paths]
    return random.Random(seed).sample(words, min(count, len(words)))


def split_targets(paths: Sequence[str], phases: int, edits: int, seed: int) -> list[list[str]]:
    """Distinct files per phase (a seeded sample; small files first would bias nothing)."""
    sample = random.Random(seed).sample(list(paths), min(len(paths), phases * edits))
    return [[sample[(i * edits + j) % len(sample)] for j in range(edits)] for i in range(phases)]


def summarize(result: PhaseResult) -> dict[str, Any]:
    """The phase's numbers, as reported (times in ms)."""
    verdict, answers = result.verdict, result.answers
    summary: dict[str, Any] = {
        "clients": result.options.clients,
        "duration_s": result.duration_s,
        "truncated": result.truncated,
    }
    for kind in KINDS:
        mine = [a for a in answers if a.kind == kind and a.client != EDITOR]
        took = [(a.received_at - a.sent_at) * 1000 for a in mine]
        for q in (50, 95, 99):
            summary[f"{kind}_p{q}_ms"] = percentile(took, q)
        summary[f"{kind}_requests"] = len(mine)
        summary[f"{kind}_per_s"] = len(mine) / result.duration_s
        summary[f"{kind}_errors"] = sum(1 for a in mine if a.status is None)
    saves = verdict.saves
    for name in ("visible_ms", "seen_ms", "emitted_ms"):
        values = [getattr(s, name) for s in saves if not math.isnan(getattr(s, name))]
        summary[f"{name}_p50"] = percentile(values, 50)
        summary[f"{name}_p95"] = percentile(values, 95)
        summary[f"{name}_max"] = max(values, default=math.nan)
    summary.update(
        saves=len(saves),
        not_seen=verdict.not_seen,
        not_visible=verdict.not_visible,
        answers_by_status=verdict.answers_by_status,
        judged_by_status=verdict.judged_by_status,
        old_after_due_by_status=verdict.old_after_due_by_status,
        violations=len(verdict.violations),
        editor_polls=sum(1 for a in answers if a.client == EDITOR),
    )
    return summary


ROWS = [
    ("search p50 / p95 / p99 ms", "search_p{}_ms", (50, 95, 99)),
    ("context p50 / p95 / p99 ms", "context_p{}_ms", (50, 95, 99)),
    ("file details p50 / p95 / p99 ms", "file_p{}_ms", (50, 95, 99)),
    ("edit -> visible p50 / p95 / max ms", "visible_ms_{}", ("p50", "p95", "max")),
    ("write -> seen (status received) p50 / p95 / max ms", "seen_ms_{}", ("p50", "p95", "max")),
    ("write -> emitted p50 / p95 / max ms", "emitted_ms_{}", ("p50", "p95", "max")),
]


def report(summaries: Sequence[dict[str, Any]]) -> str:
    """One column per phase, side by side."""
    header = ["", *(f"{s['clients']} clients" for s in summaries)]
    rows: list[list[object]] = [
        [label, *(" / ".join(_ms(s[key.format(q)]) for q in qs) for s in summaries)]
        for label, key, qs in ROWS
    ]
    for kind in KINDS:
        rows.append([f"{kind} req/s (errors)", *(
            f"{s[f'{kind}_per_s']:.1f} ({s[f'{kind}_errors']})" for s in summaries
        )])  # fmt: skip
    rows += [
        ["saves (not seen, not visible)", *(
            f"{s['saves']} ({s['not_seen']}, {s['not_visible']})" for s in summaries
        )],
        ["answers by status", *(_counts(s["answers_by_status"]) for s in summaries)],
        ["judged (after a due save)", *(_counts(s["judged_by_status"]) for s in summaries)],
        ["old content among judged", *(_counts(s["old_after_due_by_status"]) for s in summaries)],
        ["VIOLATIONS (fresh + old)", *(s["violations"] for s in summaries)],
        ["phase s (truncated)", *(f"{s['duration_s']:.0f} ({s['truncated']})" for s in summaries)],
        ["query process RSS MB (each)", *(
            " + ".join(f"{m:.0f}" for m in s.get("serve_rss_mb", [])) or "-" for s in summaries
        )],
    ]  # fmt: skip
    return harness.markdown_table(header, rows)


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0f}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = django_repo()
    progress(f"corpus: django {corpus.version}, {corpus.files} files, {corpus.mb:.1f} MB")
    env = dict(pair.split("=", 1) for pair in args.env)
    with tempfile.TemporaryDirectory(prefix="gazetteer-load-") as tmp:
        work = clone(corpus, Path(tmp) / "django")
        head = git(work.root, "rev-parse", "HEAD")
        paths = python_files(work.root)
        targets = split_targets(paths, len(args.clients), args.edits, args.seed)
        if args.replicas:  # up's own query process idles: no embedding, no clients
            env.setdefault("GAZETTEER_EMBEDDER", "none")
        with contextlib.ExitStack() as running:
            up = running.enter_context(
                gazetteer_up(work.root, Path(tmp) / "data", args.broker, env)
            )
            url, replicas = up.url, list[ServeProcess]()
            if args.replicas:
                url, replicas = running.enter_context(
                    serve_replicas(args.replicas, up.bootstrap, up.namespace, Path(tmp))
                )
                progress(f"{args.replicas} query processes share {url}")
            started = time.monotonic()
            repo = await wait_fresh(
                url, work.root, head, args.index_timeout_s, consecutive=1 + 4 * args.replicas
            )
            fresh_s = time.monotonic() - started
            progress(f"{repo} fresh {fresh_s:.0f} s after the service listened")
            tap = TopicTap(up.bootstrap, up.namespace)
            tap.start()
            summaries: list[dict[str, Any]] = []
            violations: list[list[dict[str, Any]]] = []
            saves: list[list[dict[str, Any]]] = []
            try:
                for i, clients in enumerate(args.clients):
                    options = PhaseOptions(
                        clients=clients,
                        first_number=1 + i * args.edits,
                        allowance_s=args.allowance_ms / 1000,
                        edit_timeout_s=args.edit_timeout_s,
                        max_phase_s=args.max_phase_s,
                        seed=args.seed,
                    )
                    progress(f"phase {i + 1}: {clients} clients, {args.edits} edits")
                    result = await run_phase(
                        url, repo, work.root, tap, targets[i], questions_of(paths), paths,
                        options,
                    )  # fmt: skip
                    summaries.append(summarize(result))
                    own = serve_child(up.process)
                    summaries[-1]["serve_rss_mb"] = [
                        rss_mb(p) for p in [r.pid for r in replicas] or ([own] if own else [])
                    ]
                    violations.append([asdict(v) for v in result.verdict.violations[:50]])
                    saves.append([asdict(o) for o in result.verdict.saves])
                    progress(f"phase {i + 1}: {summaries[-1]['violations']} violations")
            finally:
                tap.stop()
    print(report(summaries))
    return {
        "benchmark": NAME,
        "corpus": {k: getattr(corpus, k) for k in ("version", "files", "py_files", "bytes")},
        "options": {k: v for k, v in vars(args).items()},
        "machine": harness.machine(),
        "index_fresh_s": fresh_s,
        "phases": summaries,
        "violations_first_50": violations,
        "saves": saves,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--corpus", choices=("django",), default="django")
    parser.add_argument("--clients", type=int, nargs="+", default=[20, 0])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--allowance-ms", type=float, default=500.0)
    parser.add_argument("--edit-timeout-s", type=float, default=30.0)
    parser.add_argument("--max-phase-s", type=float, default=900.0)
    parser.add_argument("--index-timeout-s", type=float, default=1800.0)
    parser.add_argument("--broker", help="kafka://host:port (default: up's embedded broker)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE for up")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--replicas",
        type=int,
        default=0,
        help="N query processes sharing one socket serve the clients (up's own idles)",
    )
    args = parser.parse_args()
    path = harness.write_json(NAME, asyncio.run(run(args)))
    progress(f"wrote {path}")


if __name__ == "__main__":
    main()
