"""A long question's cost: /search for questions of ~50 KB on a real code base.

    python -m tests.bench.long_question [--tree PATH] [--kb 50] [--repeat 3] [--profile]

A package tree on this disk (default: the installed ``networkx``, ~19 MB) is indexed
in process (RepoIndex, a full scan's events) and folded into a ReadModel with its
neighborhoods, as `query_latency` does; then questions of ``--kb`` kilobytes of
several shapes go through the HTTP app in process (``/search``), timed per request
(the best of ``--repeat``): prose (the repository's docstrings pasted one after the
other), a pasted file of code, a quoted Python traceback, and one unbroken token.
``--profile`` prints cProfile's top functions for the slowest shape. Issue 15: a
50 KB question held the event loop 1.2 s.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import pstats
import time
from pathlib import Path

from fastapi.testclient import TestClient

from deploy.logging_setup import configure_logging
from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.read_model import ReadModel
from stores.projections.graph_state import FileGraphState
from tests.bench.harness import progress
from tests.factories import Stamp

REPO = "bench"


def default_tree() -> Path:
    spec = importlib.util.find_spec("networkx")
    assert spec is not None and spec.origin is not None, "networkx is not installed"
    return Path(spec.origin).parent


def read_tree(root: Path) -> dict[str, bytes]:
    return {
        f"{root.name}/{p.relative_to(root).as_posix()}": p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def build_model(files: dict[str, bytes]) -> ReadModel:
    index, model, stamp = RepoIndex(REPO), ReadModel(), Stamp(repo=REPO)
    texts = {p: d.decode() for p, d in files.items() if p.endswith(".py")}
    events = [stamp.claim(), *(stamp.changed(p, t, origin="scan") for p, t in texts.items())]
    for event in [*events, stamp.scan_completed(commit=None, files=len(texts))]:
        delta = index.handle(event, time.time())
        if delta is not None:
            model.apply_delta(delta)
    state = model.repos[REPO].state
    model.apply_snapshot(
        recluster(FileGraphState.of(state), None, ReclusterSettings(), now=time.time())
    )
    return model


def shapes(model: ReadModel, files: dict[str, bytes], size: int) -> dict[str, str]:
    """Questions of about ``size`` characters, one per shape."""
    state = model.repos[REPO].state
    docs = [s.doc for r in sorted(state.files.values(), key=lambda r: r.path)
            for s in r.symbols if s.doc]  # fmt: skip
    prose = "\n\n".join(docs)
    code = "\n".join(files[p].decode(errors="replace") for p in sorted(files) if p.endswith(".py"))
    py = sorted(p for p in files if p.endswith(".py"))
    frames = "".join(
        f'  File "/home/u/venv/lib/python3.11/site-packages/{p}", line {i + 10}, in f{i}\n'
        f"    result = call_{i}(graph, weight='weight')\n"
        for i, p in enumerate(py * 50)
    )
    traceback = "Traceback (most recent call last):\n" + frames
    return {
        "prose": prose[:size],
        "code": code[:size],
        "traceback": traceback[:size] + "\nValueError: boom",
        "one_token": "a" * size,
    }


def timed(client: TestClient, q: str, repeat: int) -> tuple[float, dict[str, object]]:
    best, body = float("inf"), {}
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(f"/repositories/{REPO}/search", params={"q": q})
        best = min(best, time.perf_counter() - started)
        assert response.status_code == 200, response.text
        body = response.json()
    return best * 1000, body


def main() -> None:
    cli = argparse.ArgumentParser(prog="python -m tests.bench.long_question", description=__doc__)
    cli.add_argument("--tree", type=Path, default=None)
    cli.add_argument("--kb", type=int, default=50)
    cli.add_argument("--repeat", type=int, default=3)
    cli.add_argument("--profile", action="store_true")
    args = cli.parse_args()
    configure_logging("warning")
    files = read_tree(args.tree or default_tree())
    progress(f"indexing {len(files)} files")
    model = build_model(files)
    progress(f"{len(model.repos[REPO].retrieval.chunks)} chunks")
    client = TestClient(create_api(model, ready=lambda: True))
    results = {}
    for name, q in shapes(model, files, args.kb * 1000).items():
        ms, body = timed(client, q, args.repeat)
        results[name] = ms
        top = [item["path"] for item in body["items"][:2]]  # type: ignore[index]
        extra = {k: body[k] for k in ("question_chars", "question_truncated") if k in body}
        print(f"{name:10s} {len(q):6d} chars  {ms:8.1f} ms  {extra}  top: {top}")
    if args.profile:
        worst = max(results, key=results.__getitem__)
        q = shapes(model, files, args.kb * 1000)[worst]
        view = model.repos[REPO]
        importance = view.neighborhoods.importance() if view.neighborhoods else {}
        profiler = cProfile.Profile()  # the ranking itself: the test client runs in threads
        profiler.enable()
        view.retrieval.search(q, importance=importance)
        profiler.disable()
        print(f"profile of {worst}:")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
