"""Retrieval over one repository, kept current from its graph deltas.

The read model feeds every applied delta: a changed file's chunks replace its old ones
in the sparse index (an unchanged file, re-reported by a scan, is not re-indexed), a
removed file's go, and the names each file defines are kept for the ranking's symbol
signal. ``search`` ranks files for a question with `query.search.ranking`.
The evaluation command drives this same class.

The read side's state keeps its chunk records without their texts (`lean_record`);
this class indexes the texts as a delta brings them and keeps them packed by file
(`ChunkTexts`), and `QuotedChunks` gives a context pack the chunks it quotes with them.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence, Set
from itertools import chain

import structlog

from query.dense import DenseIndex
from query.search import packed_chunks, packed_facts, packed_sections
from query.search.adjacency import Adjacency
from query.search.chunk_texts import RECENT_FILES, ChunkTexts
from query.search.context_pack import ContextPack, build_pack
from query.search.definers import Definers
from query.search.function_ranking import rank_functions
from query.search.literals import LiteralIndex, fragments
from query.search.pack_map import MAP_CANDIDATES, SPANS_PER_FILE, Lead, Span, leads_of
from query.search.packed_chunks import PackedChunks
from query.search.ranking import (
    Proximity,
    RankedFile,
    RankWeights,
    is_source,
    question_read,
    rank,
)
from query.search.sparse import SparseIndex
from query.search.vocabulary import Vocabulary, expansion_signal
from stores.chunk_postings import CountedChunks
from stores.deltas import GraphDelta
from stores.projections.ids import is_test_path
from stores.records import ChunkRecord, FileRecord, trusted
from stores.repo_state import RepoState

log = structlog.get_logger(__name__)

DEFINING_KINDS = frozenset(
    {"CLASS", "FUNCTION", "METHOD", "INTERFACE", "STRUCT", "ENUM", "TRAIT", "TYPE"}
)


class RepoRetrieval:
    """``dense``: where this repository's chunks get vectors (in the background)."""

    def __init__(
        self,
        repo: str = "",
        dense: DenseIndex | None = None,
        *,
        literals: bool = False,
        vocabulary: bool = False,
    ) -> None:
        self.repo = repo
        self.dense = dense
        self.sparse = SparseIndex()
        # path -> the file's chunks, the state's own tuple; `chunks` finds one by id
        self._chunks: dict[str, Sequence[ChunkRecord]] = {}
        self.chunks: Mapping[str, ChunkRecord] = ChunksById(self._chunks)
        self.texts = ChunkTexts()
        # name -> the files defining it, sorted: a path alone for one file, where a set
        # cost 216 bytes and a tuple of one 64 (sympy: 23 k names, 6.3 -> ~1.5 -> ~0.3 MB)
        self.definers = Definers()
        self.sources: set[str] = set()
        # the message-like string literals of each source file (the ``literal`` signals):
        # kept only when asked (the evaluation); they weigh 0 by default, so a replica
        # spends neither the memory nor the time on them
        self.literals = LiteralIndex() if literals else None
        # each chunk's prose words and code terms (the ``expansion`` signal): the same
        # terms, evaluation only (weight 0 by default)
        self.vocabulary = Vocabulary() if vocabulary else None
        # path -> the names it defines (its chunks' content hashes are its chunks')
        self._files: dict[str, tuple[str, ...]] = {}
        # while `apply` runs: the files whose chunks go to the sparse index at its end
        self._to_index: dict[str, tuple[ChunkRecord, ...]] | None = None

    def paths(self) -> Set[str]:
        """The files this retrieval knows (indexed, or defining a name)."""
        return self._files.keys()

    @property
    def retrievers(self) -> tuple[str, ...]:
        dense = self.dense is not None and self.dense.store.count(self.repo) > 0
        return ("bm25", "mentions", "dense") if dense else ("bm25", "mentions")

    def apply(
        self,
        delta: GraphDelta,
        lean: Mapping[str, FileRecord] | None = None,
        counted: CountedChunks | None = None,
    ) -> None:
        """Fold ``delta``; ``lean``: the records the state holds for its files, when they
        are its records without their chunk texts (the read side's), whose chunks are
        then the ones kept here. ``counted``: the tokens of its chunks counted already (a
        snapshot's postings, `SparseIndex.add_files`)."""
        for path in delta.files_removed:
            self.remove(path)
        # The sparse index takes the upserted files in one batch (`SparseIndex.add_files`):
        # a scan's barrier or a snapshot indexes thousands of files at once.
        batch: dict[str, tuple[ChunkRecord, ...]] = {}
        self._to_index = batch
        try:
            for record in delta.files_upserted:
                self.upsert(record, lean.get(record.path) if lean is not None else None)
        finally:
            self._to_index = None
            self.sparse.add_files(batch.items(), counted)

    def upsert(self, record: FileRecord, kept: FileRecord | None = None) -> None:
        """Index ``record`` (its chunks with their texts); ``kept``: the state's record of
        it, chunks without texts, which this keeps instead (same chunks, same order)."""
        kept = kept or record
        hashes = tuple(c.content_hash for c in record.chunks)
        names = tuple(sorted({s.name for s in record.symbols if s.kind in DEFINING_KINDS}))
        held = self._files.get(record.path)
        if held == names and hashes == self._hashes(record.path):
            # The same facts again (a scan re-reporting an unchanged file): nothing to
            # index, but the state now holds the new records: keep those, not two copies.
            if kept.chunks:
                self._chunks[record.path] = kept.chunks
            return
        self.remove(record.path)
        if not record.chunks and not names:
            return
        if self.dense is not None:
            self.dense.file_changed(self.repo, record.path, record.chunks, priority=0.0)
        if self._to_index is not None:
            self._to_index[record.path] = record.chunks
        else:
            self.sparse.add_file(record.path, record.chunks)
        self.texts.put(record.path, [c.text for c in record.chunks])
        if is_source(record.path, record.language) and record.symbols:
            self.sources.add(record.path)
        if self.literals is not None and is_source(record.path, record.language):
            self.literals.put(record.path, [p for c in record.chunks for p in fragments(c.text)])
        if self.vocabulary is not None and is_source(record.path, record.language):
            self.vocabulary.put(record.path, [(c.doc, c.text) for c in record.chunks])
        if kept.chunks:
            self._chunks[record.path] = kept.chunks
        for name in names:
            self.definers.add(name, record.path)
        self._files[record.path] = names

    def _hashes(self, path: str) -> tuple[str, ...]:
        """The content hashes of the chunks kept of ``path`` (the same as the indexed
        ones': a kept record differs from the indexed one by its texts only)."""
        return tuple(h for _, h in packed_chunks.ids_and_hashes(self._chunks.get(path, ())))

    def remove(self, path: str) -> None:
        held = self._files.pop(path, None)
        if held is None:
            return
        if self.dense is not None:
            self.dense.file_removed(self.repo, path)
        if self._to_index is not None:
            self._to_index.pop(path, None)
        self.sparse.remove_file(path)
        self.texts.drop(path)
        self.sources.discard(path)
        if self.literals is not None:
            self.literals.remove(path)
        if self.vocabulary is not None:
            self.vocabulary.remove(path)
        self._chunks.pop(path, None)
        for name in held:
            self.definers.discard(name, path)

    def search(
        self,
        question: str,
        *,
        limit: int = 10,
        path_prefix: str | None = None,
        importance: Mapping[str, float] | None = None,
        weights: RankWeights | None = None,
        recent: Mapping[str, float] | None = None,
        proximity: Proximity | None = None,
    ) -> list[RankedFile]:
        dense = (
            self.dense.search(self.repo, question, limit=200, path_prefix=path_prefix)
            if self.dense is not None
            else None
        )
        return rank(
            question,
            self.sparse,
            self.definers,
            self._files.keys(),
            importance=importance,
            weights=weights,
            limit=limit,
            path_prefix=path_prefix,
            dense=dense,
            sources=self.sources,
            recent=recent,
            proximity=proximity,
            evidence=self._evidence(question, path_prefix),
        )

    def _evidence(
        self, question: str, path_prefix: str | None
    ) -> dict[str, dict[str, float]] | None:
        """The signals computed beside the ranking (literals, expansion), by file."""
        if self.literals is None and self.vocabulary is None:
            return None
        read = question_read(question)
        found: dict[str, dict[str, float]] = (
            self.literals.signals(read) if self.literals is not None else {}
        )
        if self.vocabulary is not None:
            terms = self.vocabulary.expand(read)
            if terms:
                hits = self.sparse.rank_files(
                    " ".join(t for t, _ in terms), 200, path_prefix=path_prefix
                )
                for path, own in expansion_signal(hits).items():
                    found.setdefault(path, {}).update(own)
        return found


class ChunksById(Mapping[str, ChunkRecord]):
    """chunk id -> its record, read through its file's chunks (``by_path``): a chunk's id
    is its path, '#', and a name or a number (`processors.chunks`), so the file is the
    id's part before one of its '#'. A dict by id cost ~27 bytes a chunk (sympy: 37,475)
    for a lookup a search makes once per hit. In order: file by file, as they came."""

    __slots__ = ("_by_path",)

    def __init__(self, by_path: Mapping[str, Sequence[ChunkRecord]]) -> None:
        self._by_path = by_path

    def __getitem__(self, chunk_id: str) -> ChunkRecord:
        at = chunk_id.find("#")
        while at >= 0:
            held = self._by_path.get(chunk_id[:at], ())
            if isinstance(held, PackedChunks):  # the read side's: builds the one record
                found = held.by_id(chunk_id)
                if found is not None:
                    return found
            else:
                for chunk in held:
                    if chunk.id == chunk_id:
                        return chunk
            at = chunk_id.find("#", at + 1)
        raise KeyError(chunk_id)

    def __iter__(self) -> Iterator[str]:
        return (chunk.id for chunk in chain.from_iterable(self._by_path.values()))

    def __len__(self) -> int:
        return sum(map(len, self._by_path.values()))

    def values(self) -> Iterator[ChunkRecord]:  # type: ignore[override]
        return chain.from_iterable(self._by_path.values())


def lean_record(record: FileRecord) -> FileRecord:
    """A file's record as the read side's state keeps it: no references (the worker
    resolved them into edges; the read side only counts them: they were half its memory,
    sympy 1,407 -> 754 MB), chunks without their texts (`RepoRetrieval.texts` keeps
    them packed), and its chunks, sections, symbols, imports and keywords packed
    (`query.search.packed_chunks`, `packed_sections`, `packed_facts`: sequences that
    build the same records as they are read)."""
    chunks, sections = _lean_chunks(record), packed_sections.pack(record.sections)
    symbols, imports = packed_facts.pack(record.symbols), packed_facts.pack(record.imports)
    keywords = packed_facts.pack(record.keywords)
    kept = (chunks, sections, symbols, imports, keywords)
    held = (record.chunks, record.sections, record.symbols, record.imports, record.keywords)
    if not record.references and all(a is b for a, b in zip(kept, held, strict=True)):
        return record
    # trusted: the copy shares its class's fields-set (a model's copy takes its own)
    return trusted(
        FileRecord,
        {
            **record.__dict__,
            "references": (),
            "chunks": chunks,
            "sections": sections,
            "symbols": symbols,
            "imports": imports,
            "keywords": keywords,
        },
    )


def _lean_chunks(record: FileRecord) -> Sequence[ChunkRecord]:
    """The record's chunks without their texts, packed when they can be (else a tuple);
    the record's own when they are so already."""
    if not record.chunks or isinstance(record.chunks, PackedChunks):
        return record.chunks
    lean = [c.model_copy(update={"text": ""}) if c.text else c for c in record.chunks]
    packed = packed_chunks.pack(record.path, lean)
    if isinstance(packed, PackedChunks):
        return packed
    if all(a is b for a, b in zip(lean, record.chunks, strict=True)):
        return record.chunks
    return tuple(lean)


class QuotedChunks(Mapping[str, Sequence[ChunkRecord]]):
    """path -> the file's chunks with their texts, read from the retrieval's packed
    texts as a context pack asks for them (the last files asked kept)."""

    def __init__(self, files: Mapping[str, FileRecord], retrieval: RepoRetrieval) -> None:
        self._files = files
        self._texts = retrieval.texts
        self._recent: OrderedDict[str, tuple[ChunkRecord, ...]] = OrderedDict()

    def __getitem__(self, path: str) -> Sequence[ChunkRecord]:
        held = self._recent.get(path)
        if held is not None:
            self._recent.move_to_end(path)
            return held
        record = self._files.get(path)
        if record is None or not record.chunks:
            raise KeyError(path)
        chunks = record.chunks
        if any(not c.text for c in chunks):
            texts = self._texts.of(path)
            if len(texts) == len(chunks):
                chunks = tuple(
                    c.model_copy(update={"text": t}) if t and not c.text else c
                    for c, t in zip(chunks, texts, strict=True)
                )
            else:
                log.error("chunk_texts_missing", path=path, chunks=len(chunks), texts=len(texts))
        self._recent[path] = chunks
        if len(self._recent) > RECENT_FILES:
            self._recent.popitem(last=False)
        return chunks

    def __iter__(self) -> Iterator[str]:
        return (path for path, record in self._files.items() if record.chunks)

    def __len__(self) -> int:
        return sum(1 for record in self._files.values() if record.chunks)


def proximity_of(adjacency: Adjacency, neighborhood: Mapping[str, str]) -> Proximity:
    """The graph's answer to "what is near the named files", for the ranking."""
    return Proximity(adjacency.linked_files, neighborhood)


def question_pack(
    state: RepoState,
    retrieval: RepoRetrieval,
    question: str,
    chunks_by_path: Mapping[str, Sequence[ChunkRecord]],
    *,
    budget: int,
    seeds: int = 3,
    importance: Mapping[str, float] | None = None,
    recent: Mapping[str, float] | None = None,
    adjacency: Adjacency | None = None,
    weights: RankWeights | None = None,
    proximity: Proximity | None = None,
    map_files: int = MAP_CANDIDATES,
) -> ContextPack:
    """The context pack for a question: its best search hits are the targets; its map
    names the files of its ``map_files`` best that no file group shows (0: no map; the
    /context endpoint and the evaluation build packs with this one function)."""
    ranked = retrieval.search(
        question,
        limit=max(seeds, map_files),
        importance=importance,
        recent=recent,
        weights=weights,
        proximity=proximity,
    )
    hits = ranked[:seeds]
    top = hits[0].score if hits and hits[0].score > 0 else 1.0
    starts = [(h.best_chunk or f"file:{h.path}", h.score / top) for h in hits]
    leads = question_leads(state, retrieval, question, ranked[:map_files])
    return build_pack(
        state,
        chunks_by_path,
        starts,
        budget=budget,
        title=question[:80],
        adjacency=adjacency,
        leads=leads,
    )


def question_leads(
    state: RepoState,
    retrieval: RepoRetrieval,
    question: str,
    ranked: Sequence[RankedFile],
) -> list[Lead]:
    """The ranked source files as the map's candidates (test files left out: a fix lands
    in source, and the pack lists its targets' tests already), each with its functions
    ranked for the question (`function_ranking`), or its best chunk's first 40 lines."""
    ranked = [r for r in ranked if not is_test_path(r.path)]
    paths = [r.path for r in ranked]
    files = {p: state.files[p] for p in paths if p in state.files}
    symbols = {p: record.symbols for p, record in files.items()}
    functions = rank_functions(
        question,
        ranked,
        symbols,
        # the chunks as held, without their texts: ids, qualnames and lines are all the
        # function ranking reads (quoting 100 files' texts cost a pack ~60 ms on sympy)
        {p: record.chunks for p, record in files.items()},
        retrieval.sparse.chunk_scores(question_read(question), paths),
        limit=sum(map(len, symbols.values())),
        per_file=SPANS_PER_FILE,  # every file's first: all the map shows of it
    )
    fallback = {}
    for r in ranked:
        chunk = retrieval.chunks.get(r.best_chunk) if r.best_chunk else None
        if chunk is not None:
            fallback[r.path] = Span(chunk.line_start, min(chunk.line_end, chunk.line_start + 39))
    return leads_of(
        paths, [(f.path, f.qualname, f.line_start, f.line_end) for f in functions], fallback
    )
