"""Embedding throughput and in-memory vector search latency, on this machine.

    python -m tests.bench.vectors [--texts 100] [--points 50000] [--queries 200]

1. The default embedder (all-MiniLM-L6-v2 int8 ONNX) over ``--texts`` chunks of this
   repository's own source (30-line windows of processors/**/*.py, mostly at the 256
   token cap), then the same texts again through `CachedEmbedder` (all hits).
2. `InMemoryVectorStore` with ``--points`` random unit vectors of 384 dims in one
   repository (10 chunks per file, 20 files per folder): bulk upsert time, then the
   p50/p95 latency of ``--queries`` searches (limit 10) without and with a folder
   scope, and of delete_by_path + re-upsert of one file (an edit).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from stores.text.embedding_cache import CachedEmbedder, InMemoryEmbeddingCache
from stores.text.onnx_embedder import OnnxEmbedder
from stores.vectors import InMemoryVectorStore

ROOT = Path(__file__).resolve().parents[2]


def source_chunks(limit: int) -> list[str]:
    chunks: list[str] = []
    for path in sorted((ROOT / "processors").rglob("*.py")):
        lines = path.read_text().splitlines()
        chunks += ["\n".join(lines[i : i + 30]).strip() for i in range(0, len(lines), 30)]
    return [chunk for chunk in chunks if chunk][:limit]


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {statistics.median(ordered) * 1e3:.2f} ms, p95 {p95 * 1e3:.2f} ms"


def bench_embedder(count: int) -> None:
    texts = source_chunks(count)
    started = time.perf_counter()
    embedder = OnnxEmbedder.default()
    print(f"default embedder: loaded in {time.perf_counter() - started:.2f} s")
    embedder.embed(texts[:2])  # warm-up
    cached = CachedEmbedder(embedder, InMemoryEmbeddingCache())
    started = time.perf_counter()
    cached.embed(texts)
    cold = time.perf_counter() - started
    started = time.perf_counter()
    cached.embed(texts)
    warm = time.perf_counter() - started
    print(
        f"  {len(texts)} chunks: {len(texts) / cold:.1f} chunks/s; cached {len(texts) / warm:.0f}/s"
    )


def bench_store(points: int, queries: int, dim: int = 384) -> None:
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(points, dim)).astype(np.float32)
    store = InMemoryVectorStore()
    path_of = [f"pkg{row // 200}/m{row // 10}.py" for row in range(points)]
    started = time.perf_counter()
    for start in range(0, points, 1000):
        store.upsert(
            "app",
            [
                (f"c{row}", vectors[row], {"path": path_of[row]})
                for row in range(start, min(points, start + 1000))
            ],
        )
    print(f"in-memory store: {points} x {dim} upserted in {time.perf_counter() - started:.2f} s")
    probes = rng.normal(size=(queries, dim)).astype(np.float32)
    for label, prefix in (("whole repo", None), ("folder scope", "pkg7")):
        samples = []
        for probe in probes:
            started = time.perf_counter()
            store.search("app", probe, limit=10, path_prefix=prefix)
            samples.append(time.perf_counter() - started)
        print(f"  search limit 10, {label}: {percentiles(samples)}")
    samples = []
    for row in range(0, min(points, queries * 10), 10):
        file_points = [(f"c{i}", vectors[i], {"path": path_of[i]}) for i in range(row, row + 10)]
        started = time.perf_counter()
        store.delete_by_path("app", path_of[row])
        store.upsert("app", file_points)
        samples.append(time.perf_counter() - started)
    print(f"  edit of one file (delete_by_path + upsert 10): {percentiles(samples)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--points", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    bench_embedder(args.texts)
    bench_store(args.points, args.queries)


if __name__ == "__main__":
    main()
