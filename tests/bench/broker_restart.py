"""Time from a broker restarted empty to ``fresh`` again (issue 15).

    python -m tests.bench.broker_restart --broker tansu|kafka|both [--large 300]

For each broker and each repository (a small one of 5 files and a generated one of
``--large`` Python files), worker, query service and producers run in one process as
in ``gazetteer up``; once the repository is fresh the broker is SIGKILLed and a new,
empty one started on the same port (Tansu with a new cluster id, Kafka formatted again
with the same id). Measured from the moment the new broker accepts connections:
``detected_s`` (the parts' BrokerWatch saw the reset), ``fresh_s`` (the query service
answers fresh with the same file list and counts as before the kill).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from deploy.logging_setup import configure_logging
from tests.bench import harness
from tests.gitrepo import GitRepo
from tests.integration.stack import eventually, open_stack, stack_settings
from tests.integration.test_broker_reset import FILES, RestartableBroker

NAME = "broker_restart"


def large_files(count: int) -> dict[str, str | bytes]:
    """``count`` modules that import their neighbours and define a class each."""
    return {
        f"pkg/m{i:04d}.py": (
            f"from pkg.m{(i + 1) % count:04d} import C{(i + 1) % count}\n\n"
            f"class C{i}:\n    def run(self, x):\n"
            f"        return C{(i + 1) % count}().run(x) + {i}\n"
        )
        for i in range(count)
    }


async def summary(url: str) -> dict[str, Any] | None:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        items = (await client.get("/repositories")).json()["items"]
    return items[0] if items else None


def counts(body: dict[str, Any]) -> tuple[int, int, int]:
    return body["files"], body["symbols"], body["edges"]


async def one_run(kind: str, files: dict[str, str | bytes], work: Path) -> dict[str, Any]:
    broker = RestartableBroker(kind)
    await broker.start()
    repo = GitRepo.create(work / "repo", files)
    stack = await open_stack(stack_settings(broker.bootstrap, work / "data", heartbeat_s=2.0))
    try:
        await stack.start_worker()
        url = await stack.start_query()
        await stack.start_sources([repo.root])

        async def fresh() -> bool:
            body = await summary(url)
            return body is not None and body["freshness"]["status"] == "fresh"

        await eventually(fresh, 600, "the first index")
        before = await summary(url)
        assert before is not None
        watch = stack.cluster.watch
        assert watch is not None
        epoch = watch.epoch
        await broker.kill()
        await broker.start()
        back = time.time()
        harness.progress(f"{kind}: broker back, {len(files)} files")

        behind = False  # an answer said it was behind: the old state no longer serves

        async def same_and_fresh() -> bool:
            nonlocal behind
            body = await summary(url)
            if body is None or body["freshness"]["status"] != "fresh":
                behind = behind or watch.epoch > epoch
                return False
            return behind and counts(body) == counts(before)

        await eventually(same_and_fresh, 900, "fresh again")
        fresh_s = time.time() - back
        detected_s = watch.resets[epoch].at - back
        return {
            "broker": kind,
            "files": len(files),
            "reason": watch.resets[epoch].reason,
            "detected_s": round(detected_s, 2),
            "fresh_s": round(fresh_s, 2),
        }
    finally:
        await stack.close()
        await broker.stop()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    kinds = ["tansu", "kafka"] if args.broker == "both" else [args.broker]
    results = []
    for kind in kinds:
        for files in (FILES, large_files(args.large)):
            with tempfile.TemporaryDirectory(prefix="gazetteer-bench-") as work:
                results.append(await one_run(kind, files, Path(work)))
                harness.progress(str(results[-1]))
    print(
        harness.markdown_table(
            ("broker", "files", "detected after (s)", "fresh after (s)", "reason"),
            [
                (r["broker"], r["files"], r["detected_s"], r["fresh_s"], r["reason"])
                for r in results
            ],
        )
    )
    return {"benchmark": NAME, "machine": harness.machine(), "runs": results}


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--broker", choices=("tansu", "kafka", "both"), default="both")
    parser.add_argument("--large", type=int, default=300, help="files of the larger repository")
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    configure_logging(args.log_level)
    path = harness.write_json(NAME, asyncio.run(run(args)))
    harness.progress(f"wrote {path}")


if __name__ == "__main__":
    main()
