"""The read side's memory by component, and the worker's graph memory beside it (issue 16 §3).

    python -m tests.bench.read_side_memory [--corpus sympy|django]
        [--decode json|json-shared-sets|shared] [--dense none|hash:256]

The corpus (its wheel's package tree, `package_tree.py`) is scanned by a `RepoIndex` as
the worker scans it; its deltas, references dropped as the read model drops them, are
encoded as on the topic. The worker's memory is then partitioned by component (below)
and the index dropped. The read side is built in turn, each step under tracemalloc and
with the RSS beside it:

1. the fold: every delta decoded from its JSON (``--decode json``, as a replica reads
   the topic; ``shared`` folds the worker's own objects, as `query_latency.py` does) and
   applied to a `ReadModel` (RepoState, file graph, retrieval, churn ledger);
   ``json-shared-sets`` is the what-if of decoding with one fields-set per record
   class, as `stores.records.trusted` builds records (pydantic's decoding gives every
   record a set of its own: 728 bytes from 5 fields);
2. the neighborhoods (a recluster) applied to it;
3. what the query service caches per state version: the adjacency, the chunks by path;
4. with ``--dense``, every chunk's vector in the in-memory vector store.

With ``--restored``, the fold's model is then dropped and the read side is built again
as a new replica or a restarted ``up`` builds it: from the worker's state snapshot
(`decode_reader`, `query.state_restore.load_snapshot`), the decoded snapshot dropped
after; its tracemalloc held and peak, and the RSS growth, beside the fold's first step.

The fold's total is then split by ownership: a walk of the object graph (``gc``
referents, ``sys.getsizeof``) over the components in a fixed order, each object counted
in the first component that reaches it (a chunk record held by its file's record and by
the retrieval index counts once, as a chunk). The walk's sum is printed beside
tracemalloc's, so the split can be trusted as far as the two agree.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from deploy.logging_setup import configure_logging
from processors import parsing
from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.read_model import ReadModel
from query.search.adjacency import Adjacency
from stores.deltas import GraphDelta, decode_delta, encode_delta
from stores.projections.graph_state import FileGraphState
from tests.bench import harness
from tests.bench.harness import progress
from tests.bench.package_tree import PackageTree, package_tree, scan_events
from tests.factories import Stamp

NAME = "read_side_memory"

_SKIP = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.CodeType,
    types.FrameType,
)


def chunks_by_path(view: Any) -> dict[str, Any]:
    """What the query service caches per state version (query/retrieval_api.py's
    ``chunks_by_path``, copied so that this benchmark imports no web framework)."""
    return {path: record.chunks for path, record in view.state.files.items() if record.chunks}


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


class Partition:
    """Bytes reachable from each component's roots, each object counted once: in the
    first component (in call order) that reaches it. Classes, modules and functions are
    not followed (they are the program, not the data)."""

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self.bytes: dict[str, int] = {}
        self.objects: dict[str, int] = {}

    def add(self, name: str, roots: Iterable[object]) -> None:
        seen, stack = self._seen, list(roots)
        total = count = 0
        getsize, referents = sys.getsizeof, gc.get_referents
        while stack:
            obj = stack.pop()
            key = id(obj)
            if key in seen or isinstance(obj, _SKIP):
                continue
            seen.add(key)
            total += getsize(obj)
            count += 1
            stack.extend(referents(obj))
        self.bytes[name] = self.bytes.get(name, 0) + total
        self.objects[name] = self.objects.get(name, 0) + count

    @property
    def total(self) -> int:
        return sum(self.bytes.values())


def _fields(records: Iterable[Any], name: str) -> Iterable[object]:
    return (getattr(r, name) for r in records)


def partition_records(part: Partition, files: Iterable[Any], prefix: str) -> None:
    """A state's file records: chunk texts, chunk records, then each heavy field."""
    files = list(files)
    # each file's chunks as held: a tuple of records, or the read side's packed form
    # (`query.search.packed_chunks`), walked as it is, not the records it builds
    held = [r.chunks for r in files]
    part.add(f"{prefix}chunk texts", (c.text for h in held if isinstance(h, tuple) for c in h))
    part.add(f"{prefix}chunk records (rest)", held)
    for name in ("references", "symbols", "imports", "sections", "keywords"):
        part.add(f"{prefix}file records: {name}", _fields(files, name))
    part.add(f"{prefix}file records (rest)", files)


def partition_read_side(model: ReadModel, repo: str) -> Partition:
    view = model.repos[repo]
    state, retrieval = view.state, view.retrieval
    part = Partition()
    partition_records(part, state.files.values(), "state: ")
    part.add("state: nodes", [state.nodes])
    part.add("state: by-owner indexes", [state.edges.sources_by_owner, state.nodes_by_owner])
    part.add("state: edges", [state.edges])
    part.add("state: files dict, rest", [state])
    part.add("file graph", [view.file_graph])
    sparse = retrieval.sparse
    bm25 = sparse.bm25
    part.add(
        "sparse: postings (base arrays + live)", [bm25._indptr, bm25._slots, bm25._tfs, bm25._live]
    )
    part.add("sparse: terms", [bm25._term_of, bm25._names])
    part.add(
        "sparse: documents (slots, arrays)",
        [bm25._slot_of, bm25._ids, bm25._lengths, bm25._groups, bm25._alive, bm25._widths],
    )
    part.add("sparse: chunk ids by path", [sparse._chunks_of, sparse._file_of, sparse._paths])
    part.add("retrieval: chunks by file", [retrieval.chunks])
    part.add("retrieval: chunk texts, packed by file", [retrieval.texts])
    part.add("retrieval: definers, sources, files", [retrieval.definers, retrieval.sources])
    part.add("retrieval: per-file names", [retrieval._files])
    part.add("churn ledger", [view.churn])
    part.add("references counts", [view.references])
    part.add("view, rest", [view])
    return part


def partition_worker(index: RepoIndex) -> Partition:
    state, graph = index.state, index.graph
    part = Partition()
    partition_records(part, state.files.values(), "state: ")
    part.add("state: nodes", [state.nodes])
    part.add("state: by-owner indexes", [state.edges.sources_by_owner, state.nodes_by_owner])
    part.add("state: edges", [state.edges])
    part.add("state: rest", [state])
    part.add("graph: facts (RepoFacts)", [graph.facts])
    part.add("graph: asked/askers", [graph._asked, graph._askers])
    part.add("graph: answers", [graph._answers])
    part.add("graph: kept bindings", [graph._bindings, graph._pending_binds])
    part.add("graph: folders", [graph.folders])
    part.add("graph: rest", [graph])
    part.add("parse caches (trees, facts)", [parsing.RECENT_TREES, parsing.RECENT_FACTS])
    return part


def _adjacency(state: Any) -> Adjacency:
    """The query side's adjacency, with one node's edges in read: the first such read
    orders the state's edges by target (`EdgeTable.edges_into`), which a query then
    keeps, so it is counted here."""
    adjacency = Adjacency.of(state)
    adjacency.edges_in(min(state.nodes, default=""))
    return adjacency


@dataclass
class Step:
    name: str
    traced_mb: float
    rss_mb: float
    seconds: float


@dataclass
class Steps:
    rows: list[Step] = field(default_factory=list)

    def run(self, name: str, build: Callable[[], object]) -> object:
        """``build()`` under tracemalloc: the bytes it leaves allocated, its RSS growth."""
        gc.collect()
        rss0, started = rss_mb(), time.perf_counter()
        tracemalloc.start()
        kept = build()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] / 1e6
        tracemalloc.stop()
        seconds = time.perf_counter() - started
        self.rows.append(Step(name, traced, rss_mb() - rss0, seconds))
        progress(f"{name}: {traced:.0f} MB traced, {seconds:.1f} s")
        return kept


def _without_references(delta: GraphDelta) -> GraphDelta:
    """What a replica folds of a delta in the end: the read side drops the references
    (it only counts them); dropped here to hold the scan's deltas in less memory."""
    lean = tuple(r.model_copy(update={"references": ()}) for r in delta.files_upserted)
    return delta.model_copy(update={"files_upserted": lean})


def worker_scan(
    tree: PackageTree, decode: str, snapshot: list[bytes] | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """The worker's scan: its memory by component, and the deltas it published (lean,
    encoded unless ``decode == 'shared'``); its state snapshot, encoded as the worker
    writes it, appended to ``snapshot`` when given."""
    index = RepoIndex(tree.name)
    deltas: list[Any] = []
    started, rss0 = time.perf_counter(), rss_mb()
    for event in scan_events(tree.files, Stamp(repo=tree.name)):
        delta = index.handle(event, time.time())
        if delta is not None:
            lean = _without_references(delta)
            deltas.append(lean if decode == "shared" else encode_delta(lean))
    seconds = time.perf_counter() - started
    gc.collect()
    rss = rss_mb() - rss0
    progress(f"worker scan: {seconds:.0f} s; partitioning its memory")
    if snapshot is not None:
        from stores import state_snapshot

        snapshot.append(state_snapshot.encode(state_snapshot.capture(index.state, resolved=True)))
    part = partition_worker(index)
    report = {
        "scan_s": seconds,
        "rss_growth_mb": rss,
        "components_mb": {k: v / 1e6 for k, v in part.bytes.items()},
        "total_mb": part.total / 1e6,
        "nodes": len(index.state.nodes),
        "edges": len(index.state.edges),
        "references": sum(len(r.references) for r in index.state.files.values()),
    }
    return deltas, report


def read_side(
    tree: PackageTree, deltas: list[Any], dense: str, share_sets: bool = False
) -> tuple[ReadModel, dict[str, Any]]:
    repo, steps = tree.name, Steps()
    model = ReadModel()

    def fold() -> None:
        for raw in deltas:
            delta: GraphDelta = decode_delta(raw) if isinstance(raw, bytes) else raw
            if share_sets:
                _share_fields_sets(delta)
            model.apply_delta(delta)

    steps.run("fold: state, file graph, retrieval, churn", fold)
    deltas.clear()
    gc.collect()
    part = partition_read_side(model, repo)
    view = model.repos[repo]
    state = view.state
    steps.run(
        "neighborhoods (recluster)",
        lambda: model.apply_snapshot(
            recluster(FileGraphState.of(state), None, ReclusterSettings(), now=time.time())
        ),
    )
    cached: dict[str, object] = {}
    steps.run("adjacency (query cache)", lambda: cached.setdefault("adj", _adjacency(state)))
    steps.run("chunks by path (query cache)", lambda: cached.setdefault("c", chunks_by_path(view)))
    if dense != "none":
        steps.run("dense vectors, every chunk", lambda: _fill_dense(model, repo, dense))
    chunks = view.retrieval.chunks.values()
    bm25 = view.retrieval.sparse.bm25
    result = {
        "files": len(state.files),
        "chunks": len(view.retrieval.chunks),
        "chunk_text_bytes": sum(
            len(t.encode()) for p in {c.path for c in chunks} for t in view.retrieval.texts.of(p)
        ),
        "chunk_texts_packed_bytes": view.retrieval.texts.packed_bytes(),
        "postings": len(bm25._slots) + bm25._live_postings - bm25._dead_postings,
        "terms": len(bm25.vocabulary()),
        "nodes": len(state.nodes),
        "edges": len(state.edges),
        "steps": [vars(s) for s in steps.rows],
        "fold_components_mb": {k: v / 1e6 for k, v in part.bytes.items()},
        "fold_walk_total_mb": part.total / 1e6,
        "rss_mb": rss_mb(),
    }
    return model, result


_SHARED_SETS: dict[type, set[str]] = {}


def _share(record: Any) -> None:
    """Give a decoded record its class's one fields-set, as `stores.records.trusted`
    does: pydantic's JSON decoding makes a set per record (728 bytes from 5 fields)."""
    cls = type(record)
    shared = _SHARED_SETS.get(cls)
    if shared is None:
        shared = _SHARED_SETS[cls] = set(cls.model_fields)
    if record.__pydantic_fields_set__ == shared:
        object.__setattr__(record, "__pydantic_fields_set__", shared)


def _share_fields_sets(delta: GraphDelta) -> None:
    """The what-if of ``--decode json-shared-sets``: every record of the delta shares."""
    for record in delta.files_upserted:
        for name in ("symbols", "imports", "sections", "keywords", "aliases", "chunks"):
            for item in getattr(record, name):
                _share(item)
        _share(record)
    for node in delta.nodes_upserted:
        _share(node)
    for edge in delta.edges_upserted:
        _share(edge)


def _fill_dense(model: ReadModel, repo: str, spec: str) -> object:
    from query.dense import DenseIndex
    from stores.text.embedders import embedder_from_spec
    from stores.text.embedding_cache import InMemoryEmbeddingCache
    from stores.vectors import InMemoryVectorStore

    dense = DenseIndex(embedder_from_spec(spec), InMemoryVectorStore(), InMemoryEmbeddingCache())
    view = model.repos[repo]
    by_path: dict[str, list[Any]] = {}
    for chunk in view.retrieval.chunks.values():
        by_path.setdefault(chunk.path, []).append(chunk)
    for path, chunks in sorted(by_path.items()):
        dense.file_changed(repo, path, chunks, priority=0.0)
    while (picked := dense.next_batch()) is not None:
        _, batch = picked
        dense.store_vectors(repo, batch, dense.vectors(batch))
    # The embedding cache is the worker-side fill's; the read side keeps the store.
    return dense.store


def restored_side(raw: bytes) -> dict[str, Any]:
    """A read side loaded from the worker's snapshot, as a new replica loads it."""
    from query.state_restore import load_snapshot
    from stores.state_snapshot import decode_reader

    gc.collect()
    rss0, started = rss_mb(), time.perf_counter()
    tracemalloc.start()
    decoded = decode_reader(raw)
    model = ReadModel()
    load_snapshot(model, decoded.snapshot, None, decoded.postings)
    peak = tracemalloc.get_traced_memory()[1]
    del decoded
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    seconds = time.perf_counter() - started
    progress(f"restored: {held / 1e6:.0f} MB held, {peak / 1e6:.0f} MB peak, {seconds:.1f} s")
    repo = next(iter(model.repos))
    part = partition_read_side(model, repo)
    return {
        "components_mb": {k: v / 1e6 for k, v in part.bytes.items()},
        "walk_total_mb": part.total / 1e6,
        "snapshot_mb": len(raw) / 1e6,
        "held_mb": held / 1e6,
        "peak_mb": peak / 1e6,
        "rss_growth_mb": rss_mb() - rss0,
        "seconds": seconds,
        "files": len(model.repos[repo].state.files),
    }


def run(corpus: str, decode: str, dense: str, restored: bool = False) -> dict[str, Any]:
    tree = package_tree(corpus)
    progress(f"{corpus} {tree.version}: {len(tree.files)} files, {tree.bytes / 1e6:.1f} MB")
    snapshot: list[bytes] | None = [] if restored else None
    deltas, worker = worker_scan(tree, decode, snapshot)
    gc.collect()
    progress(f"worker dropped; folding {len(deltas)} deltas ({decode})")
    model, read = read_side(tree, deltas, dense, share_sets=decode == "json-shared-sets")
    total = sum(s["traced_mb"] for s in read["steps"])
    if snapshot:
        del model
        read["restored"] = restored_side(snapshot[0])
    return {
        "corpus": corpus,
        "version": tree.version,
        "source_files": len(tree.files),
        "corpus_bytes": tree.bytes,
        "decode": decode,
        "dense": dense,
        "worker": worker,
        "read_side": read,
        "read_side_total_mb": total,
        "per_file_kb": total * 1e3 / len(tree.files),
        "per_corpus_byte": total * 1e6 / tree.bytes,
    }


def report(result: dict[str, Any]) -> str:
    files, size = result["source_files"], result["corpus_bytes"]

    def row(name: str, mb: float) -> list[object]:
        return [name, f"{mb:.1f}", f"{mb * 1e3 / files:.1f}", f"{mb * 1e6 / size:.2f}"]

    header = ["component", "MB", "KB per file", "bytes per corpus byte"]
    read = result["read_side"]
    steps = [row(s["name"], s["traced_mb"]) for s in read["steps"]]
    steps.append(row("**read side, total (tracemalloc)**", result["read_side_total_mb"]))
    fold = sorted(read["fold_components_mb"].items(), key=lambda kv: -kv[1])
    split = [row(k, v) for k, v in fold] + [row("**walk total**", read["fold_walk_total_mb"])]
    worker = result["worker"]
    wsplit = sorted(worker["components_mb"].items(), key=lambda kv: -kv[1])
    wrows = [row(k, v) for k, v in wsplit] + [row("**walk total**", worker["total_mb"])]
    counts = (
        f"{result['corpus']} {result['version']}: {files} files, {size / 1e6:.1f} MB; "
        f"{read['chunks']} chunks ({read['chunk_text_bytes'] / 1e6:.1f} MB of text), "
        f"{read['terms']} terms, {read['postings']} postings, {read['nodes']} nodes, "
        f"{read['edges']} edges; decode={result['decode']}; RSS at the end "
        f"{read['rss_mb']:.0f} MB"
    )
    again = read.get("restored")
    restored_split: list[str] = []
    if again is not None:
        steps.append(row("restored from the snapshot instead: held", again["held_mb"]))
        steps.append(row("restored from the snapshot: peak while loading", again["peak_mb"]))
        steps.append(row("restored from the snapshot: RSS growth", again["rss_growth_mb"]))
        parts = sorted(again["components_mb"].items(), key=lambda kv: -kv[1])
        rows = [row(k, v) for k, v in parts] + [row("**walk total**", again["walk_total_mb"])]
        restored_split = [
            "The read side restored from the snapshot, split the same way:",
            harness.markdown_table(header, rows),
        ]
    return "\n\n".join(
        [
            counts,
            "Read side, built in turn (tracemalloc of each step):",
            harness.markdown_table(header, steps),
            "The fold, split by ownership (object walk):",
            harness.markdown_table(header, split),
            f"Worker after the scan ({worker['scan_s']:.0f} s, RSS growth "
            f"{worker['rss_growth_mb']:.0f} MB; {worker['references']} references):",
            harness.markdown_table(header, wrows),
            *restored_split,
        ]
    )


def main() -> None:
    cli = argparse.ArgumentParser(prog=f"python -m tests.bench.{NAME}", description=__doc__)
    cli.add_argument("--corpus", default="sympy")
    cli.add_argument("--decode", choices=("json", "json-shared-sets", "shared"), default="json")
    cli.add_argument("--dense", default="none")
    cli.add_argument("--restored", action="store_true", help="also load it from a snapshot")
    args = cli.parse_args()
    configure_logging("warning")
    result = run(args.corpus, args.decode, args.dense, args.restored)
    print(report(result))
    payload = {"benchmark": NAME, "machine": harness.machine(), "result": result}
    progress(f"wrote {harness.write_json(f'{NAME}_{args.corpus}_{args.decode}', payload)}")


if __name__ == "__main__":
    main()
