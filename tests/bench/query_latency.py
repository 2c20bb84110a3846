"""Query latency of search and of context packs on a real code base, embedded mode.

    python -m tests.bench.query_latency [--corpus sympy|django] [--queries 100]
        [--embedder none|hash:256|default] [--embed-files 300]

The corpus is indexed in process (RepoIndex), its deltas folded into a ReadModel as
the query service folds them (retrieval index included); a recluster gives the
importance. With an embedder, the chunks of the ``--embed-files`` most important
files get vectors first (all of them with 0), as the background filler would. Then
``--queries`` questions (function docstrings, seeded) go through the HTTP app
in process: ``/search`` and ``/context``, timed per request. Memory: tracemalloc of
the read side (state, retrieval index, embedding queue) after the fold, the indexer
dropped.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient

from deploy.logging_setup import configure_logging
from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.api import create_api
from query.dense import DenseIndex
from query.read_model import ReadModel
from stores.projections.graph_state import FileGraphState
from stores.text.embedders import embedder_from_spec
from stores.text.embedding_cache import InMemoryEmbeddingCache
from stores.vectors import InMemoryVectorStore
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import package_tree, scan_events
from tests.factories import Stamp

NAME = "query_latency"
SEED = 20240101


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def questions(model: ReadModel, repo: str, count: int) -> list[str]:
    docs = sorted(
        (s.doc.split("\n")[0], r.path)
        for r in model.repos[repo].state.files.values()
        for s in r.symbols
        if s.doc and len(s.doc) > 30 and s.kind in ("FUNCTION", "METHOD")
    )
    rng = random.Random(SEED)
    return [doc for doc, _ in rng.sample(docs, min(count, len(docs)))]


@dataclass(frozen=True, slots=True)
class Built:
    """A corpus folded into a read model as the query service folds it."""

    model: ReadModel
    version: str
    embedded: int
    read_side_mb: float


def build_read_model(corpus: str, embedder: str, embed_files: int) -> Built:
    """The corpus indexed in process, its deltas folded into a ReadModel (retrieval
    included), reclustered for importance; with an embedder, the chunks of the
    ``embed_files`` most important files (all with 0) embedded first."""
    tree = package_tree(corpus)
    stamp = Stamp(repo=corpus)
    events = scan_events(tree.files, stamp)
    dense = (
        None
        if embedder == "none"
        else DenseIndex(
            embedder_from_spec(embedder), InMemoryVectorStore(), InMemoryEmbeddingCache()
        )
    )
    index, model = RepoIndex(corpus), ReadModel(dense=dense)
    progress(f"{corpus}: indexing {len(events)} events")
    gc.collect()
    tracemalloc.start()
    for event in events:
        delta = index.handle(event, time.time())
        if delta is not None:
            model.apply_delta(delta)
    del index, events  # what stays is the read side: state, retrieval, the queue
    gc.collect()
    read_side_mb = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    state = model.repos[corpus].state
    model.apply_snapshot(
        recluster(FileGraphState.of(state), None, ReclusterSettings(), now=time.time())
    )
    embedded = 0
    if dense is not None:
        started = time.perf_counter()
        snapshot = model.repos[corpus].neighborhoods
        assert snapshot is not None
        ranking = sorted(snapshot.files, key=lambda f: (-f.importance, f.path))
        chosen = ranking[:embed_files] if embed_files else ranking
        wanted = {f.path for f in chosen}
        while (picked := dense.next_batch()) is not None:
            repo, chunks = picked
            keep = [c for c in chunks if c.path in wanted]
            if keep:
                dense.store_vectors(repo, keep, dense.vectors(keep))
                embedded += len(keep)
        progress(f"embedded {embedded} chunks in {time.perf_counter() - started:.1f} s")
    return Built(model, tree.version, embedded, read_side_mb)


def run(corpus: str, count: int, embedder: str, embed_files: int) -> dict[str, Any]:
    built = build_read_model(corpus, embedder, embed_files)
    model, embedded, read_side_mb = built.model, built.embedded, built.read_side_mb
    client = TestClient(create_api(model, ready=lambda: True))
    asked = questions(model, corpus, count)
    timings: dict[str, list[float]] = {"search": [], "context": []}
    for question in asked:
        for kind, params in (("search", {"q": question}), ("context", {"q": question})):
            started = time.perf_counter()
            response = client.get(f"/repositories/{corpus}/{kind}", params=params)
            timings[kind].append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
    chunks = len(model.repos[corpus].retrieval.chunks)
    return {
        "corpus": corpus,
        "version": built.version,
        "chunks": chunks,
        "embedder": embedder,
        "embedded": embedded,
        "read_side_mb": read_side_mb,
        "queries": len(asked),
        **{
            f"{kind}_{name}_ms": fn(values)
            for kind, values in timings.items()
            for name, fn in (
                ("p50", statistics.median),
                ("p95", lambda v: percentile(v, 0.95)),
                ("max", max),
            )
        },
    }


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="sympy")
    cli.add_argument("--queries", type=int, default=100)
    cli.add_argument("--embedder", default="none")
    cli.add_argument("--embed-files", type=int, default=300)
    args = cli.parse_args()
    configure_logging("warning")
    result = run(args.corpus, args.queries, args.embedder, args.embed_files)
    header = ["corpus", "chunks", "embedder (chunks embedded)", "read side MB",
              "search p50 / p95 / max ms", "context p50 / p95 / max ms"]  # fmt: skip
    row = [
        f"{result['corpus']} {result['version']}",
        result["chunks"],
        f"{result['embedder']} ({result['embedded']})",
        round(result["read_side_mb"]),
        f"{result['search_p50_ms']:.0f} / {result['search_p95_ms']:.0f} / "
        f"{result['search_max_ms']:.0f}",
        f"{result['context_p50_ms']:.0f} / {result['context_p95_ms']:.0f} / "
        f"{result['context_max_ms']:.0f}",
    ]
    print(harness.markdown_table(header, [row]))
    payload = {"benchmark": NAME, "machine": harness.machine(), "result": result}
    progress(f"wrote {harness.write_json(NAME + '_' + args.corpus, payload)}")


if __name__ == "__main__":
    main()
