"""A new query replica's ready time and memory, from the state-snapshots topic or from
the log alone, against the history (issue 16 §2).

    python -m tests.bench.replica_ready [--broker embedded|kafka]
        [--corpus django|sympy|both] [--edits 0] [--writes 0 1000 10000]
        [--write-every 0] [--debounce-ms 50] [--files-per-write 1] [--repeat 3]
        [--modes topic log]

On private clones of the corpora (`tests.bench.corpus`; ``both``: django and sympy,
indexed on one broker, a replica ready for both): a worker (publishing its state
snapshots on the broker), a query service and the sources run in process on a real
broker; the corpora are scanned, the first one edited ``--edits`` times (one commit
each, waited fresh), then written in its working tree up to each ``--writes`` count in
turn (a new function body each time in one file, or ``--files-per-write`` files at once,
each round waited until its deltas are folded, so that every write is one delta on the
log: a long history of small deltas, as an editor's saves make). At each count, once the
topic's snapshots cover the last delta, fresh replicas are started one after the other,
alternately with and without the topic (``--modes``): each a `Materializer` into an
empty read model, timed from its start to ``ready`` (it has read every topic to the end
offsets it saw at start, so it answers). Then one more replica from the topic under
tracemalloc: the bytes its read model holds once ready (the replica's memory; its ready
time is not the timed one).
Reported per count: ready seconds (median, with the 1-minute load average beside each
run), the graph-delta messages the replica fetched, the memory and its per 1,000 files,
the snapshots' bytes, and the messages and bytes on the log.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from deploy.runtime import state_topic
from query.materializer import Materializer
from query.read_model import ReadModel
from stores.delta_log import read_values
from tests.bench import harness
from tests.bench.corpus import clone, git, package_repo

NAME = "replica_ready"
EDITED = {"django": "django/utils/text.py", "sympy": "sympy/core/containers.py"}
"""The file each corpus's edits and writes change (django's: 15 KB, sympy's: 11 KB)."""


def load() -> float:
    return round(os.getloadavg()[0], 2)


async def one_replica(
    stack: harness.BenchStack, from_topic: bool, traced: bool = False
) -> dict[str, Any]:
    model = ReadModel()
    settings, cluster = stack.settings, stack.stack.cluster
    gc.collect()
    if traced:
        tracemalloc.start()
    materializer = Materializer(
        model,
        cluster.bootstrap,
        cluster.end_offsets,
        topics=settings.topics,
        state_topic=state_topic(settings, cluster) if from_topic else None,
    )
    before = load()
    stop = asyncio.Event()
    started = time.monotonic()
    running = asyncio.ensure_future(materializer.run(stop))
    await asyncio.wait_for(materializer.ready.wait(), 1800)
    ready_s = time.monotonic() - started
    stop.set()
    await running
    result: dict[str, Any] = {
        "from_topic": from_topic,
        "ready_s": round(ready_s, 2),
        "load": [before, load()],
        "deltas_folded": model.deltas_applied,
        "skipped_messages": materializer.skipped,
        # (getattr: the same benchmark runs on a build before it counted them)
        "delta_messages_fetched": getattr(materializer, "delta_messages", None),
        "messages": materializer.messages,
        "traced": traced,
    }
    if traced:
        gc.collect()
        # What the replica holds once ready (its consumer stopped): the read model.
        result["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 1)
        tracemalloc.stop()
    del model, materializer
    gc.collect()
    harness.progress(f"replica: {result}")
    return result


async def measure(args: argparse.Namespace, broker: harness.RunningBroker) -> dict[str, Any]:
    names = ["django", "sympy"] if args.corpus == "both" else [args.corpus]
    corpora = {name: package_repo(name) for name in names}
    files = sum(c.files for c in corpora.values())
    points: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gz-replica-ready-") as tmp:
        works = {name: clone(c, Path(tmp) / name) for name, c in corpora.items()}
        settings = harness.bench_settings(broker.bootstrap, Path(tmp) / "data").model_copy(
            update={
                "snapshots_on_broker": True,
                "embedder": args.embedder,
                "debounce_ms": args.debounce_ms,
            }
        )
        model = ReadModel()
        stack = await harness.open_bench_stack(settings, model)
        try:
            started = time.monotonic()
            await stack.stack.start_sources([w.root for w in works.values()])
            rids = {
                name: await _fresh(stack, model, git(w.root, "rev-parse", "HEAD"), started)
                for name, w in works.items()
            }
            scan_s = round(time.monotonic() - started, 1)
            harness.progress(f"scanned in {scan_s} s")
            first = names[0]
            work, rid = works[first], rids[first]
            path = work.root / EDITED[first]
            for i in range(args.edits):
                path.write_text(path.read_text() + f"\n\ndef bench_edit_{i}():\n    return {i}\n")
                git(work.root, "commit", "-qam", f"edit {i}")
                await _fresh(stack, model, git(work.root, "rev-parse", "HEAD"), time.monotonic())
            paths = _written(work.root, EDITED[first], args.files_per_write)
            bases = {p: p.read_text() for p in paths}
            written = 0
            for target in sorted(set(args.writes)):
                writing = time.monotonic()
                while written < target:  # the same size each time: one function's body
                    seq = model.repos[rid].state.seq
                    batch = paths[: target - written]
                    for each in batch:
                        each.write_text(
                            bases[each] + f"\n\ndef bench_save():\n    return {written}\n"
                        )
                        written += 1
                    await _folded(model, rid, seq + len(batch))
                    await asyncio.sleep(args.write_every)
                if target:
                    await _settled(model, rid, time.monotonic())
                write_s = round(time.monotonic() - writing, 1)
                points.append(await _point(args, broker, stack, rids, target, write_s))
                points[-1]["files"] = files
        finally:
            await stack.stack.close()
    return {
        "broker": harness.BROKERS[broker.kind],
        "corpus": " + ".join(f"{n} {c.version}" for n, c in corpora.items()),
        "files": files,
        "scan_s": scan_s,
        "edits": args.edits,
        "write_every": args.write_every,
        "debounce_ms": args.debounce_ms,
        "files_per_write": args.files_per_write,
        "points": points,
        "machine": harness.machine(),
    }


async def _point(
    args: argparse.Namespace,
    broker: harness.RunningBroker,
    stack: harness.BenchStack,
    rids: dict[str, str],
    writes: int,
    write_s: float,
) -> dict[str, Any]:
    """The replicas at one history length."""
    model, settings = stack.model, stack.settings
    deltas = {name: model.repos[rid].state.seq for name, rid in rids.items()}
    harness.progress(f"history after {writes} writes: {deltas} deltas")
    offered = {name: await _covered(stack, rid, deltas[name]) for name, rid in rids.items()}
    log_values = [
        value
        for p in range(settings.partitions)
        for value in await read_values(
            broker.bootstrap, settings.topics.graph_deltas, p, stack.stack.cluster.end_offsets
        )
    ]
    runs = []
    for _ in range(args.repeat):
        for mode in args.modes:
            runs.append(await one_replica(stack, mode == "topic"))
    traced = await one_replica(stack, True, traced=True)

    def median(from_topic: bool, key: str = "ready_s") -> float | None:
        values = [r[key] for r in runs if r["from_topic"] == from_topic]
        values = [v for v in values if v is not None]  # None: a build that did not count
        return statistics.median(values) if values else None

    files = sum(len(model.repos[rid].state.files) for rid in rids.values())
    return {
        "writes": writes,
        "write_s": write_s,
        "deltas": deltas,
        "snapshot_bytes": offered,
        "log_messages": len(log_values),
        "log_bytes": sum(len(v) for v in log_values),
        "ready_s_from_topic": median(True),
        "ready_s_without_topic": median(False),
        "fetched_from_topic": median(True, "delta_messages_fetched"),
        "fetched_without_topic": median(False, "delta_messages_fetched"),
        "replica_traced_mb": traced["traced_mb"],
        "state_files": files,
        "replica_mb_per_1000_files": round(traced["traced_mb"] * 1000 / files, 1),
        "loads": [r["load"] for r in runs],
        "runs": [*runs, traced],
    }


async def _fresh(stack: harness.BenchStack, model: ReadModel, head: str, started: float) -> str:
    deadline = started + 900
    while time.monotonic() < deadline:
        for rid, view in model.repos.items():
            fresh = model.freshness(rid)
            if fresh.status == "fresh" and fresh.indexed_commit == head and view.state.seq:
                return rid
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not fresh at {head[:8]}")


async def _settled(model: ReadModel, rid: str, started: float) -> None:
    """Until every event the producers emitted is reflected, and it stays so for 2 s."""
    deadline, since = started + 900, None
    while time.monotonic() < deadline:
        fresh = model.freshness(rid)
        if fresh.pending_events == 0 and fresh.status != "updating":
            since = since or time.monotonic()
            if time.monotonic() - since >= 2:
                return
        else:
            since = None
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{rid} never settled")


async def _covered(stack: harness.BenchStack, rid: str, seq: int) -> int:
    """The bytes of the topic's snapshot of ``rid``, once it covers delta ``seq``."""
    topic = state_topic(stack.settings, stack.stack.cluster)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        offered = (await topic.latest(range(stack.settings.partitions))).get(rid)
        if offered is not None and offered.header.seq >= seq:
            return len(offered.raw)
        await asyncio.sleep(1)
    raise TimeoutError(f"no snapshot of {rid} covering delta {seq} on the topic")


async def _folded(model: ReadModel, rid: str, seq: int) -> None:
    """Until the read side folded the deltas of ``rid`` up to ``seq`` (one per write)."""
    deadline = time.monotonic() + 30
    while model.repos[rid].state.seq < seq:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the writes to {rid} made no delta {seq}")
        await asyncio.sleep(0.002)


def _written(root: Path, edited: str, count: int) -> list[Path]:
    """The files each round of writes changes: ``edited``, then the first others of 2 to
    20 KB in path order (written together, they are one watcher batch of ``count``
    events, each its own delta: a history made ``count`` times faster)."""
    others = sorted(
        p
        for p in git(root, "ls-files", "*.py").split("\n")
        if p and p != edited and 2_000 <= (root / p).stat().st_size <= 20_000
    )
    return [root / edited, *(root / p for p in others[: count - 1])]


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--broker", choices=["embedded", "kafka"], default="embedded")
    parser.add_argument("--corpus", choices=["django", "sympy", "both"], default="django")
    parser.add_argument("--edits", type=int, default=0)
    parser.add_argument("--writes", type=int, nargs="+", default=[0])
    parser.add_argument("--write-every", type=float, default=0.0)
    parser.add_argument("--debounce-ms", type=int, default=50)
    parser.add_argument("--files-per-write", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--modes", nargs="+", choices=["topic", "log"], default=["topic", "log"])
    parser.add_argument("--embedder", default="none")
    args = parser.parse_args()

    async def go() -> dict[str, Any]:
        async with harness.running_broker(args.broker) as broker:
            return await measure(args, broker)

    result = asyncio.run(go())
    print(f"{result['corpus']}, {result['files']} files, {result['broker']}")
    print(
        harness.markdown_table(
            [
                "writes",
                "deltas",
                "log messages",
                "log MB",
                "ready from topic (s)",
                "fetched",
                "ready log alone (s)",
                "replica MB",
                "MB per 1,000 files",
                "load (1 min)",
            ],
            [
                [
                    p["writes"],
                    sum(p["deltas"].values()),
                    p["log_messages"],
                    round(p["log_bytes"] / 1e6, 1),
                    p["ready_s_from_topic"],
                    p["fetched_from_topic"],
                    p["ready_s_without_topic"] if p["ready_s_without_topic"] is not None else "-",
                    p["replica_traced_mb"],
                    p["replica_mb_per_1000_files"],
                    " ".join(f"{a}" for a, _ in p["loads"]),
                ]
                for p in result["points"]
            ],
        )
    )
    print(f"written to {harness.write_json(NAME, result)}")


if __name__ == "__main__":
    main()
