"""Sparse retrieval: incremental Okapi BM25 over chunks, and a whole-file baseline.

`SparseIndex` indexes chunks (`chunks.chunk_file`) with code-aware tokens
(`tokens.tokenize`) and ranks files by their best chunk. Measured on the benchmark of
real issues (file localization): chunk-level BM25 on code-aware tokens, a file scored by
its best chunk, reached Acc@5 68 against 48 for whole-file BM25 (`FileBM25`, kept as
the baseline). Each chunk is indexed as `chunks.embed_text`: a ``path qualname`` header,
then doc and text, so path parts are terms (they matter for localization); their
weight is ``path_weight``.

The statistics and the scoring are `bm25.BM25`'s: postings in numpy arrays, updated
by adds and tombstones, so an index built by any sequence of adds and removes scores
as a fresh build of what remains, bit for bit. Each chunk carries its file's number
(a group), so ranking files by their best chunk runs in numpy too; ties rank by id
(chunks) and by path (files), as the dict implementation ranked them
(`tests/sparse_oracle.py`). Measured on sympy (37,475 chunks, issue 16 §3,
`tests/bench/sparse_incremental.py`): 57.1 MB -> 18.8 MB; ``rank_files(q, 200)``
p50 10.1 -> 1.1 ms, p95 55.5 -> 10.4 ms (a loaded machine), answers identical.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping

import numpy as np

from query.search.bm25 import BM25, Statistics
from stores.chunk_postings import CountedChunks
from stores.records import ChunkRecord
from stores.text.chunk_text import embed_text
from stores.text.tokens import tokenize, word_tokens

__all__ = ["BM25", "FileBM25", "SparseIndex", "Tokenizer", "top"]

Tokenizer = Callable[[str], list[str]]


def top(scores: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` best (id, score), score descending, then id ascending."""
    return heapq.nsmallest(max(limit, 0), scores.items(), key=lambda item: (-item[1], item[0]))


class SparseIndex:
    """BM25 over the chunks of a repository's files, replaced file by file.

    ``path_weight``: how many times a chunk's path tokens count (at least 1: the
    embedded text's header holds the path once). ``compact_fraction``,
    ``compact_min``: when `BM25` compacts (tests compact at every step).
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        path_weight: int = 1,
        tokenizer: Tokenizer = tokenize,
        compact_fraction: float = 0.25,
        compact_min: int = 8192,
    ) -> None:
        if path_weight < 1:
            raise ValueError("path_weight must be at least 1")
        self._bm25 = BM25(k1=k1, b=b, compact_fraction=compact_fraction, compact_min=compact_min)
        self._tokenize = tokenizer
        self._path_weight = path_weight
        self._chunks_of: dict[str, tuple[str, ...]] = {}
        # a file's number, each chunk's group in the BM25 (reused once the file goes)
        self._file_of: dict[str, int] = {}
        self._paths: list[str | None] = []
        self._free_files: list[int] = []
        self._path_of: Mapping[str, str] = _PathOf(self)

    @property
    def bm25(self) -> BM25:
        """The statistics (read them; change the index through its files)."""
        return self._bm25

    def __len__(self) -> int:
        return len(self._bm25)

    def paths(self) -> frozenset[str]:
        return frozenset(self._chunks_of)

    def compact(self) -> None:
        """Fold the pending changes into the base now (an idle moment); the index
        compacts by itself as changes accumulate, and scores the same either way."""
        self._bm25.compact()

    def add_file(self, path: str, chunks: Iterable[ChunkRecord]) -> None:
        """Index a file's chunks, replacing whatever the file had."""
        self.add_files([(path, chunks)])

    def add_files(
        self,
        files: Iterable[tuple[str, Iterable[ChunkRecord]]],
        counted: CountedChunks | None = None,
    ) -> None:
        """`add_file` each ``(path, chunks)`` in turn, the BM25's adds in one batch
        (`BM25.add_many`: a snapshot's or a scan's files go to its base at once).

        ``counted``: the chunks' tokens counted already (a snapshot's postings, checked
        against its chunks by the caller): the files it holds are indexed from the counts
        (`BM25.add_counted`), without tokenizing, when this index tokenizes as they were
        counted (the default tokenizer, ``path_weight`` 1); the others as without."""
        if counted is None or self._tokenize is not tokenize or self._path_weight != 1:
            self._bm25.add_many(self._documents(files))
            return
        rest: list[tuple[str, tuple[ChunkRecord, ...]]] = []
        postings = counted.postings
        self._bm25.add_counted(
            self._counted(files, counted, rest),
            postings.vocabulary,
            postings.starts,
            postings.terms,
            postings.tfs,
        )
        if rest:
            self._bm25.add_many(self._documents(rest))

    def _counted(
        self,
        files: Iterable[tuple[str, Iterable[ChunkRecord]]],
        counted: CountedChunks,
        rest: list[tuple[str, tuple[ChunkRecord, ...]]],
    ) -> Iterator[tuple[str, int, int]]:
        """`_documents` of the files ``counted`` holds, as (chunk id, file number, chunk's
        place in the counts); the others go to ``rest``."""
        for path, given in files:
            chunks = tuple(given)
            first = counted.first.get(path)
            if first is None or counted.sizes[path] != len(chunks) or not chunks:
                rest.append((path, chunks))
                continue
            number = self._numbered(path, chunks)
            for i, chunk in enumerate(chunks):
                yield chunk.id, number, first + i

    def _documents(
        self, files: Iterable[tuple[str, Iterable[ChunkRecord]]]
    ) -> Iterator[tuple[str, list[str], int]]:
        """Each file's chunks as BM25 documents, its earlier chunks removed first (a
        chunk removed while its batch is pending is a tombstone, as after an add)."""
        for path, given in files:
            chunks = tuple(given)
            if not chunks:
                self.remove_file(path)
                continue
            number = self._numbered(path, chunks)
            path_tokens = self._tokenize(path) * (self._path_weight - 1)
            for chunk in chunks:
                yield chunk.id, [*path_tokens, *self._tokenize(embed_text(chunk))], number

    def _numbered(self, path: str, chunks: tuple[ChunkRecord, ...]) -> int:
        """The file's earlier chunks removed, its number (its chunks' group) given."""
        if any(chunk.path != path for chunk in chunks):
            raise ValueError(f"chunks of another file given for {path}")
        self.remove_file(path)
        if self._free_files:
            number = self._free_files.pop()
            self._paths[number] = path
        else:
            number = len(self._paths)
            self._paths.append(path)
        self._file_of[path] = number
        self._chunks_of[path] = tuple(chunk.id for chunk in chunks)
        return number

    def remove_file(self, path: str) -> bool:
        """Forget a file's chunks; False when it had none indexed."""
        ids = self._chunks_of.pop(path, None)
        if ids is None:
            return False
        for chunk_id in ids:
            self._bm25.remove(chunk_id)
        number = self._file_of.pop(path)
        self._paths[number] = None
        self._free_files.append(number)
        return True

    def search(
        self, query: str, *, limit: int = 10, path_prefix: str | None = None
    ) -> list[tuple[str, float]]:
        """The best chunks for ``query``: (chunk id, score), best first, ties by id."""
        slots, scores = self._hits(query, path_prefix)
        if limit <= 0 or not len(slots):
            return []
        keep = _at_least_the_kth(scores, limit)
        slots, scores = slots[keep], scores[keep]
        found = zip(self._bm25.ids(slots.tolist()), scores.tolist(), strict=True)
        return heapq.nsmallest(limit, found, key=lambda item: (-item[1], item[0]))

    def statistics(self, query: str) -> Statistics:
        """This index's share of what the query's BM25 scores read (`Statistics`)."""
        return self._bm25.statistics(self._tokenize(query))

    def rank_files(
        self,
        query: str,
        limit: int = 10,
        *,
        path_prefix: str | None = None,
        stats: Statistics | None = None,
    ) -> list[tuple[str, float, str]]:
        """Files scored by their best chunk: (path, score, best chunk id), best first,
        ties by path; a file's best chunk ties by id. ``stats``: the corpus's, when this
        index is one of several ranked as one (`Statistics.merged`)."""
        slots, scores = self._hits(query, path_prefix, stats)
        if limit <= 0 or not len(slots):
            return []
        groups = self._bm25.groups(slots)
        # By file, its best chunks first: a file's best is the first of its run. This
        # runs over every chunk scored (thousands for a common word, issue 15).
        order = np.lexsort((-scores, groups))
        slots, scores, groups = slots[order], scores[order], groups[order]
        firsts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
        firsts = firsts[_at_least_the_kth(scores[firsts], limit)]
        # A file whose next chunk has its best score too: the least id of those wins.
        tied = np.zeros(len(slots), dtype=np.bool_)
        tied[:-1] = (groups[1:] == groups[:-1]) & (scores[1:] == scores[:-1])
        ids = self._bm25.ids(slots[firsts].tolist())
        for k in np.flatnonzero(tied[firsts]).tolist():
            end = int(firsts[k]) + 1
            while tied[end - 1]:
                end += 1
            ids[k] = min(self._bm25.ids(slots[firsts[k] : end].tolist()))
        paths = self._paths
        ranked = [
            (paths[g], s, c)
            for g, s, c in zip(groups[firsts].tolist(), scores[firsts].tolist(), ids, strict=True)
        ]
        return heapq.nsmallest(limit, ranked, key=lambda item: (-item[1], item[0]))  # type: ignore[arg-type,return-value]

    def chunk_scores(self, query: str, paths: Iterable[str]) -> dict[str, float]:
        """The BM25 score of every chunk of ``paths`` that matches ``query`` (chunk id ->
        score): what function-level ranking weighs inside the files ranked first."""
        numbers = [self._file_of[p] for p in paths if p in self._file_of]
        slots, scores = self._hits(query, None)
        if not numbers or not len(slots):
            return {}
        keep = np.isin(self._bm25.groups(slots), np.asarray(numbers, dtype=np.int32))
        ids = self._bm25.ids(slots[keep].tolist())
        return dict(zip(ids, scores[keep].tolist(), strict=True))

    def _hits(
        self, query: str, path_prefix: str | None, stats: Statistics | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        slots, scores = self._bm25.hits(self._tokenize(query), stats)
        if path_prefix and len(slots):
            inside = np.fromiter(
                (p is not None and p.startswith(path_prefix) for p in self._paths),
                dtype=np.bool_,
                count=len(self._paths),
            )
            keep = inside[self._bm25.groups(slots)]
            slots, scores = slots[keep], scores[keep]
        return slots, scores


def _at_least_the_kth(scores: np.ndarray, k: int) -> np.ndarray:
    """Where ``scores`` reach the ``k``-th best (all of them when there are at most
    ``k``): the candidates for a top ``k``, ties at the edge included."""
    if len(scores) <= k:
        return np.ones(len(scores), dtype=np.bool_)
    kth = np.partition(scores, len(scores) - k)[len(scores) - k]
    return scores >= kth


class _PathOf(Mapping[str, str]):
    """Chunk id -> its file's path, read through the index (nothing copied)."""

    def __init__(self, index: SparseIndex) -> None:
        self._index = index

    def __getitem__(self, chunk_id: str) -> str:
        index = self._index
        if chunk_id not in index._bm25:
            raise KeyError(chunk_id)
        return index._paths[index._bm25.group_of(chunk_id)]  # type: ignore[return-value]

    def __iter__(self) -> Iterator[str]:
        return (c for ids in self._index._chunks_of.values() for c in ids)

    def __len__(self) -> int:
        return len(self._index._bm25)


class FileBM25:
    """Whole-file BM25, the baseline: one document per file, its text (and its path's
    tokens ``path_weight`` times). ``tokenizer``: `tokens.word_tokens` (plain words, the
    default) or `tokens.tokenize` (code-aware)."""

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        path_weight: int = 0,
        tokenizer: Tokenizer = word_tokens,
    ) -> None:
        self._bm25 = BM25(k1=k1, b=b)
        self._tokenize = tokenizer
        self._path_weight = path_weight

    @property
    def bm25(self) -> BM25:
        return self._bm25

    def __len__(self) -> int:
        return len(self._bm25)

    def add(self, path: str, text: str) -> None:
        """Index a file's text, replacing its previous one."""
        path_tokens = self._tokenize(path) * self._path_weight
        self._bm25.add(path, [*path_tokens, *self._tokenize(text)])

    def remove(self, path: str) -> bool:
        return self._bm25.remove(path)

    def search(
        self, query: str, *, limit: int = 10, path_prefix: str | None = None
    ) -> list[tuple[str, float]]:
        """The best files for ``query``: (path, score), best first, ties by path."""
        scores = self._bm25.scores(self._tokenize(query))
        if path_prefix:
            scores = {p: s for p, s in scores.items() if p.startswith(path_prefix)}
        return top(scores, limit)
