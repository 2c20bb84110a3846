"""Initial scan throughput of a real code base (django's package tree), end to end.

    python -m tests.bench.scan_throughput --broker both [--runs 3]

Method. For each broker (the embedded Tansu, Apache Kafka 4.4), one broker process is
started and the scan is run ``--runs`` times, each on fresh topics (a new namespace):

1. start the worker and wait until it owns every file-events partition (the consumer
   group join, reported as ``worker join s``, not counted); start the query service;
2. start the sources on the corpus repository (t = 0) and poll the read model in
   process every 10 ms. ``emitted`` is when the read side has the producer's status
   for the last event (the ScanCompleted barrier), ``indexed`` when every event is
   reflected (pending_events 0, indexed_commit = HEAD), ``fresh`` when the status
   is ``fresh``. Throughput is files / ``fresh``, as a user sees it.

Where the time goes. The same events are built in process, without a broker (a full
scan into an in-memory sink, exactly the producer's events), and the pure parts timed
over them (median of 3):

- parse: `parse_file` over every file's bytes (timed inside `RepoIndex.handle`
  through its injectable parser);
- index: `RepoIndex.handle` over every event, minus parse (graph and state);
- store: the deltas JSON-encoded and decoded (worker to read side) and folded into a
  `ReadModel` with `apply_delta`;
- broker & rest: ``indexed`` minus the three above: produce/fetch round trips, event
  serialization (its in-process cost is shown apart), file reads, git, scheduling
  and waiting. Everything runs in one event loop, so CPU parts do not overlap here.
- status wait: ``fresh`` minus ``indexed``.

Also reported: CPU seconds over the same span (t = 0 to fresh) of this process (all
threads, plus its git children) and of the broker process (from /proc), against the
machine's 2 x wall seconds; and the median acknowledged round trip of one delta-sized message
(sequential ``send_and_wait``, acks=all), which the worker pays once per event.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer

from deploy.logging_setup import configure_logging
from deploy.topics_admin import ensure_topics
from processors.indexer import RepoIndex
from processors.parsing import ParseResult, parse_file
from producers.events import EventBase, FileChanged, decode_file_event, encode
from producers.scan import ScanOptions, full_scan
from producers.session import describe_repository, open_work_tree
from producers.source import InMemorySink, Source
from producers.topics import TopicSpec
from query.read_model import ReadModel
from stores.deltas import GraphDelta, assemble, decode_delta, encode_parts
from tests.bench import harness
from tests.bench.corpus import Corpus, django_repo
from tests.bench.harness import progress

NAME = "scan_throughput"
PROFILE_REPEATS = 3
RTT_MESSAGES = 200


async def scan_events(root: Path) -> list[EventBase]:
    """The producer's events of a full scan, into an in-memory sink."""
    repo, branch, head = describe_repository(root)
    sink = InMemorySink()
    source = Source(repo, str(root), sink)
    source.observe(branch=branch, head_commit=head, state="scanning")
    await source.claim()
    await full_scan(source, open_work_tree(root), ScanOptions())
    return sink.events


def profile_once(events: list[EventBase]) -> dict[str, float]:
    """Seconds spent in each pure part over one scan's events, plus sizes."""
    parse_s = 0.0

    def timed_parse(path: str, content: bytes) -> ParseResult:
        nonlocal parse_s
        started = time.perf_counter()
        result = parse_file(path, content)
        parse_s += time.perf_counter() - started
        return result

    index = RepoIndex(events[0].repo, parse=timed_parse)
    started = time.perf_counter()
    deltas = [index.handle(e, time.time()) for e in events]
    handle_s = time.perf_counter() - started
    applied = [d for d in deltas if d is not None]
    delta_codec_s, decoded, delta_bytes = _round_trip_deltas(applied)
    model = ReadModel()
    started = time.perf_counter()
    for delta in decoded:
        model.apply_delta(delta)
    apply_s = time.perf_counter() - started
    state = model.repos[events[0].repo].state
    started = time.perf_counter()
    raw_events = [encode(e) for e in events]
    for raw in raw_events:
        decode_file_event(raw)
    return {
        "parse_s": parse_s,
        "index_s": handle_s - parse_s,
        "store_s": apply_s + delta_codec_s,
        "store_apply_s": apply_s,
        "store_delta_json_s": delta_codec_s,
        "event_json_s": time.perf_counter() - started,
        "events": len(events),
        "event_mb": sum(map(len, raw_events)) / 1e6,
        "deltas": len(applied),
        "delta_mb": delta_bytes / 1e6,
        "graph_nodes": len(state.nodes),
        "graph_edges": len(state.edges),
    }


def _round_trip_deltas(deltas: list[GraphDelta]) -> tuple[float, list[GraphDelta], int]:
    started = time.perf_counter()
    raw = [message for d in deltas for message in encode_parts(d)]
    decoded = assemble(decode_delta(r) for r in raw)
    return time.perf_counter() - started, decoded, sum(map(len, raw))


async def profile(corpus: Corpus) -> dict[str, Any]:
    events = await scan_events(corpus.root)
    files = [e for e in events if isinstance(e, FileChanged)]
    runs = []
    for i in range(PROFILE_REPEATS):
        runs.append(profile_once(events))
        progress(f"in-process profile {i + 1}/{PROFILE_REPEATS}: {runs[-1]['parse_s']:.2f} s parse")
    result: dict[str, Any] = {key: harness.median_of(runs, key) for key in runs[0]}
    result["skipped_files"] = sum(1 for e in files if e.content is None)
    result["inline_mb"] = sum(len(e.content or b"") for e in files) / 1e6
    result["runs"] = runs
    return result


async def one_run(broker: harness.RunningBroker, corpus: Corpus, workdir: Path) -> dict[str, Any]:
    """One scan on fresh topics: seconds to emitted, indexed and fresh; CPU seconds."""
    model = ReadModel()
    settings = harness.bench_settings(broker.bootstrap, workdir)
    bench = await harness.open_bench_stack(settings, model)
    repo, _, head = describe_repository(corpus.root)
    try:
        started, cpu = time.monotonic(), harness.CpuMeter(broker.pid)
        await bench.stack.start_sources([corpus.root])
        marks = await harness.wait_fresh(model, repo, head, corpus.files + 1, started)
        cpu_s = cpu.read()
        counters = bench.counters()
    finally:
        await bench.stack.close()
    return {
        "connect_s": bench.connect_s,
        "worker_join_s": bench.worker_join_s,
        "query_start_s": bench.query_start_s,
        "emitted_s": marks.emitted_s,
        "indexed_s": marks.indexed_s,
        "fresh_s": marks.fresh_s,
        "files_per_s": corpus.files / marks.fresh_s,
        "mb_per_s": corpus.mb / marks.fresh_s,
        "freshness": marks.freshness.model_dump(),
        **cpu_s,
        **counters,
    }


async def round_trip_ms(bootstrap: str, size: int) -> float:
    """Median ms of one acknowledged send of ``size`` bytes, sent one after another."""
    topic = f"bench-rtt-{uuid.uuid4().hex[:8]}"
    await ensure_topics(bootstrap, [TopicSpec(topic, 1)])
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        times, value = [], b"x" * size
        for _ in range(RTT_MESSAGES):
            started = time.perf_counter()
            await producer.send_and_wait(topic, value, key=b"repo")
            times.append(time.perf_counter() - started)
    finally:
        await producer.stop()
    return statistics.median(times) * 1000


async def bench_broker(kind: str, corpus: Corpus, runs: int, delta_bytes: int) -> dict[str, Any]:
    async with harness.running_broker(kind) as broker:
        results = []
        for i in range(runs):
            with tempfile.TemporaryDirectory(prefix="gazetteer-bench-") as tmp:
                results.append(await one_run(broker, corpus, Path(tmp)))
            last = results[-1]
            progress(
                f"{kind} run {i + 1}/{runs}: fresh in {last['fresh_s']:.2f} s "
                f"({last['files_per_s']:.0f} files/s), join {last['worker_join_s']:.2f} s"
            )
        rtt = await round_trip_ms(broker.bootstrap, delta_bytes)
    keys = [k for k, v in results[0].items() if isinstance(v, int | float)]
    median = {key: harness.median_of(results, key) for key in keys}
    return {"runs": results, "median": median, "round_trip_ms": rtt}


def report(corpus: Corpus, prof: dict[str, Any], brokers: dict[str, dict[str, Any]]) -> str:
    """The Markdown tables: throughput per broker, then where the time went."""
    throughput = [
        [
            harness.BROKERS[kind],
            corpus.files,
            round(corpus.mb, 1),
            m["worker_join_s"],
            m["emitted_s"],
            m["indexed_s"],
            m["fresh_s"],
            round(m["files_per_s"]),
            m["mb_per_s"],
            m["gazetteer_cpu_s"] + m["children_cpu_s"],
            m["broker_cpu_s"],
            result["round_trip_ms"],
        ]
        for kind, result in brokers.items()
        for m in [result["median"]]
    ]
    header = ["broker", "files", "MB", "worker join s", "emitted s", "indexed s"]
    header += ["wall s (fresh)", "files/s", "MB/s", "gazetteer CPU s", "broker CPU s"]
    header += ["ack RTT ms"]
    out = [harness.markdown_table(header, throughput), ""]
    for kind, result in brokers.items():
        out += [f"Where the time went, {harness.BROKERS[kind]} (median):", ""]
        out += [harness.markdown_table(["part", "s", "share"], breakdown(prof, result)), ""]
    return "\n".join(out)


def breakdown(prof: dict[str, Any], result: dict[str, Any]) -> list[list[object]]:
    m = result["median"]
    wall, indexed = m["fresh_s"], m["indexed_s"]
    parts = [
        ("parse (parse_file)", prof["parse_s"]),
        ("index (RepoIndex.handle - parse)", prof["index_s"]),
        ("store (ReadModel.apply_delta + delta JSON)", prof["store_s"]),
    ]
    rest = indexed - sum(s for _, s in parts)
    parts.append(("broker & rest (indexed - above)", rest))
    parts.append(("  of which event JSON encode+decode", prof["event_json_s"]))
    parts.append(("status wait (fresh - indexed)", wall - indexed))
    rows: list[list[object]] = [[name, s, f"{100 * s / wall:.0f}%"] for name, s in parts]
    rows.append(["total (wall, fresh)", wall, "100%"])
    return rows


async def run(args: argparse.Namespace) -> dict[str, Any]:
    corpus = django_repo()
    progress(f"corpus: django {corpus.version}, {corpus.files} files, {corpus.mb:.1f} MB")
    prof = await profile(corpus)
    delta_bytes = int(prof["delta_mb"] * 1e6 / max(1, prof["deltas"]))
    brokers = {}
    for kind in harness.broker_kinds(args.broker):
        brokers[kind] = await bench_broker(kind, corpus, args.runs, delta_bytes)
    print(report(corpus, prof, brokers))
    return {
        "benchmark": NAME,
        "corpus": {k: getattr(corpus, k) for k in ("version", "files", "py_files", "bytes")},
        "settings": {
            k: getattr(harness.bench_settings("x:1", Path()), k) for k in harness.DEFAULTS
        },
        "machine": harness.machine(),
        "profile": prof,
        "brokers": brokers,
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    harness.add_broker_option(parser)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    configure_logging("warning")
    path = harness.write_json(NAME, asyncio.run(run(args)))
    progress(f"wrote {path}")


if __name__ == "__main__":
    main()
