"""Benchmark (issue 15): one ~1 MB generated file beside a small repository.

Through the embedded broker and the real stack (worker, query service, producers):
index a repository holding one generated Python file just under the 1 MB content cap,
and a small second repository; report the messages and bytes the big file cost on the
graph-deltas topic, the largest message, and the time from saving an edit in the small
repository until the query service shows it (while the big file is being indexed, and
once it is). Run on demand: ``python -m tests.bench.large_file``.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

from stores.delta_log import read_values
from stores.deltas import DELTA_PART_BYTES, decode_delta
from tests.bench.harness import progress, running_broker, write_json
from tests.generated_code import generated_module
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually, running_stack

BIG = "gen/messages_pb2.py"


async def _symbols(stack: Stack, suffix: str) -> int:
    items = (await stack.get("/repositories"))["items"]
    return sum(r["symbols"] for r in items if r["repo"].startswith(suffix))


async def _edit_shows(stack: Stack, small: GitRepo, n: int) -> float:
    """Seconds from saving a file with ``n`` functions until the service shows them."""
    body = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(n))
    started = time.monotonic()
    (small.root / "app" / "a.py").write_text(body)

    async def shown() -> bool:
        return await _symbols(stack, "small") == n

    await eventually(shown, 120, "the small repository's edit")
    return time.monotonic() - started


async def run() -> dict[str, object]:
    async with running_broker("embedded") as broker:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            big = GitRepo.create(root / "big", {BIG: generated_module(), "gen/__init__.py": ""})
            small = GitRepo.create(root / "small", {"app/a.py": "def f0():\n    return 0\n"})
            async with running_stack(broker.bootstrap, root / "data") as stack:
                started = time.monotonic()
                await stack.start_sources([small.root, big.root])
                await eventually(lambda: _has(stack, "small", 1), 120, "the small repository")
                during = await _edit_shows(stack, small, 2)
                await eventually(lambda: _has(stack, "big", 5000), 300, "the big file")
                indexed_s = time.monotonic() - started
                after = await _edit_shows(stack, small, 3)
                values = [
                    v
                    for p in range(stack.settings.partitions)
                    for v in await read_values(
                        stack.cluster.bootstrap,
                        stack.settings.topics.graph_deltas,
                        p,
                        stack.cluster.end_offsets,
                    )
                ]
    deltas = [decode_delta(v) for v in values]
    groups = {
        d.part.group
        for d in deltas
        if d.part is not None and (d.part.pieces or any(f.path == BIG for f in d.files_upserted))
    }
    of_big = [
        v
        for v, d in zip(values, deltas, strict=True)
        if (d.part is not None and d.part.group in groups)
        or (d.part is None and any(f.path == BIG for f in d.files_upserted))
    ]
    return {
        "big_file_bytes": len(generated_module().encode()),
        "big_file_messages": len(of_big),
        "big_file_message_bytes": sum(map(len, of_big)),
        "largest_message_bytes": max(map(len, values)),
        "part_limit_bytes": DELTA_PART_BYTES,
        "graph_delta_messages": len(values),
        "big_file_indexed_s": round(indexed_s, 2),
        "small_edit_shown_while_big_indexed_s": round(during, 2),
        "small_edit_shown_after_s": round(after, 2),
    }


async def _has(stack: Stack, suffix: str, symbols: int) -> bool:
    return await _symbols(stack, suffix) >= symbols


def main() -> None:
    result = asyncio.run(run())
    for key, value in result.items():
        progress(f"{key}: {value}")
    write_json("large_file", result)


if __name__ == "__main__":
    main()
