"""Prototypes for a read side that costs its code's size (issue 16 §3), measured side by side.

    python -m tests.bench.read_side_options [--corpus sympy|django] [--queries 200]
        [--only bm25,fts5,tantivy,texts,graph,records]

One scan of the corpus (`package_tree.build_index`) gives the chunks and the graph; each
option is then built from them alone and measured for its memory (tracemalloc for
Python objects; for SQLite and tantivy, whose memory is their own C/Rust heap and the
page cache, the RSS of a fresh process that opens the index and answers the queries),
its build time, and the latency of what the read side asks of it. The questions are
function docstrings (first line, > 30 characters, seeded, as `query_latency.py` makes
them); every BM25 option is compared with the dict `SparseIndex` on the same
questions: the top-10 files of ``rank_files``, and the top-10 of the whole ranking
(`query.search.ranking.rank`) with that option as its BM25 stage.

Options:

- ``bm25``: the former `SparseIndex` (dicts of dicts, `tests/sparse_oracle.py`) against
  today's (numpy postings, incremental) and `CompactBM25`: the same
  Okapi BM25 over the same code-aware tokens, postings as numpy arrays (CSR: term id ->
  doc ids, term frequencies), documents numbered in id order so ties break alike.
- ``fts5``: SQLite FTS5 (stdlib ``sqlite3``), the tokens ours (indexed pre-tokenized,
  joined by spaces, ``unicode61 remove_diacritics 0``), ranked by FTS5's ``bm25()``
  (k1 1.2, b 0.75, but its IDF is ``ln((N - df + 0.5) / (df + 0.5))``, floored near
  zero: a term in over half of the chunks counts nothing).
- ``tantivy``: the tantivy wheel, tokens pre-split (``whitespace`` tokenizer, term
  frequencies without positions); BM25 with Lucene's IDF, lengths quantized to a byte.
- ``texts``: chunk texts in memory as str, zlib-compressed per file, or in SQLite on
  disk; the latency of reading a pack's worth of files' chunks.
- ``graph``: nodes and edges as pydantic records in dicts plus `Adjacency`, against
  interned node ids and numpy arrays (edges as columns, both directions as CSR).
- ``records``: symbols and imports as pydantic models, slotted dataclasses, tuples.
- ``worker``: what halving the worker's graph memory would take: its references as
  records, tuples of interned strings, numpy columns; its answers with equal values
  shared.

The engines are in `read_side_engines.py`; the results and the choice in
docs/READ_SIDE_MEMORY.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from dataclasses import fields, make_dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deploy.logging_setup import configure_logging
from query.search.adjacency import Adjacency
from query.search.ranking import rank
from query.search.sparse import SparseIndex
from stores.records import ChunkRecord, ImportRecord, SymbolRecord
from stores.repo_state import RepoState
from stores.text.chunk_text import embed_text
from stores.text.tokens import tokenize
from tests import sparse_oracle
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import build_index, package_tree
from tests.bench.read_side_engines import (
    CompactBM25,
    Docs,
    Fts5BM25,
    TantivyBM25,
    build_fts5,
    build_tantivy,
)
from tests.bench.read_side_memory import Partition

NAME = "read_side_options"
SEED = 20240101
POOL = 200  # files the ranking asks the BM25 stage for (query.search.ranking.rank)
SCRATCH = Path("/tmp/read_side_options")
DEFAULT_ONLY = "bm25,fts5,tantivy,texts,graph,records,worker"


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p * len(ordered)) - 1)]


def latency(values: Sequence[float]) -> dict[str, float]:
    return {"p50_ms": statistics.median(values), "p95_ms": percentile(values, 0.95)}


def traced(build: Callable[[], Any]) -> tuple[Any, float, float]:
    """``build()``'s result, the MB it leaves allocated (tracemalloc), its seconds."""
    gc.collect()
    started = time.perf_counter()
    tracemalloc.start()
    kept = build()
    gc.collect()
    mb = tracemalloc.get_traced_memory()[0] / 1e6
    tracemalloc.stop()
    return kept, mb, time.perf_counter() - started


def questions(state: RepoState, count: int) -> list[str]:
    docs = sorted(
        (s.doc.split("\n")[0], r.path)
        for r in state.files.values()
        for s in r.symbols
        if s.doc and len(s.doc) > 30 and s.kind in ("FUNCTION", "METHOD")
    )
    rng = random.Random(SEED)
    return [doc for doc, _ in rng.sample(docs, min(count, len(docs)))]


def corpus_docs(state: RepoState) -> Docs:
    chunks = sorted((c for r in state.files.values() for c in r.chunks), key=lambda c: c.id)
    paths = sorted({c.path for c in chunks})
    where = {p: i for i, p in enumerate(paths)}
    return Docs(
        [c.id for c in chunks],
        paths,
        np.array([where[c.path] for c in chunks], dtype=np.int32),
        [tokenize(embed_text(c)) for c in chunks],
        chunks,
    )


def overlap(a: Sequence[str], b: Sequence[str], k: int = 10) -> float:
    top_a, top_b = set(a[:k]), set(b[:k])
    return len(top_a & top_b) / max(len(top_a), 1)


def compare(
    name: str, engine: Any, baseline: Any, asked: list[str], state: RepoState
) -> dict[str, Any]:
    """Latency of ``rank_files`` (the pool the ranking asks for), overlap with the
    baseline's top 10, and the top 10 of the whole ranking over each."""
    definers: dict[str, set[str]] = {}
    for record in state.files.values():
        for s in record.symbols:
            if s.kind in ("CLASS", "FUNCTION", "METHOD"):
                definers.setdefault(s.name, set()).add(record.path)
    paths = set(state.files)
    times, bm25_overlap, rank_overlap, top1 = [], [], [], []
    for question in asked:
        started = time.perf_counter()
        got = engine.rank_files(question, POOL)
        times.append((time.perf_counter() - started) * 1000)
        want = baseline.rank_files(question, POOL)
        bm25_overlap.append(overlap([p for p, _, _ in got], [p for p, _, _ in want]))
        top1.append(bool(got and want and got[0][0] == want[0][0]))
        ours = rank(question, engine, definers, paths)  # type: ignore[arg-type]
        theirs = rank(question, baseline, definers, paths)
        rank_overlap.append(overlap([r.path for r in ours], [r.path for r in theirs]))
    progress(f"{name}: p95 {percentile(times, 0.95):.1f} ms, top-10 overlap "
             f"{statistics.mean(bm25_overlap):.3f}")  # fmt: skip
    return {
        **latency(times),
        "top10_overlap": statistics.mean(bm25_overlap),
        "top1_same": statistics.mean(top1),
        "ranking_top10_overlap": statistics.mean(rank_overlap),
    }


_PROBE = """
import json, os, sys, time
sys.path.insert(0, {root!r})
def mem():
    out = {{}}
    for line in open('/proc/self/status'):
        k, _, v = line.partition(':')
        if k in ('RssAnon', 'RssFile', 'VmRSS'):
            out[k] = int(v.split()[0]) / 1e3
    return out
from tests.bench.read_side_engines import {engine}
from stores.text.tokens import tokenize
args = json.load(open({args!r}))
before = mem()
engine = {engine}(*args['init'])
times = []
for q in args['questions']:
    t = time.perf_counter(); engine.rank_files(q, {pool}); times.append(time.perf_counter() - t)
after = mem()
print(json.dumps({{'before': before, 'after': after}}))
"""


def probe_rss(engine: str, init: list[Any], asked: list[str]) -> dict[str, float]:
    """RSS growth of a fresh process that opens the index and answers the questions."""
    args = SCRATCH / f"{engine}.json"
    args.write_text(json.dumps({"init": init, "questions": asked}))
    root = str(Path(__file__).resolve().parents[2])
    code = _PROBE.format(root=root, engine=engine, args=str(args), pool=POOL)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # The paths and ids lists are the caller's (the read side has them anyway).
    return {f"{k}_growth_mb": seen["after"][k] - seen["before"][k] for k in seen["after"]}


def dir_mb(where: Path) -> float:
    if where.is_file():
        return where.stat().st_size / 1e6
    return sum(p.stat().st_size for p in where.rglob("*") if p.is_file()) / 1e6


def bench_bm25(docs: Docs, state: RepoState, asked: list[str], only: set[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}

    by_path: dict[str, list[ChunkRecord]] = {}
    for chunk in docs.chunks:
        by_path.setdefault(chunk.path, []).append(chunk)

    def current() -> sparse_oracle.SparseIndex:
        index = sparse_oracle.SparseIndex()
        for path, chunks in by_path.items():
            index.add_file(path, chunks)
        return index

    baseline, mb, seconds = traced(current)
    times = []
    for question in asked:
        started = time.perf_counter()
        baseline.rank_files(question, POOL)
        times.append((time.perf_counter() - started) * 1000)
    out["dict SparseIndex (oracle)"] = {"memory_mb": mb, "build_s": seconds, **latency(times)}
    progress(f"dicts: {mb:.0f} MB, p95 {percentile(times, 0.95):.1f} ms")

    def numpy_index() -> SparseIndex:
        index = SparseIndex()
        for path, chunks in by_path.items():
            index.add_file(path, chunks)
        return index

    if "bm25" in only:
        ours, mb, seconds = traced(numpy_index)
        out["SparseIndex (numpy, incremental)"] = {
            "memory_mb": mb,
            "build_s": seconds,
            **compare("numpy", ours, baseline, asked, state),
        }
        del ours
    if "bm25" in only:
        compact, mb, seconds = traced(lambda: CompactBM25(docs))
        out["compact numpy BM25"] = {
            "memory_mb": mb,
            "build_s": seconds,
            **compare("compact", compact, baseline, asked, state),
        }
        del compact
    if "fts5" in only:
        db = SCRATCH / "fts5.sqlite"
        _, _, seconds = traced(lambda: build_fts5(docs, db))
        row = {"disk_mb": dir_mb(db), "build_s": seconds}
        row |= compare("fts5", Fts5BM25(db, docs.paths, docs.ids), baseline, asked, state)
        row |= probe_rss("Fts5BM25", [str(db), docs.paths, docs.ids], asked)
        out["SQLite FTS5 (disk)"] = row
    if "tantivy" in only:
        try:
            import tantivy  # noqa: F401
        except ImportError:
            out["tantivy"] = {"error": "not installed"}
        else:
            where = SCRATCH / "tantivy"
            _, _, seconds = traced(lambda: build_tantivy(docs, where))
            row = {"disk_mb": dir_mb(where), "build_s": seconds}
            engine = TantivyBM25(where, docs.paths, docs.ids)
            row |= compare("tantivy", engine, baseline, asked, state)
            row |= probe_rss("TantivyBM25", [str(where), docs.paths, docs.ids], asked)
            out["tantivy (disk)"] = row
    return out


def bench_texts(docs: Docs, asked: list[str], state: RepoState) -> dict[str, Any]:
    """Chunk texts: memory of each store, latency of reading 30 files' chunks."""
    by_path: dict[int, list[int]] = {}
    for i, p in enumerate(docs.path_of.tolist()):
        by_path.setdefault(p, []).append(i)
    rng = random.Random(SEED)
    picks = [rng.sample(sorted(by_path), 30) for _ in range(100)]
    out: dict[str, Any] = {}
    plain = Partition()  # the strings exist already: their own bytes, walked
    plain.add("texts", [[c.text for c in docs.chunks]])
    out["str per chunk (today)"] = {"memory_mb": plain.total / 1e6}
    blobs, mb, seconds = traced(
        lambda: {
            p: zlib.compress("\0".join(docs.chunks[i].text for i in ds).encode(), 6)
            for p, ds in by_path.items()
        }
    )
    times = []
    for pick in picks:
        started = time.perf_counter()
        for p in pick:
            zlib.decompress(blobs[p]).decode().split("\0")
        times.append((time.perf_counter() - started) * 1000)
    out["zlib per file, in memory"] = {"memory_mb": mb, "build_s": seconds, **latency(times)}
    db = SCRATCH / "fts5.sqlite"
    if db.exists():
        con = sqlite3.connect(db)
        times = []
        for pick in picks:
            started = time.perf_counter()
            marks = ",".join("?" * len(pick))
            con.execute(
                f"SELECT path_id, text FROM texts WHERE path_id IN ({marks}) ORDER BY rowid", pick
            ).fetchall()
            times.append((time.perf_counter() - started) * 1000)
        out["SQLite table, on disk"] = {"memory_mb": 0.0, **latency(times)}
    del blobs
    return out


def bench_graph(state: RepoState) -> dict[str, Any]:
    """The graph as records in dicts plus Adjacency, against numpy columns and CSR."""
    part = Partition()
    part.add("nodes", [state.nodes])
    part.add("edges", [state.edges, state.nodes_by_owner])
    records_mb = part.total / 1e6
    adjacency, adj_mb, adj_s = traced(lambda: Adjacency.of(state))

    def compact() -> dict[str, Any]:
        ids = sorted(state.nodes)
        number = {n: i for i, n in enumerate(ids)}
        for e in state.edges.values():  # external ends an edge names but no node holds
            for end in (e.src, e.dst):
                if end not in number:
                    number[end] = len(ids)
                    ids.append(end)
        kinds = sorted(
            {e.kind for e in state.edges.values()} | {n.kind for n in state.nodes.values()}
        )
        kind_no = {k: i for i, k in enumerate(kinds)}
        edges = list(state.edges.values())
        src = np.fromiter((number[e.src] for e in edges), dtype=np.int32, count=len(edges))
        dst = np.fromiter((number[e.dst] for e in edges), dtype=np.int32, count=len(edges))
        kind = np.fromiter((kind_no[e.kind] for e in edges), dtype=np.uint8, count=len(edges))
        conf_names = sorted({e.confidence for e in edges})
        conf_no = {c: i for i, c in enumerate(conf_names)}
        conf = np.fromiter((conf_no[e.confidence] for e in edges), dtype=np.uint8, count=len(edges))
        weight = np.fromiter((e.weight for e in edges), dtype=np.float32, count=len(edges))
        nodes = [state.nodes.get(n) for n in ids]
        node_kind = np.array([kind_no[n.kind] if n else 255 for n in nodes], dtype=np.uint8)
        lines = np.array(
            [(n.line_start or 0, n.line_end or 0) if n else (0, 0) for n in nodes], dtype=np.int32
        )
        out_order = np.argsort(src, kind="stable").astype(np.int32)
        in_order = np.argsort(dst, kind="stable").astype(np.int32)
        n = len(ids)
        out_ptr = np.searchsorted(src[out_order], np.arange(n + 1)).astype(np.int32)
        in_ptr = np.searchsorted(dst[in_order], np.arange(n + 1)).astype(np.int32)
        names = [state.nodes[i].name if i in state.nodes else "" for i in ids]
        return {
            "ids": ids, "number": number, "names": names, "kinds": kinds, "conf": conf_names,
            "src": src, "dst": dst, "kind": kind, "confidence": conf, "weight": weight,
            "node_kind": node_kind, "lines": lines,
            "out": (out_ptr, out_order), "into": (in_ptr, in_order),
        }  # fmt: skip

    graph, compact_mb, compact_s = traced(compact)
    rng = random.Random(SEED)
    sample = rng.sample(sorted(state.nodes), min(2000, len(state.nodes)))
    t_adj, t_compact = [], []
    for node in sample:
        started = time.perf_counter()
        [(e.dst, e.kind) for e in adjacency.edges.edges_out(node)]
        [(e.src, e.kind) for e in adjacency.edges.edges_into(node)]
        t_adj.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        i = graph["number"][node]
        ptr, order = graph["out"]
        es = order[ptr[i] : ptr[i + 1]]
        [
            (graph["ids"][d], graph["kinds"][k])
            for d, k in zip(graph["dst"][es], graph["kind"][es], strict=True)
        ]
        ptr, order = graph["into"]
        es = order[ptr[i] : ptr[i + 1]]
        [
            (graph["ids"][s], graph["kinds"][k])
            for s, k in zip(graph["src"][es], graph["kind"][es], strict=True)
        ]
        t_compact.append((time.perf_counter() - started) * 1000)  # fmt: skip
    # Everything it holds, strings included (they were allocated before, by the state).
    ids_part, whole = Partition(), Partition()
    ids_part.add("ids", [graph["ids"], graph["number"], graph["names"]])
    whole.add("all", [graph])
    return {
        "records + owner indexes (walk)": {"memory_mb": records_mb},
        "Adjacency.of (tracemalloc)": {"memory_mb": adj_mb, "build_s": adj_s, **latency(t_adj)},
        "compact: ids + names + arrays": {
            "memory_mb": whole.total / 1e6,
            "new_allocations_mb": compact_mb,
            "ids_names_mb": ids_part.total / 1e6,
            "build_s": compact_s,
            **latency(t_compact),
        },
    }


def bench_records(state: RepoState) -> dict[str, Any]:
    """Symbols and imports as pydantic records, slotted dataclasses and tuples."""
    out: dict[str, Any] = {}
    for cls in (SymbolRecord, ImportRecord):
        records = [
            x for r in state.files.values() for x in getattr(r, f"{cls.__name__[:-6].lower()}s")
        ]
        names = list(cls.model_fields)
        slotted = make_dataclass(f"{cls.__name__}Slots", names, frozen=True, slots=True)
        as_pydantic = Partition()
        as_pydantic.add("x", [records])
        copies, slots_mb, _ = traced(
            lambda: [slotted(*(getattr(x, n) for n in names)) for x in records]  # noqa: B023
        )
        tuples, tuples_mb, _ = traced(
            lambda: [tuple(getattr(x, n) for n in names) for x in records]  # noqa: B023
        )
        # Only the containers are new: the field values are shared with the records.
        shared = Partition()
        shared.add("values", [[getattr(x, n) for n in names] for x in records])
        values_mb = (shared.total - sys.getsizeof([]) * len(records)) / 1e6
        out[cls.__name__] = {
            "count": len(records),
            "pydantic_mb": as_pydantic.total / 1e6,
            "slots_mb": slots_mb + values_mb,
            "tuple_mb": tuples_mb + values_mb,
        }
        assert [f.name for f in fields(slotted)] == names
        del copies, tuples
    return out


def bench_worker(index: Any) -> dict[str, Any]:
    """What halving the worker's graph memory would take, measured on its largest parts:
    the references (pydantic records, as the resolver reads them) against tuples of
    interned strings and against numpy columns; the answers (`FileAnswers`) as built
    against the same with equal values shared (targets, keys, questions interned)."""
    state, graph = index.state, index.graph
    refs = [ref for r in state.files.values() for ref in r.references]
    out: dict[str, Any] = {}
    as_records = Partition()
    as_records.add("refs", [[r.references for r in state.files.values()]])
    out["references as records"] = {"count": len(refs), "memory_mb": as_records.total / 1e6}
    intern: dict[Any, Any] = {}

    def shared(value: Any) -> Any:
        return intern.setdefault(value, value)

    tuples = [
        (shared(x.name), shared(x.qualifier), shared(x.kind), x.line, x.column, shared(x.scope))
        for x in refs
    ]
    as_tuples = Partition()
    as_tuples.add("t", [tuples])
    out["references as tuples, strings interned"] = {
        "count": len(refs),
        "memory_mb": as_tuples.total / 1e6,
    }
    words = sorted({w for x in refs for w in (x.name, x.qualifier or "", x.scope or "")})
    word_no = {w: i for i, w in enumerate(words)}
    columns = {
        "name": np.array([word_no[x.name] for x in refs], dtype=np.int32),
        "qualifier": np.array([word_no[x.qualifier or ""] for x in refs], dtype=np.int32),
        "scope": np.array([word_no[x.scope or ""] for x in refs], dtype=np.int32),
        "kind": np.array([("call", "use", "type").index(x.kind) for x in refs], dtype=np.uint8),
        "line": np.array([x.line for x in refs], dtype=np.int32),
        "column": np.array([x.column for x in refs], dtype=np.int32),
    }
    as_columns = Partition()
    as_columns.add("c", [columns, words, word_no])
    out["references as columns + vocabulary"] = {
        "count": len(refs),
        "memory_mb": as_columns.total / 1e6,
    }
    del tuples, columns, words, word_no
    answers = graph._answers
    before = Partition()
    before.add("a", [answers])
    count = sum(len(f.answers) for f in answers.values())
    out["answers as built"] = {"count": count, "memory_mb": before.total / 1e6}
    intern.clear()
    for held in answers.values():
        held.answers = {
            tuple(shared(q) for q in question): shared(
                type(answer)(
                    tuple(shared(t) for t in answer.targets),
                    tuple(shared(k) for k in answer.keys),
                    shared(answer.names),
                    shared(answer.own),
                )
            )
            for question, answer in held.answers.items()
        }
    after = Partition()
    after.add("a", [answers])
    out["answers, equal values shared"] = {"count": count, "memory_mb": after.total / 1e6}
    return out


def run(corpus: str, count: int, only: set[str]) -> dict[str, Any]:
    SCRATCH.mkdir(parents=True, exist_ok=True)
    tree = package_tree(corpus)
    progress(f"{corpus} {tree.version}: scanning {len(tree.files)} files")
    index, _ = build_index(tree)
    state = index.state
    if "worker" in only:
        result_worker = bench_worker(index)
    del index.graph
    docs = corpus_docs(state)
    asked = questions(state, count)
    progress(f"{len(docs.ids)} chunks, {len(asked)} questions")
    result: dict[str, Any] = {
        "corpus": corpus,
        "version": tree.version,
        "files": len(tree.files),
        "corpus_bytes": tree.bytes,
        "chunks": len(docs.ids),
        "tokens": sum(map(len, docs.tokens)),
        "queries": len(asked),
    }
    if only & {"bm25", "fts5", "tantivy"}:
        result["bm25"] = bench_bm25(docs, state, asked, only)
    if "texts" in only:
        result["texts"] = bench_texts(docs, asked, state)
    if "graph" in only:
        result["graph"] = bench_graph(state)
    if "records" in only:
        result["records"] = bench_records(state)
    if "worker" in only:
        result["worker"] = result_worker
    return result


def report(result: dict[str, Any]) -> str:
    parts = [
        f"{result['corpus']} {result['version']}: {result['files']} files, "
        f"{result['corpus_bytes'] / 1e6:.1f} MB, {result['chunks']} chunks, "
        f"{result['tokens']} tokens, {result['queries']} questions"
    ]
    for section in ("bm25", "texts", "graph", "records", "worker"):
        rows = result.get(section)
        if not rows:
            continue
        keys = sorted({k for row in rows.values() for k in row})
        body = [[name, *(_num(row.get(k)) for k in keys)] for name, row in rows.items()]
        parts += [f"{section}:", harness.markdown_table(["option", *keys], body)]
    return "\n\n".join(parts)


def _num(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="sympy")
    cli.add_argument("--queries", type=int, default=200)
    cli.add_argument("--only", default=DEFAULT_ONLY)
    args = cli.parse_args()
    configure_logging("warning")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    result = run(args.corpus, args.queries, set(args.only.split(",")))
    print(report(result))
    payload = {"benchmark": NAME, "machine": harness.machine(), "result": result}
    every = set(DEFAULT_ONLY.split(","))
    tail = "" if set(args.only.split(",")) == every else "_" + args.only.replace(",", "-")
    progress(f"wrote {harness.write_json(f'{NAME}_{args.corpus}{tail}', payload)}")


if __name__ == "__main__":
    main()
