"""An organization of many repositories through a sharded query tier (issue 18).

    python -m tests.bench.org_simulation --repos 1000 [--workers 2] [--partitions 8]
        [--broker embedded|kafka]

Builds ``--repos`` git repositories (two commits each) as slices of 10-30 Python files
of the cached django and sympy trees (tests/bench/corpus.py), named after services so
that their ids spread over the partitions; then runs, each as its own ``gazetteer``
process on 127.0.0.1: the broker (``gazetteer broker``, the embedded Tansu; with
``--broker kafka``, Apache Kafka in KRaft mode from Maven Central, deploy/kafka_dist.py,
on which the state snapshots travel and the sources topic is compacted), ``--workers``
workers, one watcher of every repository, two replicas of each of two shards
(``serve --shard 0/2`` and ``1/2``) and ``route`` in front of them. Measured:

- ``fresh_s``: from the watcher's start until the router's ``/repositories`` (paged)
  lists every repository ``fresh``;
- RSS (``/proc``) of each replica, each worker, the watcher, the router and the broker
  (with its children), and the data directory's size;
- per-repository and org-wide search p50/p95 through the router (``--queries`` each,
  words from the corpus);
- a replica of shard 0 SIGKILLed while 4 client threads query through the router:
  requests answered other than 200 (target 0: the router retries on the other
  replica), and answers marked partial;
- a replacement replica on the killed one's port: time to ``/health`` ready;
- an edit's save → visible through the router: a function appended to a file, the
  router's ``/symbols`` of that file polled until it lists it.

Then a projection (tests/bench/org_projection.py) to 1,000 repositories of 2,000 files
and to 10,000 repositories of the simulation's mean size.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from deploy.kafka_dist import ApacheKafka
from producers.repo_id import repository_id
from query.materializer import partition_of
from tests.bench import harness
from tests.bench.corpus import GIT_ENV, package_repo
from tests.bench.org_projection import Costs, Sizing, project
from tests.e2e.cli import Gazetteer

NAME = "org_simulation"
BOOTSTRAP = re.compile(r"^(kafka://\S+)$")
ROUTER = re.compile(r"Gazetteer router on (http://\S+)")
SERVICES = (
    "billing", "payments", "ledger", "gateway", "auth", "search", "catalog", "orders",
    "inventory", "shipping", "notify", "profile", "reports", "pricing", "fraud", "audit",
)  # fmt: skip
WORD = re.compile(r"\b[a-z][a-z_]{4,20}\b")


def slices(tree: Path, rng: random.Random) -> list[list[Path]]:
    """The tree's Python files, directory by directory, cut into runs of 10-30 files."""
    by_dir: dict[Path, list[Path]] = {}
    for path in sorted(tree.rglob("*.py")):
        by_dir.setdefault(path.parent, []).append(path)
    out: list[list[Path]] = []
    pending: list[Path] = []
    for files in by_dir.values():
        pending += files
        while len(pending) >= 30:
            size = rng.randint(10, 30)
            out.append(pending[:size])
            pending = pending[size:]
    if len(pending) >= 10:
        out.append(pending)
    return out


def make_repo(dest: Path, tree: Path, files: list[Path]) -> int:
    """One repository: the files at their paths under ``tree`` (first commit), then one
    of them with a line appended (second commit). Returns the files' bytes."""
    size = 0
    for src in files:
        target = dest / src.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        size += src.stat().st_size
    env = {**os.environ, **GIT_ENV}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "import")
    first = dest / files[0].relative_to(tree)
    with first.open("a") as handle:
        handle.write("\n# reviewed\n")
    git("commit", "-q", "-am", "review")
    return size


def build_org(root: Path, count: int, seed: int = 18) -> list[dict[str, Any]]:
    """``count`` repositories under ``root``, cycling over the corpora's slices."""
    rng = random.Random(seed)
    trees = [package_repo("django").root, package_repo("sympy").root]
    pool = [(tree, s) for tree in trees for s in slices(tree, rng)]
    rng.shuffle(pool)
    plans = []
    for i in range(count):
        tree, files = pool[i % len(pool)]
        name = f"{SERVICES[i % len(SERVICES)]}-{rng.choice('abcdefghjkmnpqrstuvwxyz')}{i:04d}"
        plans.append((root / name, tree, files))
    with concurrent.futures.ThreadPoolExecutor(4) as pool_exec:
        sizes = list(pool_exec.map(lambda p: make_repo(*p), plans))
    return [
        {"root": dest, "tree": tree, "files": [f.relative_to(tree) for f in files], "bytes": b}
        for (dest, tree, files), b in zip(plans, sizes, strict=True)
    ]


def rss_mb(pid: int, tree: bool = False) -> float:
    """Resident memory of ``pid`` (and, with ``tree``, of its descendants), in MB."""
    pids = [pid]
    if tree:
        seen = 0
        while seen < len(pids):
            for task in Path(f"/proc/{pids[seen]}/task").glob("*/children"):
                pids += [int(c) for c in task.read_text().split()]
            seen += 1
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return round(total / 1024, 1)


def disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
    }


def all_repositories(client: httpx.Client) -> dict[str, dict[str, Any]]:
    """The router's ``/repositories``, every page."""
    found: dict[str, dict[str, Any]] = {}
    offset = 0
    while True:
        page = client.get("/repositories", params={"offset": offset, "limit": 1000}).json()
        found.update({i["repo"]: i for i in page["items"]})
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return found


BEHIND = "the read side last caught up with the topics"
"""The reason of a repository a replica says ``updating`` of because the replica has not
stood at the end of its topics lately (stores/freshness.py): it says so of every
repository it holds at once, so while indexing goes on the count of fresh repositories
moves by whole shards from one poll to the next (docs/PERFORMANCE.md)."""


def not_fresh(known: dict[str, dict[str, Any]], expected: int) -> str:
    """Why a poll counts fewer: repositories unlisted (a shard missing), those whose
    replica was behind its topics, and the others not fresh yet."""
    behind = sum(1 for i in known.values() if BEHIND in i["freshness"]["reason"])
    other = sum(1 for i in known.values() if i["freshness"]["status"] != "fresh") - behind
    return f"unlisted {expected - len(known)}, replica behind {behind}, not yet {other}"


def wait(predicate: Any, timeout: float, what: str, step: float = 1.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if predicate():
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        time.sleep(step)
    raise TimeoutError(f"{what} after {timeout:.0f} s")


def corpus_words(org: list[dict[str, Any]], rng: random.Random, n: int) -> list[str]:
    words: list[str] = []
    for repo in rng.sample(org, min(len(org), 40)):
        text = (repo["root"] / repo["files"][0]).read_text(errors="replace")
        words += WORD.findall(text)[:50]
    return [" ".join(rng.sample(words, 2)) for _ in range(n)]


@contextlib.contextmanager
def apache_kafka(partitions: int, heap: str) -> Any:
    """Apache Kafka for the run, its JVM started and stopped from this (synchronous)
    process: yields the bootstrap address and the JVM's pid."""
    kafka = ApacheKafka(partitions=partitions, heap=heap)
    asyncio.run(kafka.start())
    try:
        yield kafka.bootstrap, kafka.pid
    finally:
        asyncio.run(kafka.stop())


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.broker == "kafka":
        with apache_kafka(args.partitions, args.kafka_heap) as (bootstrap, pid):
            return _run(args, (f"kafka://{bootstrap}", pid))
    return _run(args, None)


def _run(args: argparse.Namespace, kafka: tuple[str, int | None] | None) -> dict[str, Any]:
    """``kafka``: the bootstrap URL and pid of a running Apache Kafka (None: the run
    starts the embedded broker as one of its parts)."""
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="gazetteer-org-"))
    parts: list[Gazetteer] = []
    try:
        started = time.monotonic()
        org = build_org(work / "org", args.repos, args.seed)
        build_s = time.monotonic() - started
        files = sum(len(r["files"]) for r in org)
        dirs = sum(len({f.parent for f in r["files"]}) + 1 for r in org)
        harness.progress(f"{len(org)} repositories, {files} files in {build_s:.1f} s")
        rids = {repository_id(r["root"], None): r for r in org}
        spread = [sum(1 for rid in rids if partition_of(rid, args.partitions) == p)
                  for p in range(args.partitions)]  # fmt: skip
        data = work / "data"
        env = {"GAZETTEER_PARTITIONS": str(args.partitions), "GAZETTEER_LOG_LEVEL": "warning"}
        if kafka is None:
            broker = Gazetteer(["broker"], data, **env)
            parts.append(broker)
            bootstrap = broker.wait_for_line(BOOTSTRAP).group(1)
            broker_pid: int | None = broker.pid
        else:
            bootstrap, broker_pid = kafka
        on = ["--broker", bootstrap]
        workers = [Gazetteer([*on, "worker"], data, **env) for _ in range(args.workers)]
        parts += workers
        replicas: dict[str, list[Gazetteer]] = {"0/2": [], "1/2": []}
        for shard in ("0/2", "0/2", "1/2", "1/2"):
            replica = Gazetteer([*on, "serve", "--port", "0", "--shard", shard], data, **env)
            replicas[shard].append(replica)
            parts.append(replica)
        urls = {s: [r.url(120) for r in rs] for s, rs in replicas.items()}
        shards = [a for s, u in urls.items() for a in ("--shard", f"{s}={','.join(u)}")]
        router = Gazetteer(["route", "--port", "0", *shards], data, **env)
        parts.append(router)
        routed = router.wait_for_line(ROUTER, 120).group(1)
        client = httpx.Client(base_url=routed, timeout=60)
        watch_started = time.monotonic()
        watcher = Gazetteer([*on, "watch", *(str(r["root"]) for r in org)], data, **env)
        parts.append(watcher)

        def every_fresh() -> bool:
            known = all_repositories(client)
            done = sum(1 for i in known.values() if i["freshness"]["status"] == "fresh")
            harness.progress(f"fresh {done}/{len(rids)}; {not_fresh(known, len(rids))}")
            return done == len(rids) and set(known) == set(rids)

        wait(every_fresh, args.timeout, "every repository fresh", step=5.0)
        fresh_s = time.monotonic() - watch_started
        harness.progress(f"all fresh after {fresh_s:.1f} s")
        time.sleep(10)  # let reclusters and snapshots settle before measuring memory
        memory = {
            "replicas": {
                f"{s}#{i}": rss_mb(r.pid) for s, rs in replicas.items() for i, r in enumerate(rs)
            },
            "workers": [rss_mb(w.pid) for w in workers],
            "watcher": rss_mb(watcher.pid),
            "router": rss_mb(router.pid),
            "broker": rss_mb(broker_pid, tree=True) if broker_pid is not None else 0.0,
        }
        disk = {"data_dir_mb": disk_mb(data), "state_mb": disk_mb(data / "state")}
        harness.progress(f"memory {memory} disk {disk}")

        questions = corpus_words(org, rng, args.queries)
        ids = sorted(rids)
        per_repo: list[float] = []
        org_wide: list[float] = []
        for q in questions:
            rid = rng.choice(ids)
            t = time.perf_counter()
            client.get(f"/repositories/{rid}/search", params={"q": q}).raise_for_status()
            per_repo.append(time.perf_counter() - t)
            t = time.perf_counter()
            client.get("/search", params={"q": q}).raise_for_status()
            org_wide.append(time.perf_counter() - t)
        latency = {"per_repository": percentiles(per_repo), "org_wide": percentiles(org_wide)}
        harness.progress(f"latency {latency}")

        # A replica SIGKILLed under load: 4 clients, per-repository and org-wide queries.
        stop = threading.Event()
        tally = {"requests": 0, "errors": 0, "partial": 0}
        lock = threading.Lock()
        failures: list[str] = []

        def load(seed: int) -> None:
            local = random.Random(seed)
            with httpx.Client(base_url=routed, timeout=60) as c:
                while not stop.is_set():
                    q = local.choice(questions)
                    org_wide = local.random() < 0.5
                    what = "/search" if org_wide else f"/repositories/{local.choice(ids)}/search"
                    try:
                        r = c.get(what, params={"q": q})
                        status = str(r.status_code)
                        partial = org_wide and status == "200" and r.json().get("partial") is True
                        if status != "200":
                            status += f" {r.text[:120]}"
                    except httpx.HTTPError as error:
                        status, partial = type(error).__name__, False
                    with lock:
                        tally["requests"] += 1
                        tally["partial"] += partial
                        if status != "200":
                            tally["errors"] += 1
                            failures.append(f"{what}: {status}")

        threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
        for th in threads:
            th.start()
        time.sleep(args.load_s / 2)
        victim = replicas["0/2"][0]
        port = int(urls["0/2"][0].rsplit(":", 1)[1])
        victim.crash()
        killed_at = time.monotonic()
        time.sleep(args.load_s / 2)
        replacement = Gazetteer([*on, "serve", "--port", str(port), "--shard", "0/2"], data, **env)
        parts.append(replacement)
        replacement_url = replacement.url(120)

        def ready() -> bool:
            return bool(httpx.get(f"{replacement_url}/health", timeout=5).json()["ready"])

        ready_s = wait(ready, args.timeout, "the replacement ready", step=0.2)
        ready_cpu_s = harness.process_cpu_s(replacement.pid)  # its own work, not the wait
        time.sleep(2)
        stop.set()
        for th in threads:
            th.join()
        kill = {
            **tally,
            "failures": failures[:10],
            "load_s_after_kill": round(time.monotonic() - killed_at, 1),
            "replacement_ready_s": round(ready_s, 2),
            "replacement_cpu_s": round(ready_cpu_s, 2),
            "replacement_same_port": replacement_url.endswith(f":{port}"),
            "replacement_rss_mb": rss_mb(replacement.pid),
        }
        harness.progress(f"kill {kill}")

        # An edit's save -> visible through the router.
        edits: list[float] = []
        missed: list[str] = []  # edits not visible within --edit-timeout
        for n in range(args.edits):
            rid = rng.choice(ids)
            repo = rids[rid]
            rel = str(repo["files"][-1])
            marker = f"org_sim_marker_{n}_{rng.randrange(10**6)}"
            with (repo["root"] / rel).open("a") as handle:
                handle.write(f"\n\ndef {marker}():\n    return {n}\n")
            saved = time.monotonic()

            def visible(rid: str = rid, rel: str = rel, marker: str = marker) -> bool:
                page = client.get(
                    f"/repositories/{rid}/symbols", params={"path": rel, "limit": 1000}
                )
                return any(s["name"] == marker for s in page.json()["items"])

            try:
                wait(visible, args.edit_timeout, "the edit visible", step=0.05)
            except TimeoutError:  # recorded, not fatal: the run's other figures stand
                missed.append(f"{rid}:{rel}")
                continue
            edits.append(time.monotonic() - saved)
        edit: dict[str, Any] = {"n": len(edits), "not_visible": missed}
        if edits:
            edit |= {"p50_ms": round(statistics.median(edits) * 1000),
                     "max_ms": round(max(edits) * 1000)}  # fmt: skip
        harness.progress(f"edit {edit}")

        worker_rss = statistics.mean(memory["workers"])
        replica_rss = statistics.mean(memory["replicas"].values())
        base_mb, per_file_mb = memory["router"], (replica_rss - memory["router"]) / (files / 2)
        if args.baseline:
            # The slope between two runs: a replica's memory per file it holds, without
            # what a replica holds whatever its size.
            small = json.loads(args.baseline.read_text())
            small_rss = statistics.mean(small["memory_mb"]["replicas"].values())
            per_file_mb = (replica_rss - small_rss) / ((files - small["files"]) / 2)
            base_mb = replica_rss - per_file_mb * files / 2
        broker_mb = disk["data_dir_mb"] - disk["state_mb"]
        costs = Costs(
            replica_base_mb=round(base_mb, 1),
            replica_mb_per_file=round(per_file_mb, 4),
            state_disk_kb_per_file=round(disk["state_mb"] * 1000 / files, 2),
            broker_disk_kb_per_file=round(broker_mb * 1000 / files, 2),
            worker_files_per_s=round(files / fresh_s / args.workers, 1),
            dirs_per_file=round(dirs / files, 3),
        )
        mean_size = round(files / len(org))
        projections = [
            project(costs, 1000, 2000, Sizing()),
            project(costs, 10_000, mean_size, Sizing()),
            project(costs, 10_000, 2000, Sizing(workers=16)),
        ]
        return {
            "benchmark": NAME,
            "machine": harness.machine(),
            "broker": args.broker,
            "repos": len(org),
            "files": files,
            "bytes": sum(r["bytes"] for r in org),
            "partitions": args.partitions,
            "repos_per_partition": spread,
            "workers": args.workers,
            "build_s": round(build_s, 1),
            "fresh_s": round(fresh_s, 1),
            "memory_mb": memory,
            "worker_mean_mb": round(worker_rss, 1),
            "disk_mb": disk,
            "search": latency,
            "kill_under_load": kill,
            "edit_visible": edit,
            "costs": _asdict(costs),
            "projections": projections,
        }
    finally:
        for part in reversed(parts):
            part.kill()
        shutil.rmtree(work, ignore_errors=True)


def _asdict(costs: Costs) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(costs)


def table(result: dict[str, Any]) -> str:
    m, s, k, e = (
        result["memory_mb"],
        result["search"],
        result["kill_under_load"],
        result["edit_visible"],
    )
    rows = [
        ("broker", result.get("broker", "embedded")),
        ("repositories / files", f"{result['repos']} / {result['files']}"),
        ("generation", f"{result['build_s']} s"),
        ("every repository fresh (router)", f"{result['fresh_s']} s"),
        ("replica RSS (MB)", ", ".join(f"{n} {v}" for n, v in m["replicas"].items())),
        ("worker RSS (MB)", ", ".join(map(str, m["workers"]))),
        ("watcher / router / broker RSS (MB)", f"{m['watcher']} / {m['router']} / {m['broker']}"),
        (
            "data dir / state (MB)",
            f"{result['disk_mb']['data_dir_mb']} / {result['disk_mb']['state_mb']}",
        ),
        (
            "per-repo search p50/p95",
            f"{s['per_repository']['p50_ms']} / {s['per_repository']['p95_ms']} ms",
        ),
        ("org-wide search p50/p95", f"{s['org_wide']['p50_ms']} / {s['org_wide']['p95_ms']} ms"),
        (
            "replica killed under load",
            f"{k['errors']} errors, {k['partial']} partial of {k['requests']}",
        ),
        (
            "replacement to ready (its CPU)",
            f"{k['replacement_ready_s']} s ({k.get('replacement_cpu_s', '-')} s)",
        ),
        (
            "edit save -> visible p50/max",
            f"{e.get('p50_ms', '-')} / {e.get('max_ms', '-')} ms ({e['n']} edits"
            + (f"; not visible: {len(e['not_visible'])})" if e.get("not_visible") else ")"),
        ),
    ]
    for p in result["projections"]:
        rows.append((
            f"projection {p['repos']:,} x {p['files_per_repo']:,} files",
            f"{p['shards']} shards, {p['replicas']} replicas of {p['replica_mb']:,} MB "
            f"({p['memory_gb']:,} GB), {p['partitions']} partitions, {p['disk_gb']:,} GB disk, "
            f"index {p['initial_index_h']} h ({p['sizing']['workers']} workers); "
            f"breaks first: {p['breaks_first']}",
        ))  # fmt: skip
    return harness.markdown_table(("what", "result"), rows)


def main() -> None:
    parser = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--load-s", type=float, default=20.0, help="query load around the kill")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument(
        "--edit-timeout", type=float, default=120.0, help="an edit not visible by then is missed"
    )
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--broker", choices=["embedded", "kafka"], default="embedded")
    parser.add_argument("--kafka-heap", default="2g", help="Apache Kafka's JVM heap")
    parser.add_argument(
        "--baseline", type=Path, help="a smaller run's JSON: replica memory per file as the slope"
    )
    args = parser.parse_args()
    result = run(args)
    print(table(result))
    name = NAME if args.repos == 1000 else f"{NAME}_{args.repos}"
    path = harness.write_json(name if args.broker == "embedded" else f"{name}_kafka", result)
    harness.progress(f"wrote {path}")


if __name__ == "__main__":
    main()
