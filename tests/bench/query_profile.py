"""Where a query's milliseconds go: search, context and file details on one read model.

    python -m tests.bench.query_profile [--corpus django] [--requests 300]
        [--embedder default] [--embed-files 40] [--profile search|context|file|none]

The read model is `tests.bench.query_latency.build_read_model`'s (the corpus folded in
process, reclustered, the chunks of the ``--embed-files`` most important files embedded).
The questions and paths are the load benchmark's (`tests.bench.load_freshness`:
file-name questions, its request mix). Measured one request at a time, in one process,
on one thread (so no gate waits: under N closed-loop clients a request's latency is
the queue in front of it, N / throughput by Little's law):

- the stages of a search, each timed alone over the same questions (wall and CPU):
  the question's embedding, the vector store's search, BM25 (`rank_files`), the whole
  ranking (`RepoRetrieval.search`);
- each route's endpoint called directly (no HTTP layer: its own work, the answer's
  pydantic models built), then the whole ASGI app called with a raw request (routing,
  parameters, the middlewares, the response model's validation and JSON): the
  difference is the HTTP layer's;
- with ``--profile KIND``: cProfile over that kind's endpoint calls, the top functions
  by cumulative time.

A second run of the same questions is measured (``warm``): what a cache keyed on the
question or the state version saves shows there.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import io
import pstats
import random
import statistics
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from deploy.logging_setup import configure_logging
from query.api import create_api
from query.dense import DenseIndex
from query.read_model import ReadModel
from query.search.adjacency import Adjacency
from query.search.ranking import question_read
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.load_freshness import questions_of
from tests.bench.load_phase import MIX
from tests.bench.query_latency import build_read_model, percentile

NAME = "query_profile"
KINDS = ("search", "context", "file")


def timed(calls: Sequence[Callable[[], object]]) -> dict[str, float]:
    """Mean wall and CPU ms per call, and the wall p50 / p95."""
    walls, cpus = [], []
    for call in calls:
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        cpus.append((time.process_time() - cpu) * 1000)
        walls.append((time.perf_counter() - wall) * 1000)
    return {
        "wall_mean_ms": statistics.fmean(walls),
        "cpu_mean_ms": statistics.fmean(cpus),
        "wall_p50_ms": statistics.median(walls),
        "wall_p95_ms": percentile(walls, 0.95),
    }


def endpoint(api: FastAPI, path: str) -> Callable[..., Awaitable[Any]]:
    routes = list(api.routes)
    while routes:
        route = routes.pop()
        if isinstance(route, APIRoute) and route.path == path:
            return route.endpoint
        included = getattr(route, "original_router", None)  # FastAPI's included routers
        if included is not None:
            routes.extend(included.routes)
    raise LookupError(path)


def direct_call(api: FastAPI, repo: str, kind: str, arg: str) -> Callable[[], object]:
    """The route's endpoint with every parameter given (no HTTP layer)."""
    if kind == "search":
        fn = endpoint(api, "/repositories/{repo}/search")
        kwargs: dict[str, Any] = dict(
            repo=repo, q=arg, limit=10, path_prefix=None, max_tokens=2000, session=None
        )
    elif kind == "context":
        fn = endpoint(api, "/repositories/{repo}/context")
        kwargs = dict(repo=repo, q=arg, symbol=None, path=None, budget=8000, seeds=3, session=None)
    else:
        fn = endpoint(api, "/repositories/{repo}/files/{path:path}")
        kwargs = dict(repo=repo, path=arg, limit=200)
    return lambda: _run(fn(**kwargs))


def _run(awaitable: Awaitable[Any]) -> Any:
    """Drive a coroutine that never suspends (the endpoints have no await inside)."""
    coroutine = awaitable.__await__()
    try:
        while True:
            next(coroutine)
    except StopIteration as done:
        return done.value


def asgi_call(api: FastAPI, repo: str, kind: str, arg: str) -> Callable[[], object]:
    """The whole app for one GET, as uvicorn calls it (a raw ASGI scope)."""
    from urllib.parse import quote, urlencode

    if kind == "file":
        path, query = f"/repositories/{repo}/files/{arg}", b""
    else:
        path, query = f"/repositories/{repo}/{kind}", urlencode({"q": arg}).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": quote(path).encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }

    def call() -> object:
        sent: list[MutableMapping[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            sent.append(message)

        LOOP.run_until_complete(api(scope, receive, send))
        if sent[0]["status"] != 200:
            raise RuntimeError(f"{path}: {sent[0]['status']} {sent[1:]}")
        return sent

    return call


LOOP = asyncio.new_event_loop()


def requests_of(
    questions: Sequence[str], paths: Sequence[str], count: int
) -> list[tuple[str, str]]:
    rng = random.Random(0)
    out = []
    for _ in range(count):
        kind = rng.choice(MIX)
        out.append((kind, rng.choice(paths) if kind == "file" else rng.choice(questions)))
    return out


def stages(model: ReadModel, repo: str, questions: Sequence[str]) -> dict[str, dict[str, float]]:
    """The stages of a search, each alone over the questions."""
    view = model.repos[repo]
    retrieval = view.retrieval
    importance = view.neighborhoods.importance() if view.neighborhoods else {}
    out: dict[str, dict[str, float]] = {}
    reads = [question_read(q) for q in questions]
    dense = retrieval.dense
    if dense is not None:
        inner = dense.embedder.inner
        out["question embedding (model)"] = timed(
            [functools.partial(inner.embed, [q]) for q in reads]
        )
        vectors = {q: inner.embed([q])[0] for q in reads}
        out["vector store search"] = timed(
            [functools.partial(dense.store.search, repo, vectors[q], 800) for q in reads]
        )
        out["dense search (embed + store + best per file)"] = timed(
            [functools.partial(dense.search, repo, q, limit=200) for q in reads]
        )
    out["BM25 rank_files (pool 200)"] = timed(
        [functools.partial(retrieval.sparse.rank_files, q, 200) for q in reads]
    )
    snapshot = view.neighborhoods
    out["importance dict (per request)"] = timed(
        [snapshot.importance if snapshot else dict for _ in reads]
    )
    out["RepoRetrieval.search (whole ranking)"] = timed(
        [functools.partial(retrieval.search, q, limit=10, importance=importance) for q in reads]
    )
    state = view.state
    adjacency = Adjacency.of(state)
    files = sorted(p for p in state.files if p.endswith(".py"))[:: max(1, len(state.files) // 50)]

    def scan(path: str) -> list[str]:
        node = f"file:{path}"
        return sorted(
            k[0].split(":", 1)[1] for k in state.edges if k[1] == node and k[2] == "IMPORTS"
        )

    out["file's imported_by: a scan of every edge"] = timed(
        [functools.partial(scan, p) for p in files]
    )
    if hasattr(adjacency, "importing_paths"):  # not in the code before issue 15's change
        out["file's imported_by: Adjacency.importing_paths"] = timed(
            [functools.partial(adjacency.importing_paths, p) for p in files]
        )
    out["Adjacency.of (once per state version)"] = timed(
        [functools.partial(Adjacency.of, state)] * 3
    )
    return out


def cold(call: Callable[[], object], dense: DenseIndex | None) -> Callable[[], object]:
    """``call`` with the question vectors' cache emptied first (where it exists)."""
    questions = getattr(dense, "questions", None)

    def emptied() -> object:
        if questions is not None:
            questions._vectors.clear()
        return call()

    return emptied


def run(args: argparse.Namespace) -> dict[str, Any]:
    built = build_read_model(args.corpus, args.embedder, args.embed_files)
    model, repo = built.model, args.corpus
    api = create_api(model, ready=lambda: True)
    paths = sorted(p for p in model.repos[repo].state.files if p.endswith(".py"))
    questions = questions_of(paths)
    mix = requests_of(questions, paths, args.requests)
    result: dict[str, Any] = {"chunks": len(model.repos[repo].retrieval.chunks)}
    result["embedded"] = built.embedded
    dense = model.repos[repo].retrieval.dense
    for run_name in ("cold", "warm"):
        result[f"stages_{run_name}"] = stages(model, repo, questions)
        for layer, make in (("endpoint", direct_call), ("asgi", asgi_call)):
            for kind in KINDS:
                calls = [make(api, repo, k, a) for k, a in mix if k == kind]
                if run_name == "cold":  # every question new: nothing cached of it
                    calls = [cold(call, dense) for call in calls]
                result[f"{layer}_{kind}_{run_name}"] = timed(calls)
        progress(f"{run_name} run done")
    if args.profile != "none":
        calls = [direct_call(api, repo, k, a) for k, a in mix if k == args.profile]
        if args.profile_cold:
            calls = [cold(call, dense) for call in calls]
        profiler = cProfile.Profile()
        profiler.enable()
        for call in calls:
            call()
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(args.top)
        result["profile"] = text.getvalue()
        print(result["profile"])
    return result


def report(result: dict[str, Any]) -> str:
    header = ["", "cold wall mean / p95 ms (CPU mean)", "warm wall mean / p95 ms (CPU mean)"]
    rows: list[list[object]] = []

    def cell(t: dict[str, float]) -> str:
        return f"{t['wall_mean_ms']:.2f} / {t['wall_p95_ms']:.2f} ({t['cpu_mean_ms']:.2f})"

    for name, cold_stage in result["stages_cold"].items():
        rows.append([name, cell(cold_stage), cell(result["stages_warm"][name])])
    for layer in ("endpoint", "asgi"):
        for kind in KINDS:
            label = f"{kind}: {'endpoint (no HTTP)' if layer == 'endpoint' else 'ASGI app'}"
            rows.append(
                [label, cell(result[f"{layer}_{kind}_cold"]), cell(result[f"{layer}_{kind}_warm"])]
            )
    return harness.markdown_table(header, rows)


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="django")
    cli.add_argument("--requests", type=int, default=300)
    cli.add_argument("--embedder", default="default")
    cli.add_argument("--embed-files", type=int, default=40)
    cli.add_argument("--profile", choices=(*KINDS, "none"), default="none")
    cli.add_argument("--top", type=int, default=40)
    cli.add_argument("--profile-cold", action="store_true", help="profile uncached questions")
    args = cli.parse_args()
    configure_logging("warning")
    result = run(args)
    print(report(result))
    payload = {"benchmark": NAME, "machine": harness.machine(), "options": vars(args), **result}
    progress(f"wrote {harness.write_json(NAME + '_' + args.corpus, payload)}")


if __name__ == "__main__":
    main()
