"""What watching each real directory costs on django, against notify's recursive watch.

    python -m tests.bench.watch_rewatch [--repo PATH] [--runs 8]

Method. The django checkout (``--repo``, default the bench cache's django 5.2 git
repository) is copied to a temporary directory. Then, in one process:

1. notify's recursive watch of the root (what the watcher did before issue 15):
   its setup time and the inotify watches it holds (counted in /proc/self/fdinfo);
2. the watcher's start (``Watcher.run`` until ``watching``): the walk of the real
   directories plus notify's setup of one non-recursive watch each, and the watches;
3. ``--runs`` times: a new directory and a file in it at once; the time until the
   file's FileChanged is emitted, the rewatch's own cost (walk + setup, the
   ``watch_rewatched`` log's ``cost_ms``) and the longest event-loop stall in the run
   (a 5 ms ticker's worst lateness: the setup runs on the loop inside awatch).

Median and max of each are printed. Nothing is asserted: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from structlog.testing import capture_logs
from watchfiles import awatch

from producers.events import FileChanged
from producers.git import Git
from producers.scan import WorkTree
from producers.source import InMemorySink, Source
from producers.watcher import KnownFiles, Watcher
from tests.inotify_watches import inotify_watches

DEFAULT_REPO = Path.home() / ".cache/gazetteer/bench/django-5.2.19-repo"


async def recursive_setup(root: Path) -> tuple[float, int]:
    stop = asyncio.Event()
    before = len(inotify_watches())
    started = time.perf_counter()
    changes = awatch(root, watch_filter=None, stop_event=stop, ignore_permission_denied=True)
    first = asyncio.ensure_future(anext(changes))
    await asyncio.sleep(0)
    setup_s = time.perf_counter() - started
    watches = len(inotify_watches()) - before
    stop.set()
    await asyncio.gather(first, return_exceptions=True)
    return setup_s, watches


async def stall_ticker(worst: list[float], stop: asyncio.Event) -> None:
    while not stop.is_set():
        at = time.perf_counter()
        await asyncio.sleep(0.005)
        worst[0] = max(worst[0], time.perf_counter() - at - 0.005)


async def main(repo: Path, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gz-rewatch-") as tmp:
        root = Path(tmp) / "django"
        shutil.copytree(repo, root, symlinks=True)
        tree = WorkTree(root, Git(root))
        known = tree.list()
        setup_s, rec_watches = await recursive_setup(root)
        await asyncio.sleep(0.3)  # the recursive notifier closes

        sink = InMemorySink()
        source = Source("bench", str(root), sink, producer="bench")
        watcher = Watcher(source, tree, debounce_ms=50, known=KnownFiles(known))
        stop, ticking, ready = asyncio.Event(), asyncio.Event(), asyncio.Event()
        before = len(inotify_watches())
        started = time.perf_counter()
        task = asyncio.create_task(watcher.run(stop, ready))  # signatures after ``ready``
        await watcher.watching.wait()
        start_s = time.perf_counter() - started
        watches = len(inotify_watches()) - before
        ready.set()

        latencies, stalls = [], []
        with capture_logs() as logs:
            for i in range(runs):
                worst = [0.0]
                ticker = asyncio.create_task(stall_ticker(worst, ticking))
                wanted = f"bench_new_{i}/m.py"
                made = time.perf_counter()
                (root / f"bench_new_{i}").mkdir()
                (root / wanted).write_text(f"m = {i}\n")
                while not any(isinstance(e, FileChanged) and e.path == wanted for e in sink.events):
                    await asyncio.sleep(0.002)
                latencies.append(time.perf_counter() - made)
                await asyncio.sleep(2.5)  # the rewatch (spaced: 2 s at most) is done
                ticking.set()
                await ticker
                ticking.clear()
                stalls.append(worst[0])
        costs = [e["cost_ms"] / 1000 for e in logs if e["event"] == "watch_rewatched"]
        await asyncio.sleep(0.2)  # the last replaced notifier closes (within a step)
        held = len(inotify_watches()) - before  # no notifier leaked by the rewatches
        stop.set()
        await task

    def ms(values: list[float]) -> str:
        if not values:
            return "n/a"
        return f"median {statistics.median(values) * 1000:.1f} ms, max {max(values) * 1000:.1f} ms"

    print(f"tree: {len(known)} files, {watcher.watched_directories} real directories")
    print(f"recursive notify (before): setup {setup_s * 1000:.1f} ms, {rec_watches} watches")
    print(f"per-directory (now): start {start_s * 1000:.1f} ms, {watches} watches")
    print(f"rewatches: {len(costs)} over {runs} new directories; cost {ms(costs)}")
    print(f"watches held after them: {held}")
    print(f"new directory + file -> FileChanged: {ms(latencies)}")
    print(f"worst event-loop stall per run: {ms(stalls)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=DEFAULT_REPO)
    parser.add_argument("--runs", type=int, default=8)
    args = parser.parse_args()
    asyncio.run(main(args.repo, args.runs))
