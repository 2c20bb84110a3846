"""A new query replica's ready time, from the state-snapshots topic or from the log alone
(issue 16 §2).

    python -m tests.bench.replica_ready [--broker embedded|kafka] [--edits 20]
        [--writes 0] [--repeat 3]

On a private clone of the django corpus (`tests.bench.corpus`): a worker (publishing its
state snapshots on the broker), a query service and the sources run in process on a real
broker; the corpus is scanned, then edited ``--edits`` times (one commit each, waited
fresh) and written ``--writes`` times more in the working tree (one file, a new function
body each time, ``--write-every`` apart: a long history of small deltas, as an editor's saves
make), and once the topic's snapshot covers the last delta, fresh replicas are started
one after the other, alternately with and without the topic: each a `Materializer` into
an empty read model, timed from its start to ``ready`` (it has read every topic to the
end offsets it saw at start, so it answers). Reported: ready seconds (median), the
snapshot's bytes on the topic, the graph-delta messages and bytes on the log, how many a
replica skipped undecoded, and the deltas it folded.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from deploy.runtime import state_topic
from query.materializer import Materializer
from query.read_model import ReadModel
from stores.delta_log import read_values
from tests.bench import harness
from tests.bench.corpus import clone, django_repo, git

NAME = "replica_ready"
EDITED = "django/utils/text.py"


async def one_replica(stack: harness.BenchStack, from_topic: bool) -> dict[str, Any]:
    model = ReadModel()
    settings, cluster = stack.settings, stack.stack.cluster
    materializer = Materializer(
        model,
        cluster.bootstrap,
        cluster.end_offsets,
        topics=settings.topics,
        state_topic=state_topic(settings, cluster) if from_topic else None,
    )
    stop = asyncio.Event()
    started = time.monotonic()
    running = asyncio.ensure_future(materializer.run(stop))
    await asyncio.wait_for(materializer.ready.wait(), 600)
    ready_s = time.monotonic() - started
    stop.set()
    await running
    result = {
        "from_topic": from_topic,
        "ready_s": round(ready_s, 2),
        "deltas_folded": model.deltas_applied,
        "skipped_messages": materializer.skipped,
        "messages": materializer.messages,
    }
    del model, materializer
    gc.collect()
    harness.progress(f"replica: {result}")
    return result


async def measure(args: argparse.Namespace, broker: harness.RunningBroker) -> dict[str, Any]:
    corpus = django_repo()
    with tempfile.TemporaryDirectory(prefix="gz-replica-ready-") as tmp:
        work = clone(corpus, Path(tmp) / "django")
        settings = harness.bench_settings(broker.bootstrap, Path(tmp) / "data").model_copy(
            update={"snapshots_on_broker": True, "embedder": args.embedder}
        )
        model = ReadModel()
        stack = await harness.open_bench_stack(settings, model)
        try:
            started = time.monotonic()
            await stack.stack.start_sources([work.root])
            rid = await _fresh(stack, model, git(work.root, "rev-parse", "HEAD"), started)
            harness.progress(f"scanned in {time.monotonic() - started:.1f} s")
            path = work.root / EDITED
            for i in range(args.edits):
                path.write_text(path.read_text() + f"\n\ndef bench_edit_{i}():\n    return {i}\n")
                git(work.root, "commit", "-qam", f"edit {i}")
                await _fresh(stack, model, git(work.root, "rev-parse", "HEAD"), time.monotonic())
            base = path.read_text()
            for i in range(args.writes):  # the same size each time: one function's body
                path.write_text(base + f"\n\ndef bench_save():\n    return {i}\n")
                await asyncio.sleep(args.write_every)
            if args.writes:
                await _settled(model, rid, time.monotonic())
            harness.progress(f"history: {model.repos[rid].state.seq} deltas")
            last = model.repos[rid].state.seq
            offered = await _covered(stack, rid, last)
            log_values = [
                value
                for p in range(settings.partitions)
                for value in await read_values(
                    broker.bootstrap,
                    settings.topics.graph_deltas,
                    p,
                    stack.stack.cluster.end_offsets,
                )
            ]
            runs = []
            for _ in range(args.repeat):
                for from_topic in (False, True):
                    runs.append(await one_replica(stack, from_topic))
        finally:
            await stack.stack.close()

    def median(from_topic: bool) -> float:
        return statistics.median(r["ready_s"] for r in runs if r["from_topic"] == from_topic)

    return {
        "broker": harness.BROKERS[broker.kind],
        "corpus": f"django {corpus.version}",
        "files": corpus.files,
        "edits": args.edits,
        "writes": args.writes,
        "deltas": last,
        "snapshot_bytes": offered,
        "log_messages": len(log_values),
        "log_bytes": sum(len(v) for v in log_values),
        "ready_s_without_topic": median(False),
        "ready_s_from_topic": median(True),
        "runs": runs,
        "machine": harness.machine(),
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


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--broker", choices=["embedded", "kafka"], default="embedded")
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--writes", type=int, default=0)
    parser.add_argument("--write-every", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--embedder", default="none")
    args = parser.parse_args()

    async def go() -> dict[str, Any]:
        async with harness.running_broker(args.broker) as broker:
            return await measure(args, broker)

    result = asyncio.run(go())
    print(
        harness.markdown_table(
            ["replica", "ready (s, median)", "snapshot bytes", "log messages", "log bytes"],
            [
                [
                    "log alone",
                    result["ready_s_without_topic"],
                    "-",
                    result["log_messages"],
                    result["log_bytes"],
                ],
                [
                    "from the topic",
                    result["ready_s_from_topic"],
                    result["snapshot_bytes"],
                    result["log_messages"],
                    result["log_bytes"],
                ],
            ],
        )
    )
    print(f"written to {harness.write_json(NAME, result)}")


if __name__ == "__main__":
    main()
