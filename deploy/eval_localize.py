"""``gazetteer eval localize``: rank files for real issues, as the service would.

Reads instances in the format of the shared benchmark (``instance_id``, ``repo``,
``base_commit``, ``problem_statement``), finds each repository at its base commit in
``DIR/<owner>__<name>__<sha12>/``, indexes it in process with the service's own code
(the producer's scan, `RepoIndex`, the reclusterer for importance, `RepoRetrieval`),
ranks the files for the issue text and writes one prediction line per instance:
``{"instance_id": ..., "ranked_files": [...]}``, the lines ``score.py`` reads.

Two baselines are computed in the same run over the same files and written beside the
predictions: whole-file BM25 on plain words (``*.bm25-files.jsonl``) and chunk BM25
with code-aware tokens, each file scored by its best chunk (``*.bm25-chunks.jsonl``).
The files of the context pack the service would build for the issue (8,000 tokens)
are written too, in the pack's order (``*.pack.jsonl``: its file groups, then its
map; each tier apart, and the functions its targets and map point at):
tests/bench/pack_recall.py reads them. Every candidate file of each question, with
its signals before weighing, goes to ``*.signals.jsonl``: `gazetteer eval tune` fits
the ranking weights on them.
The same-run peer (`eval_peer`, ``--peer bm25``, the default) is a whole-file BM25
over code-aware tokens, the field's published baseline (``*.peer-bm25.jsonl``).
Functions too (issue 17): each prediction line holds ``ranked_functions``
(``path::qualname``, `function_ranking` over the file ranking's best files), with the
function-level BM25 peer's (``*.peer-bm25-functions.jsonl``), the search hits' best
chunks in file order (``*.fn-hits.jsonl``) and every function candidate with its signals
(``*.fn-signals.jsonl``); `gazetteer eval functions` scores them.
Each instance's index is built and dropped inside one call and the memory handed back
before the next (`eval_memory`): a run of 118 checkouts holds one index at a time.
The fix of an issue lands in source, not in tests: files that look like tests are left
out of every ranking (the same rule for Gazetteer and the baselines).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import structlog

from deploy.eval_memory import release, resident_mb
from deploy.eval_peer import FunctionPeer, WholeFilePeer, peer_of
from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from producers.events import FileChanged
from producers.scan import ScanOptions, WorkTree, full_scan
from producers.source import InMemorySink, Source
from query.dense import DenseIndex
from query.retrieval import RepoRetrieval, proximity_of, question_pack
from query.search.adjacency import Adjacency
from query.search.context_pack import ContextPack
from query.search.function_ranking import (
    FUNCTION_KINDS,
    RankedFunction,
    file_signals,
    rank_functions,
)
from query.search.ranking import Proximity, RankedFile, question_read
from query.search.sparse import FileBM25
from stores.projections.graph_state import FileGraphState
from stores.projections.ids import is_test_path
from stores.repo_state import RepoState
from stores.text.embedders import Embedder, embedder_from_spec
from stores.text.embedding_cache import SqliteEmbeddingCache
from stores.vectors import InMemoryVectorStore

log = structlog.get_logger(__name__)

RANKED = 100  # files kept per prediction (score.py reads Acc@1..10 and MRR)
ALL_CANDIDATES = 100_000
FUNCTION_FILES = 20  # files whose functions are ranked (the gold file is in 20 for most)


@dataclass(frozen=True, slots=True)
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    problem_statement: str

    def folder(self, repos: Path) -> Path:
        owner, name = self.repo.split("/", 1)
        return repos / f"{owner}__{name}__{self.base_commit[:12]}"


def read_instances(dataset: Path) -> Iterator[Instance]:
    with dataset.open() as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                yield Instance(
                    row["instance_id"], row["repo"], row["base_commit"], row["problem_statement"]
                )
            except (ValueError, KeyError) as exc:
                raise ValueError(f"{dataset}:{number}: not an instance ({exc})") from exc


@dataclass
class Indexed:
    state: RepoState
    retrieval: RepoRetrieval
    importance: dict[str, float]
    whole_files: FileBM25
    seconds: float
    proximity: Proximity
    peer: WholeFilePeer | None = None
    function_peer: FunctionPeer | None = None

    def search(self, question: str, limit: int) -> list[RankedFile]:
        """As the service ranks, every signal computed (the weights tune them all)."""
        return self.retrieval.search(
            question, limit=limit, importance=self.importance, proximity=self.proximity
        )

    def functions(self, question: str, files: list[RankedFile], limit: int) -> list[RankedFunction]:
        """The functions of the ``FUNCTION_FILES`` first of ``files`` (the file ranking)
        ranked for the question, as `function_ranking` ranks them."""
        considered = files[:FUNCTION_FILES]
        paths = [f.path for f in considered]
        records = {p: self.state.files[p] for p in paths if p in self.state.files}
        scores = self.retrieval.sparse.chunk_scores(question_read(question), paths)
        return rank_functions(
            question,
            considered,
            {p: r.symbols for p, r in records.items()},
            {p: r.chunks for p, r in records.items()},
            scores,
            limit=limit,
        )


async def index_folder(
    root: Path,
    repo: str,
    dense: DenseIndex | None = None,
    peer: WholeFilePeer | None = None,
    function_peer: FunctionPeer | None = None,
) -> Indexed:
    """The repository at ``root`` through the service's own pipeline, in process; the
    peers (when given) are fed the same files the scan read (the function peer with
    the symbols the index parsed)."""
    started = time.perf_counter()
    sink = InMemorySink()
    source = Source(repo, str(root), sink)
    await source.claim()  # a session opens with its claim, or the index takes nothing
    await full_scan(source, WorkTree(root, None), ScanOptions())
    index, retrieval = RepoIndex(repo), RepoRetrieval(repo, dense, literals=True, vocabulary=True)
    whole = FileBM25()
    for event in sink.events:
        delta = index.handle(event, time.time())
        if delta is not None:
            retrieval.apply(delta)
        if isinstance(event, FileChanged) and event.content is not None and not event.skipped:
            text = event.content.decode("utf-8", errors="replace")
            whole.add(event.path, text)
            if peer is not None:
                peer.add(event.path, text)
            record = index.state.files.get(event.path)
            if function_peer is not None and record is not None:
                function_peer.add(event.path, text, record.symbols)
    snapshot = recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=0.0)
    importance = snapshot.importance()
    near = proximity_of(Adjacency.of(index.state), snapshot.membership())
    seconds = time.perf_counter() - started
    return Indexed(index.state, retrieval, importance, whole, seconds, near, peer, function_peer)


def pack_of(indexed: Indexed, question: str) -> ContextPack:
    """The pack the /context endpoint would answer for the issue, 8,000 tokens."""
    by_path = {p: r.chunks for p, r in indexed.state.files.items() if r.chunks}
    return question_pack(
        indexed.state,
        indexed.retrieval,
        question,
        by_path,
        budget=8000,
        importance=indexed.importance,
        proximity=indexed.proximity,
    )


def pack_files(pack: ContextPack) -> list[str]:
    """The files a pack gives an agent to read, in its order: those of its file groups
    (each with its lines to read first), then those of its map (each with the lines of
    its ranked functions)."""
    return list(dict.fromkeys([r.path for r in pack.files] + [lead.path for lead in pack.map]))


def pack_tiers(pack: ContextPack) -> dict[str, list[str]]:
    """The pack's files by how much of them it shows (test files left out, as in every
    ranking): ``excerpt_files`` hold a target in full, ``grouped_files`` are its file
    groups (a target, or related code's signatures), ``map_files`` its map's lines; and
    the functions it points at: its targets' (``target_functions``) and its map's."""
    excerpt = [t.path for t in pack.targets if t.path is not None and t.text is not None]
    return {
        "excerpt_files": _source_only(dict.fromkeys(excerpt)),
        "grouped_files": _source_only(r.path for r in pack.files),
        "map_files": _source_only(lead.path for lead in pack.map),
        "target_functions": [
            f"{t.path}::{t.name}"
            for t in pack.targets
            if t.path is not None and t.kind in FUNCTION_KINDS
        ],
        "map_functions": [
            f"{lead.path}::{span.name}" for lead in pack.map for span in lead.spans if span.name
        ],
    }


def _source_only(paths: Iterable[str]) -> list[str]:
    return [p for p in paths if not is_test_path(p)][:RANKED]


@dataclass(frozen=True, slots=True)
class Options:
    """How each instance is ranked: the embedder's model and cache (or None), how many
    candidates it embeds, the peer's name (`eval_peer.PEERS`)."""

    model: Embedder | None = None
    cache: SqliteEmbeddingCache | None = None
    candidates: int = 15
    peer: str = "bm25"


Witness = Callable[[Indexed], None]
"""Called with each instance's index once built (tests hold weak references with it)."""


async def localize(
    dataset: Path,
    repos: Path,
    out: Path,
    *,
    limit: int | None = None,
    embedder: str | None = None,
    candidates: int = 15,
    peer: str = "bm25",
    witness: Witness | None = None,
) -> int:
    """Write predictions (and the baselines and the peer beside them); returns instances
    done.

    With ``embedder``, the chunks of each question's ``candidates`` best files (by the
    ranking without vectors) are embedded and the question is ranked again with the
    dense signal fused in (the service embeds whole repositories in the background;
    two cores cannot embed a checkout per instance). ``peer``: ``bm25`` writes the
    whole-file BM25 peer's ranking to ``*.peer-bm25.jsonl``, ``none`` skips it.
    Each instance's index is built and dropped inside `_localize_one`, and the memory
    handed back before the next (`eval_memory`): the run's memory stays flat."""
    peer_of(peer)  # an unknown name fails before any work
    out.parent.mkdir(parents=True, exist_ok=True)
    files = {
        "gazetteer": out,
        "bm25-files": out.with_suffix(".bm25-files.jsonl"),
        "bm25-chunks": out.with_suffix(".bm25-chunks.jsonl"),
        "pack": out.with_suffix(".pack.jsonl"),
        "signals": out.with_suffix(".signals.jsonl"),
        "fn-hits": out.with_suffix(".fn-hits.jsonl"),
        "fn-signals": out.with_suffix(".fn-signals.jsonl"),
    }
    if peer != "none":
        files[f"peer-{peer}"] = out.with_suffix(f".peer-{peer}.jsonl")
        files[f"peer-{peer}-functions"] = out.with_suffix(f".peer-{peer}-functions.jsonl")
    handles = {name: path.open("w") for name, path in files.items()}
    # Checkouts of one repository share most chunks: the cache makes later ones cheap.
    model = embedder_from_spec(embedder) if embedder else None
    cache = SqliteEmbeddingCache(out.parent / "embeddings") if embedder else None
    options = Options(model, cache, candidates, peer)
    done = 0
    try:
        for instance in read_instances(dataset):
            if limit is not None and done >= limit:
                break
            folder = instance.folder(repos)
            if not folder.is_dir():
                log.error(
                    "instance_repository_missing", instance=instance.instance_id, folder=str(folder)
                )
                continue
            before = resident_mb()
            lines = await _localize_one(instance, folder, options, witness)
            for name, line in lines.items():
                handles[name].write(json.dumps(line) + "\n")
            done += 1
            after = release()  # the index is gone: hand its memory back before the next
            log.info(
                "instance_released",
                instance=instance.instance_id,
                rss_before_mb=before,
                rss_after_mb=after,
            )
    finally:
        for handle in handles.values():
            handle.close()
    return done


async def _localize_one(
    instance: Instance, folder: Path, options: Options, witness: Witness | None
) -> dict[str, dict[str, object]]:
    """Index one checkout, rank its issue every way; the lines to write, by file. The
    index lives only inside this call."""
    repo = instance.repo.replace("/", "-")
    dense = (
        DenseIndex(options.model, InMemoryVectorStore(), options.cache)
        if options.model is not None and options.cache is not None
        else None
    )
    peer = peer_of(options.peer)
    function_peer = FunctionPeer() if peer is not None else None
    indexed = await index_folder(folder, repo, dense, peer, function_peer)
    if witness is not None:
        witness(indexed)
    question = instance.problem_statement
    pool = RANKED * 3
    if dense is not None:
        first = indexed.search(question, limit=options.candidates)
        dense.fill_paths(repo, [r.path for r in first])
    # Every candidate with its signals: `gazetteer eval tune` re-weighs them.
    every = [r for r in indexed.search(question, ALL_CANDIDATES) if not is_test_path(r.path)]
    ranked_functions = indexed.functions(question, every, 10_000)
    # The functions' evidence as file signals (weight 0 by default): `eval learn` weighs them.
    from_functions = file_signals(ranked_functions)
    for r in every:
        r.signals.update(from_functions.get(r.path, {}))
    lines: dict[str, dict[str, object]] = {
        "signals": {
            "instance_id": instance.instance_id,
            "repo": instance.repo,
            "candidates": [[r.path, r.signals] for r in every],
        }
    }
    rankings = {
        "gazetteer": [r.path for r in every[:pool]],
        "bm25-files": [p for p, _ in indexed.whole_files.search(question, limit=pool)],
        "bm25-chunks": [p for p, _, _ in indexed.retrieval.sparse.rank_files(question, pool)],
    }
    pack = pack_of(indexed, question)
    rankings["pack"] = pack_files(pack)
    if indexed.peer is not None:
        rankings[f"peer-{indexed.peer.name}"] = indexed.peer.rank(question, pool)
    for name, ranked in rankings.items():
        lines[name] = {"instance_id": instance.instance_id, "ranked_files": _source_only(ranked)}
    lines["pack"].update(pack_tiers(pack))
    functions = indexed.functions(question, every, RANKED)
    lines["gazetteer"]["ranked_functions"] = [f.key for f in functions]
    lines["fn-signals"] = {
        "instance_id": instance.instance_id,
        "candidates": [[f.key, f.signals] for f in ranked_functions],
    }
    # The service's search hits as they stand: each file's best chunk, its lines to read.
    lines["fn-hits"] = {
        "instance_id": instance.instance_id,
        "ranked_functions": [
            f"{r.path}::{chunk.qualname}"
            for r in every[:RANKED]
            if r.best_chunk
            and (chunk := indexed.retrieval.chunks.get(r.best_chunk)) is not None
            and chunk.qualname
        ],
    }
    if indexed.function_peer is not None:
        lines[f"peer-{options.peer}-functions"] = {
            "instance_id": instance.instance_id,
            "ranked_functions": indexed.function_peer.rank(question, RANKED),
        }
    log.info(
        "instance_localized",
        instance=instance.instance_id,
        files=len(indexed.retrieval.sparse.paths()),
        index_s=round(indexed.seconds, 2),
        top=rankings["gazetteer"][:3],
        rss_mb=resident_mb(),
    )
    return lines


def run(
    dataset: Path,
    repos: Path,
    out: Path,
    limit: int | None = None,
    embedder: str | None = None,
    peer: str = "bm25",
) -> int:
    return asyncio.run(localize(dataset, repos, out, limit=limit, embedder=embedder, peer=peer))
