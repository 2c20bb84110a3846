"""The sparse index (BM25 over chunks) in numpy arrays against the dicts of dicts it
replaced (issue 16 §3, issue 15's search latency), on a real corpus.

    python -m tests.bench.sparse_incremental [--corpus sympy|django] [--queries 200]
        [--edits 300]

The corpus (its wheel's package tree) is scanned by a `RepoIndex`; its files' chunks
then feed two indexes, file by file in path order as the read model's fold feeds them:
`tests.sparse_oracle.SparseIndex` (the former dicts: term -> {chunk: tf}) and
`query.search.sparse.SparseIndex` (numpy postings, a live segment and tombstones).
Measured for each:

- memory: what the build leaves allocated (file by file, and for the numpy index also
  in one batch, ``batch_build_s``) (tracemalloc, the tokenizer's cache of word
  splits emptied before and after, so that only what the index holds is counted; the
  chunk records and their ids exist before, so neither counts them), and its seconds
  (tokenizing included);
- ``rank_files(question, 200)`` (the pool `ranking.rank` asks for) over ``--queries``
  function docstrings (seeded), p50 / p95 / max, and whether every answer is the
  oracle's, bit for bit (``float.hex``);
- ``--edits`` edits (seeded files; an edit re-adds the file with one word appended to
  its first chunk, as a save that touches one function): each timed alone (the
  tokenizing of the file's chunks included), p50 / p95 / max, the compactions they
  triggered, then the questions again (the live segment and tombstones in place) and
  the same check; last, a full compaction timed.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

from deploy.logging_setup import configure_logging
from query.search.sparse import SparseIndex
from stores.records import ChunkRecord
from stores.text.tokens import _split
from tests import sparse_oracle
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import build_index, package_tree
from tests.bench.read_side_options import percentile, questions

NAME = "sparse_incremental"
SEED = 20261202
POOL = 200

Index = SparseIndex | sparse_oracle.SparseIndex


def timings(values: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": statistics.median(values),
        "p95_ms": percentile(values, 0.95),
        "max_ms": max(values),
    }


def hexed(rows: list[tuple[str, float, str]]) -> list[tuple[str, str, str]]:
    return [(p, s.hex(), c) for p, s, c in rows]


def ask(index: Index, asked: list[str]) -> tuple[list[float], list[list[tuple[str, str, str]]]]:
    times, answers = [], []
    for question in asked:
        started = time.perf_counter()
        got = index.rank_files(question, POOL)
        times.append((time.perf_counter() - started) * 1000)
        answers.append(hexed(got))
    return times, answers


def edited(chunks: tuple[ChunkRecord, ...], n: int) -> tuple[ChunkRecord, ...]:
    first = chunks[0]
    text = f"{first.text}\nedited{n}"
    return (first.model_copy(update={"text": text}), *chunks[1:])


def build(
    make: Callable[[], Index], files: dict[str, tuple[ChunkRecord, ...]], batch: bool = False
) -> tuple[Index, float, float]:
    """The index over ``files`` (in path order), the MB it holds, its build seconds;
    ``batch``: all of them in one `SparseIndex.add_files`, as a snapshot or a scan's
    barrier reaches the read side, else file by file."""
    _split.cache_clear()
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    index = make()
    if batch:
        assert isinstance(index, SparseIndex)
        index.add_files(sorted(files.items()))
    else:
        for path in sorted(files):
            index.add_file(path, files[path])
    seconds = time.perf_counter() - started
    _split.cache_clear()  # what the index holds of it stays allocated
    gc.collect()
    mb = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    return index, mb, seconds


def layout(index: SparseIndex) -> dict[str, int]:
    bm25 = index.bm25
    return {
        "base_postings": len(bm25._slots),
        "live_postings": bm25._live_postings,
        "dead_postings": bm25._dead_postings,
        "terms": len(bm25._term_of),
        "slots": len(bm25._ids),
    }


def run(corpus: str, count: int, edits: int) -> dict[str, Any]:
    tree = package_tree(corpus)
    progress(f"{corpus} {tree.version}: scanning {len(tree.files)} files")
    worker, _ = build_index(tree)
    state = worker.state
    del worker
    files = {r.path: tuple(r.chunks) for r in state.files.values() if r.chunks}
    asked = questions(state, count)
    chunks = sum(map(len, files.values()))
    progress(f"{len(files)} files, {chunks} chunks, {len(asked)} questions")
    result: dict[str, Any] = {
        "corpus": corpus,
        "version": tree.version,
        "files": len(files),
        "chunks": chunks,
        "queries": len(asked),
        "edits": edits,
    }
    old, old_mb, old_s = build(sparse_oracle.SparseIndex, files)
    new, new_mb, new_s = build(SparseIndex, files)
    assert isinstance(new, SparseIndex)
    result["built"] = layout(new)
    old_times, want = ask(old, asked)
    new_times, got = ask(new, asked)
    result["dicts (before)"] = {"memory_mb": old_mb, "build_s": old_s, **timings(old_times)}
    result["numpy (after)"] = {"memory_mb": new_mb, "build_s": new_s, **timings(new_times)}
    result["identical_answers"] = sum(g == w for g, w in zip(got, want, strict=True))
    batched, batched_mb, batched_s = build(SparseIndex, files, batch=True)
    result["numpy (after)"] |= {"batch_build_s": batched_s, "batch_memory_mb": batched_mb}
    result["identical_answers_batched"] = sum(
        g == w for g, w in zip(ask(batched, asked)[1], want, strict=True)
    )
    del batched
    progress(f"dicts {old_mb:.1f} MB, p95 {percentile(old_times, 0.95):.1f} ms; numpy "
             f"{new_mb:.1f} MB, p95 {percentile(new_times, 0.95):.1f} ms; identical "
             f"{result['identical_answers']}/{len(asked)}")  # fmt: skip
    rng = random.Random(SEED)
    picks = [rng.choice(sorted(files)) for _ in range(edits)]
    for name, index in (("dicts (before)", old), ("numpy (after)", new)):
        times = []
        before = new.bm25.compactions
        for n, path in enumerate(picks):
            changed = edited(files[path], n)
            started = time.perf_counter()
            index.add_file(path, changed)
            times.append((time.perf_counter() - started) * 1000)
        result[name] |= {f"edit_{k}": v for k, v in timings(times).items()}
        if index is new:
            result[name]["edit_compactions"] = new.bm25.compactions - before
    result["after_edits"] = layout(new)
    old_times, want = ask(old, asked)
    new_times, got = ask(new, asked)
    result["dicts (before)"] |= {f"edited_{k}": v for k, v in timings(old_times).items()}
    result["numpy (after)"] |= {f"edited_{k}": v for k, v in timings(new_times).items()}
    result["identical_answers_after_edits"] = sum(g == w for g, w in zip(got, want, strict=True))
    started = time.perf_counter()
    new.bm25.compact()
    result["numpy (after)"]["full_compaction_ms"] = (time.perf_counter() - started) * 1000
    return result


def report(result: dict[str, Any]) -> str:
    head = (
        f"{result['corpus']} {result['version']}: {result['files']} files, "
        f"{result['chunks']} chunks, {result['queries']} questions, {result['edits']} edits; "
        f"identical answers {result['identical_answers']}/{result['queries']} (built in one "
        f"batch: {result['identical_answers_batched']}), after the "
        f"edits {result['identical_answers_after_edits']}/{result['queries']}"
    )
    rows = {k: result[k] for k in ("dicts (before)", "numpy (after)")}
    keys = sorted({k for row in rows.values() for k in row})
    body = [[name, *(_num(row.get(k)) for k in keys)] for name, row in rows.items()]
    return "\n\n".join(
        [
            head,
            harness.markdown_table(["index", *keys], body),
            f"layout built: {result['built']}",
            f"layout after the edits: {result['after_edits']}",
        ]
    )


def _num(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.2f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="sympy")
    cli.add_argument("--queries", type=int, default=200)
    cli.add_argument("--edits", type=int, default=300)
    args = cli.parse_args()
    configure_logging("warning")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    result = run(args.corpus, args.queries, args.edits)
    print(report(result))
    payload = {"benchmark": NAME, "machine": harness.machine(), "result": result}
    progress(f"wrote {harness.write_json(f'{NAME}_{args.corpus}', payload)}")


if __name__ == "__main__":
    main()
