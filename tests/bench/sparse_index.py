"""Chunking and the sparse (BM25) index on a real code base (django from its wheel).

    python -m tests.bench.sparse_index [--corpus django|sympy] [--queries 100]

In process, no broker. Steps:

a. parse: `parse_file` over every file the file reader would send inline (untimed
   beyond a total), into `FileRecord`s;
b. chunk: `chunk_file` over every record; chunks per kind, chunks per second;
c. build: a fresh `SparseIndex`, one `add_file` per file; seconds, chunks per second,
   vocabulary, tracemalloc growth;
d. queries: ``--queries`` functions drawn (seeded) among functions and methods whose
   docstring has at least 5 tokens; the docstring is the query. Before each query the
   function's file is re-added with that docstring cut out of the function's chunk
   (timed: an incremental replace), so the query cannot match its own text; after it
   the file is restored. Timed: `search(limit=10)` and `rank_files(limit=10)`, p50/p95.
   Quality (docstring -> function, as DESIGN.md section 5 measured it): MRR and R@5 of
   the function's chunk, Acc@1/5 of its file by best chunk, against whole-file BM25
   (`FileBM25`, plain and code-aware tokens) over the same file texts, docstring cut.

The machine may be shared: wall times come with the load average at the start.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import re
import time
import tracemalloc
from collections import Counter
from typing import Any

from processors.chunks import chunk_file
from processors.parsing import parse_file
from producers.file_reader import DEFAULT_MAX_BYTES, classify
from query.search.sparse import FileBM25, SparseIndex
from stores.records import ChunkRecord, FileRecord
from stores.text.tokens import tokenize
from tests.bench import harness
from tests.bench.graph_edits import percentile
from tests.bench.harness import progress
from tests.bench.package_tree import CORPORA, package_tree

NAME = "sparse_index"
SEED = 20240101
LIMIT = 10
_DOCSTRING = re.compile(r"(?s)[rRuU]?(\"\"\"|''')(.*?)\1")


def records(files: dict[str, bytes]) -> tuple[list[tuple[FileRecord, bytes]], float]:
    """Every file as a scan records it (binary and oversized ones skipped)."""
    out, started = [], time.perf_counter()
    for path, data in sorted(files.items()):
        read = classify(data, max_bytes=DEFAULT_MAX_BYTES)
        content = read.content or b""
        parsed = parse_file(path, content)
        record = FileRecord(
            path=path,
            language=parsed.language,
            size=read.size,
            lines=parsed.lines,
            content_hash=read.content_hash,
            skipped=read.skipped,
            parse_errors=parsed.parse_errors,
            problems=parsed.problems,
            symbols=parsed.symbols,
            origin="scan",
            commit=None,
            working_tree=True,
            producer="bench",
        )
        out.append((record, content))
    return out, time.perf_counter() - started


def chunk_all(
    recs: list[tuple[FileRecord, bytes]],
) -> tuple[dict[str, tuple[ChunkRecord, ...]], dict[str, Any]]:
    started = time.perf_counter()
    chunked = {record.path: chunk_file(record, content) for record, content in recs}
    seconds = time.perf_counter() - started
    chunks = [c for cs in chunked.values() for c in cs]
    lines = [float(c.text.count("\n") + 1) for c in chunks]
    return chunked, {
        "files": len(recs),
        "files_with_chunks": sum(1 for cs in chunked.values() if cs),
        "chunks": len(chunks),
        "by_kind": dict(sorted(Counter(c.kind for c in chunks).items())),
        "s": seconds,
        "chunks_per_s": len(chunks) / seconds,
        "text_lines_p50": percentile(lines, 0.5),
        "text_lines_p95": percentile(lines, 0.95),
        "text_mb": sum(len(c.text) for c in chunks) / 1e6,
    }


def build(chunked: dict[str, tuple[ChunkRecord, ...]]) -> tuple[SparseIndex, dict[str, Any]]:
    index = SparseIndex()
    gc.collect()
    tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    for path, chunks in chunked.items():
        index.add_file(path, chunks)
    seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return index, {
        "s": seconds,
        "cpu_s": cpu_s,
        "chunks": len(index),
        "chunks_per_s": len(index) / seconds,
        "vocabulary": len(index.bm25.vocabulary()),
        "average_length": index.bm25.average_length,
        "tracemalloc_mb": current / 1e6,
    }


def targets(chunked: dict[str, tuple[ChunkRecord, ...]], count: int) -> list[ChunkRecord]:
    """Functions and methods of .py files whose docstring (5+ tokens) sits in their text."""
    pool = [
        c
        for path, chunks in sorted(chunked.items())
        if path.endswith(".py")
        for c in chunks
        if c.kind in ("FUNCTION", "METHOD")
        and c.doc
        and len(tokenize(c.doc)) >= 5
        and _DOCSTRING.search(c.text)
    ]
    return random.Random(SEED).sample(pool, min(count, len(pool)))


def without_doc(chunk: ChunkRecord) -> ChunkRecord:
    return chunk.model_copy(update={"doc": None, "text": _DOCSTRING.sub("", chunk.text, 1)})


def file_text(chunks: tuple[ChunkRecord, ...], content: bytes, cut: ChunkRecord | None) -> str:
    text = content.decode("utf-8", errors="replace")
    if cut is not None:  # the same docstring cut out of the whole file
        text = text.replace(_DOCSTRING.search(cut.text).group(0), "", 1)  # type: ignore[union-attr]
    return text


def queries(
    index: SparseIndex,
    chunked: dict[str, tuple[ChunkRecord, ...]],
    contents: dict[str, bytes],
    count: int,
) -> dict[str, Any]:
    picked = targets(chunked, count)
    baselines = {"file_bm25_words": FileBM25(), "file_bm25_code": FileBM25(tokenizer=tokenize)}
    for path, content in contents.items():
        if chunked.get(path):
            for baseline in baselines.values():
                baseline.add(path, file_text(chunked[path], content, None))
    replace_ms, search_ms, rank_ms = [], [], []
    ranks: dict[str, list[int | None]] = {"chunk": [], "file": [], **{b: [] for b in baselines}}
    for target in picked:
        path, chunks = target.path, chunked[target.path]
        edited = tuple(without_doc(c) if c.id == target.id else c for c in chunks)
        started = time.perf_counter()
        index.add_file(path, edited)
        replace_ms.append((time.perf_counter() - started) * 1e3)
        query = target.doc or ""
        started = time.perf_counter()
        hits = index.search(query, limit=LIMIT)
        search_ms.append((time.perf_counter() - started) * 1e3)
        started = time.perf_counter()
        files = index.rank_files(query, LIMIT)
        rank_ms.append((time.perf_counter() - started) * 1e3)
        ranks["chunk"].append(_rank([h[0] for h in hits], target.id))
        ranks["file"].append(_rank([f[0] for f in files], path))
        for name, baseline in baselines.items():
            baseline.add(path, file_text(chunks, contents[path], target))
            ranks[name].append(_rank([p for p, _ in baseline.search(query, limit=LIMIT)], path))
            baseline.add(path, file_text(chunks, contents[path], None))
        index.add_file(path, chunks)
    return {
        "queries": len(picked),
        "mean_query_tokens": sum(len(tokenize(t.doc or "")) for t in picked) / max(1, len(picked)),
        "replace_file_ms": _latency(replace_ms),
        "search_ms": _latency(search_ms),
        "rank_files_ms": _latency(rank_ms),
        "quality": {name: _quality(r) for name, r in ranks.items()},
    }


def _rank(found: list[str], wanted: str) -> int | None:
    return found.index(wanted) + 1 if wanted in found else None


def _quality(ranks: list[int | None]) -> dict[str, float]:
    n = max(1, len(ranks))
    return {
        "mrr@10": sum(1 / r for r in ranks if r) / n,
        "at1": sum(1 for r in ranks if r == 1) / n,
        "at5": sum(1 for r in ranks if r and r <= 5) / n,
    }


def _latency(ms: list[float]) -> dict[str, float]:
    return {"p50": percentile(ms, 0.5), "p95": percentile(ms, 0.95), "max": max(ms, default=0)}


def bench_corpus(name: str, count: int) -> dict[str, Any]:
    tree = package_tree(name)
    load = os.getloadavg()[0]
    progress(f"{name} {tree.version}: {len(tree.files)} files, {tree.bytes / 1e6:.1f} MB")
    progress(f"load average {load:.2f} on {os.cpu_count()} CPUs (other work skews wall times)")
    recs, parse_s = records(tree.files)
    progress(f"parsed in {parse_s:.1f} s")
    chunked, chunking = chunk_all(recs)
    progress(f"chunked: {chunking['chunks']} chunks in {chunking['s']:.2f} s")
    index, built = build(chunked)
    progress(f"index built in {built['s']:.2f} s")
    contents = {record.path: content for record, content in recs}
    asked = queries(index, chunked, contents, count)
    progress(f"queries: search p95 {asked['search_ms']['p95']:.1f} ms")
    return {
        "corpus": {"name": name, "version": tree.version, "files": len(tree.files)},
        "load_average": [load, os.getloadavg()[0]],
        "parse_s": parse_s,
        "chunking": chunking,
        "build": built,
        "queries": asked,
    }


def report(r: dict[str, Any]) -> str:
    c, b, q = r["chunking"], r["build"], r["queries"]
    label = f"{r['corpus']['name']} {r['corpus']['version']}"
    size = harness.markdown_table(
        ["corpus", "files", "files with chunks", "chunks", "by kind", "chunk s", "chunks/s"],
        [[label, c["files"], c["files_with_chunks"], c["chunks"], c["by_kind"], c["s"],
          round(c["chunks_per_s"])]],
    )  # fmt: skip
    index = harness.markdown_table(
        ["build s", "CPU s", "chunks/s", "vocabulary", "avg tokens", "tracemalloc MB"],
        [[b["s"], b["cpu_s"], round(b["chunks_per_s"]), b["vocabulary"], b["average_length"],
          b["tracemalloc_mb"]]],
    )  # fmt: skip
    latency = harness.markdown_table(
        ["operation", "p50 ms", "p95 ms", "max ms"],
        [[op, q[key]["p50"], q[key]["p95"], q[key]["max"]]
         for op, key in (("search", "search_ms"), ("rank_files", "rank_files_ms"),
                         ("replace a file", "replace_file_ms"))],
    )  # fmt: skip
    quality = harness.markdown_table(
        ["ranking", "MRR@10", "@1", "@5"],
        [[name, v["mrr@10"], v["at1"], v["at5"]] for name, v in q["quality"].items()],
    )
    return "\n\n".join(
        [
            "Chunks:",
            size,
            "Index build (one add_file per file):",
            index,
            f"Latency over {q['queries']} docstring queries "
            f"({q['mean_query_tokens']:.1f} tokens on average):",
            latency,
            "Docstring -> its function (chunk) and its file (docstring cut from the index):",
            quality,
        ]
    )


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", choices=CORPORA, default="django")
    cli.add_argument("--queries", type=int, default=100)
    args = cli.parse_args()
    result = bench_corpus(args.corpus, args.queries)
    print(report(result))
    payload = {"benchmark": NAME, "machine": harness.machine(), "seed": SEED, "result": result}
    progress(f"wrote {harness.write_json(NAME, payload)}")


if __name__ == "__main__":
    main()
