"""Freshness latency: a file is saved, and how long until the query service shows it.

    python -m tests.bench.freshness_latency --broker both --edits 100

Method. For each broker (the embedded Tansu, Apache Kafka 4.4): a private clone of
the django corpus is scanned until its freshness is ``fresh`` (worker joined first,
as in `tests.bench.scan_throughput`). Then ``--edits`` real .py files (a seeded
sample) are edited one at a time: the file is rewritten with a new function appended
(``def _bench_edit_<i>(): pass``), the time taken right after the write, and the
query service polled over HTTP (``GET /repositories/{repo}/files/{path}``, httpx,
every ``--poll-ms``) until the file's ``content_hash`` is the sha256 of the written
bytes. Latency = the time that answer arrived - the write time. A pause
(``--pause-ms``) separates edits, so that each measures one edit alone.

Where the time goes, per edit, from the stamps the pipeline itself leaves (all
``time.time()`` in this one process): ``watch`` = write -> the producer stamps the
event (file-system notification, the watcher's debounce, git calls, the read);
``worker`` = stamped -> the worker applied it (broker, decode, parse, index);
``read side`` = applied -> the read model folded the delta (publish, fetch, decode);
``http`` = folded -> the poll that showed it (the poll interval and one GET).

Target: p95 under 1 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import math
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from deploy.logging_setup import configure_logging
from producers.session import describe_repository
from query.read_model import ReadModel
from stores.deltas import GraphDelta
from tests.bench import harness
from tests.bench.corpus import Corpus, clone, django_repo, git
from tests.bench.harness import progress

NAME = "freshness_latency"
EDIT_TIMEOUT_S = 30.0
STAGES = ("watch_ms", "worker_ms", "read_side_ms", "http_ms")


class StampedReadModel(ReadModel):
    """A ReadModel that notes when each file version arrived, with its delta's stamps."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: dict[tuple[str, str | None], tuple[float, float, float]] = {}

    def apply_delta(self, delta: GraphDelta) -> bool:
        applied = super().apply_delta(delta)
        if applied:
            stamps = (delta.source.emitted_at, delta.applied_at, time.time())
            for record in delta.files_upserted:
                self.arrived.setdefault((record.path, record.content_hash), stamps)
        return applied


def edit_targets(corpus: Corpus, edits: int, seed: int = 0) -> list[str]:
    """``edits`` .py files of the corpus, a seeded sample (cycled past their number)."""
    paths = sorted(p for p in git(corpus.root, "ls-files", "*.py").splitlines() if p)
    sample = random.Random(seed).sample(paths, min(edits, len(paths)))
    return [sample[i % len(sample)] for i in range(edits)]


async def edit_once(
    client: httpx.AsyncClient,
    model: StampedReadModel,
    root: Path,
    url: str,
    path: str,
    number: int,
    poll_s: float,
) -> dict[str, Any]:
    """Save one edit and poll until the query service shows it."""
    data = (root / path).read_bytes() + f"\n\ndef _bench_edit_{number}():\n    pass\n".encode()
    want = hashlib.sha256(data).hexdigest()
    (root / path).write_bytes(data)
    written = time.time()
    get_s: list[float] = []
    errors: dict[str, int] = {}
    shown = math.nan
    while time.time() - written < EDIT_TIMEOUT_S:
        started = time.perf_counter()
        response = await client.get(url)
        get_s.append(time.perf_counter() - started)
        if response.status_code != 200:
            errors[str(response.status_code)] = errors.get(str(response.status_code), 0) + 1
        elif response.json()["content_hash"] == want:
            shown = time.time()
            break
        await asyncio.sleep(poll_s)
    emitted, applied, folded = model.arrived.get((path, want), (math.nan,) * 3)
    return {
        "path": path,
        "latency_ms": (shown - written) * 1000,
        "watch_ms": (emitted - written) * 1000,
        "worker_ms": (applied - emitted) * 1000,
        "read_side_ms": (folded - applied) * 1000,
        "http_ms": (shown - folded) * 1000,
        "polls": len(get_s),
        "get_ms_median": statistics.median(get_s) * 1000,
        "http_errors": errors,
    }


async def run_edits(
    bench: harness.BenchStack, corpus: Corpus, repo: str, args: argparse.Namespace
) -> list[dict[str, Any]]:
    model = bench.model
    assert isinstance(model, StampedReadModel)
    results = []
    async with httpx.AsyncClient(base_url=bench.url, timeout=10) as client:
        for number, path in enumerate(edit_targets(corpus, args.edits), start=1):
            url = f"/repositories/{repo}/files/{path}"
            result = await edit_once(
                client, model, corpus.root, url, path, number, args.poll_ms / 1000
            )
            results.append(result)
            if number % 10 == 0 or math.isnan(result["latency_ms"]):
                progress(f"edit {number}/{args.edits}: {result['latency_ms']:.0f} ms ({path})")
            await asyncio.sleep(args.pause_ms / 1000)
    return results


async def bench_broker(kind: str, corpus: Corpus, args: argparse.Namespace) -> dict[str, Any]:
    """Index a private clone until fresh, then edit it ``--edits`` times."""
    async with harness.running_broker(kind) as broker:
        with tempfile.TemporaryDirectory(prefix="gazetteer-bench-") as tmp:
            work = clone(corpus, Path(tmp) / "django")
            settings = harness.bench_settings(broker.bootstrap, Path(tmp) / "data")
            bench = await harness.open_bench_stack(settings, StampedReadModel())
            repo, _, head = describe_repository(work.root)
            try:
                started = time.monotonic()
                await bench.stack.start_sources([work.root])
                marks = await harness.wait_fresh(bench.model, repo, head, work.files + 1, started)
                progress(f"{kind}: {repo} fresh after {marks.fresh_s:.1f} s; editing")
                edits = await run_edits(bench, work, repo, args)
                counters = bench.counters()
            finally:
                await bench.stack.close()
    return {
        "worker_join_s": bench.worker_join_s,
        "scan_fresh_s": marks.fresh_s,
        "debounce_ms": settings.debounce_ms,
        "summary": summarize(edits),
        "counters": counters,
        "edits": edits,
    }


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (as numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summarize(edits: list[dict[str, Any]]) -> dict[str, Any]:
    shown = [e for e in edits if not math.isnan(e["latency_ms"])]
    latency = [e["latency_ms"] for e in shown]
    summary: dict[str, Any] = {
        "edits": len(edits),
        "not_shown": len(edits) - len(shown),
        "p50_ms": percentile(latency, 50),
        "p95_ms": percentile(latency, 95),
        "max_ms": max(latency, default=math.nan),
        "mean_ms": statistics.fmean(latency) if latency else math.nan,
        "get_ms_median": statistics.median(e["get_ms_median"] for e in edits),
        "polls_median": statistics.median(e["polls"] for e in edits),
        "http_errors": sum(sum(e["http_errors"].values()) for e in edits),
    }
    for stage in STAGES:
        values = [e[stage] for e in shown if not math.isnan(e[stage])]
        summary[f"{stage}_p50"] = percentile(values, 50)
        summary[f"{stage}_p95"] = percentile(values, 95)
    return summary


def report(brokers: dict[str, dict[str, Any]]) -> str:
    """The Markdown tables: latency per broker, then per stage."""
    header = ["broker", "edits", "not shown", "p50 ms", "p95 ms", "max ms", "mean ms"]
    header += ["debounce ms", "p95 < 1 s"]
    rows = [
        [
            harness.BROKERS[kind],
            *(s[k] for k in ("edits", "not_shown", "p50_ms", "p95_ms", "max_ms", "mean_ms")),
            result["debounce_ms"],
            "yes" if s["p95_ms"] < 1000 else "no",
        ]
        for kind, result in brokers.items()
        for s in [result["summary"]]
    ]
    stage_header = ["stage, ms", *(f"{harness.BROKERS[k]} p50 / p95" for k in brokers)]
    return "\n".join(
        [
            harness.markdown_table(header, rows),
            "",
            harness.markdown_table(
                stage_header, stage_rows([r["summary"] for r in brokers.values()])
            ),
        ]
    )


def stage_rows(summaries: list[dict[str, Any]]) -> list[list[str]]:
    rows = [
        [stage.removesuffix("_ms").replace("_", " ")]
        + [f"{s[f'{stage}_p50']:.0f} / {s[f'{stage}_p95']:.0f}" for s in summaries]
        for stage in STAGES
    ]
    rows.append(["one GET (median)", *(f"{s['get_ms_median']:.1f}" for s in summaries)])
    rows.append(["polls per edit (median)", *(f"{s['polls_median']:.0f}" for s in summaries)])
    rows.append(["HTTP errors", *(str(s["http_errors"]) for s in summaries)])
    return rows


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = django_repo()
    progress(f"corpus: django {corpus.version}, {corpus.files} files, {corpus.mb:.1f} MB")
    brokers = {
        kind: await bench_broker(kind, corpus, args) for kind in harness.broker_kinds(args.broker)
    }
    print(report(brokers))
    return {
        "benchmark": NAME,
        "corpus": {k: getattr(corpus, k) for k in ("version", "files", "py_files", "bytes")},
        "options": {k: getattr(args, k) for k in ("edits", "poll_ms", "pause_ms")},
        "machine": harness.machine(),
        "brokers": brokers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    harness.add_broker_option(parser)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--poll-ms", type=float, default=5.0)
    parser.add_argument("--pause-ms", type=float, default=100.0)
    args = parser.parse_args()
    configure_logging("warning")
    path = harness.write_json(NAME, asyncio.run(run(args)))
    progress(f"wrote {path}")


if __name__ == "__main__":
    main()
