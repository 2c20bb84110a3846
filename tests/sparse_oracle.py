"""The test oracle for the sparse index: `query/search/sparse.py` as it was at commit
179b08f, before its postings moved to numpy arrays (issue 16 §3), kept verbatim below
this paragraph (dicts of dicts: term -> {document: tf}). The differential tests and
`tests/bench/sparse_incremental.py` compare today's index with it, bit for bit; do not
change it.

Sparse retrieval: incremental Okapi BM25 over chunks, and a whole-file baseline.

`SparseIndex` indexes chunks (`chunks.chunk_file`) with code-aware tokens
(`tokens.tokenize`) and ranks files by their best chunk. Measured on the benchmark of
real issues (file localization): chunk-level BM25 on code-aware tokens, a file scored by
its best chunk, reached Acc@5 68 against 48 for whole-file BM25 (`FileBM25`, kept as
the baseline). Each chunk is indexed as `chunks.embed_text`: a ``path qualname`` header,
then doc and text, so path parts are terms (they matter for localization); their
weight is ``path_weight``.

Scoring (Lucene's variant, its IDF never negative), for a query with term counts qtf:
``score(d) = sum_t qtf(t) * idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b *
len(d) / avglen))`` with ``idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))``.

The index is an inverted index, term -> {document: tf}, plus each document's length:
a query touches only its terms' postings, and adding or removing a document updates
document frequencies, N and the total length exactly, so an index built by any
sequence of adds and removes scores as a fresh build of what remains. Terms are summed
in sorted order, so scores are bit-for-bit the same whatever the history; ties rank
by id.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from stores.records import ChunkRecord
from stores.text.chunk_text import embed_text
from stores.text.tokens import tokenize, word_tokens

__all__ = ["BM25", "FileBM25", "SparseIndex", "Tokenizer", "top"]

Tokenizer = Callable[[str], list[str]]


class BM25:
    """Okapi BM25 over documents given as tokens, keyed by id; adds and removes exact."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._postings: dict[str, dict[str, int]] = {}
        self._lengths: dict[str, int] = {}
        self._terms: dict[str, tuple[str, ...]] = {}  # a document's terms, to remove it
        self._total_length = 0

    def __len__(self) -> int:
        return len(self._lengths)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._lengths

    @property
    def average_length(self) -> float:
        return self._total_length / len(self._lengths) if self._lengths else 0.0

    def document_frequency(self, term: str) -> int:
        return len(self._postings.get(term, ()))

    def vocabulary(self) -> frozenset[str]:
        return frozenset(self._postings)

    def idf(self, term: str) -> float:
        df = self.document_frequency(term)
        return math.log(1 + (len(self._lengths) - df + 0.5) / (df + 0.5))

    def add(self, doc_id: str, tokens: Iterable[str]) -> None:
        """Index a document; one already indexed under ``doc_id`` is replaced."""
        self.remove(doc_id)
        counts = Counter(tokens)
        for term, tf in counts.items():
            self._postings.setdefault(term, {})[doc_id] = tf
        length = sum(counts.values())
        self._lengths[doc_id] = length
        self._terms[doc_id] = tuple(counts)
        self._total_length += length

    def remove(self, doc_id: str) -> bool:
        """Forget a document; False when it was not indexed."""
        length = self._lengths.pop(doc_id, None)
        if length is None:
            return False
        self._total_length -= length
        for term in self._terms.pop(doc_id):
            postings = self._postings[term]
            del postings[doc_id]
            if not postings:
                del self._postings[term]
        return True

    def scores(self, tokens: Iterable[str]) -> dict[str, float]:
        """The score of every document holding at least one of the query's terms."""
        if not self._lengths:
            return {}
        k1, lengths = self.k1, self._lengths
        # k1 * (1 - b + b * len / avglen) = base + per_token * len
        base, per_token = k1 * (1 - self.b), k1 * self.b / self.average_length
        acc: dict[str, float] = {}
        get = acc.get
        for term, qtf in sorted(Counter(tokens).items()):
            postings = self._postings.get(term)
            if not postings:
                continue
            weight = qtf * self.idf(term) * (k1 + 1)
            # The hot loop of a long question (a posting per term and chunk): one
            # expression, the dict method bound once; the same arithmetic, in order.
            for doc_id, tf in postings.items():
                acc[doc_id] = get(doc_id, 0.0) + weight * tf / (
                    tf + base + per_token * lengths[doc_id]
                )
        return acc


def top(scores: Mapping[str, float], limit: int) -> list[tuple[str, float]]:
    """The ``limit`` best (id, score), score descending, then id ascending."""
    return heapq.nsmallest(max(limit, 0), scores.items(), key=lambda item: (-item[1], item[0]))


class SparseIndex:
    """BM25 over the chunks of a repository's files, replaced file by file.

    ``path_weight``: how many times a chunk's path tokens count (at least 1: the
    embedded text's header holds the path once).
    """

    def __init__(
        self,
        *,
        k1: float = 1.2,
        b: float = 0.75,
        path_weight: int = 1,
        tokenizer: Tokenizer = tokenize,
    ) -> None:
        if path_weight < 1:
            raise ValueError("path_weight must be at least 1")
        self._bm25 = BM25(k1=k1, b=b)
        self._tokenize = tokenizer
        self._path_weight = path_weight
        self._chunks_of: dict[str, tuple[str, ...]] = {}
        self._path_of: dict[str, str] = {}

    @property
    def bm25(self) -> BM25:
        """The statistics (read them; change the index through its files)."""
        return self._bm25

    def __len__(self) -> int:
        return len(self._path_of)

    def paths(self) -> frozenset[str]:
        return frozenset(self._chunks_of)

    def add_file(self, path: str, chunks: Iterable[ChunkRecord]) -> None:
        """Index a file's chunks, replacing whatever the file had."""
        chunks = tuple(chunks)
        if any(chunk.path != path for chunk in chunks):
            raise ValueError(f"chunks of another file given for {path}")
        self.remove_file(path)
        path_tokens = self._tokenize(path) * (self._path_weight - 1)
        for chunk in chunks:
            self._bm25.add(chunk.id, [*path_tokens, *self._tokenize(embed_text(chunk))])
            self._path_of[chunk.id] = path
        if chunks:
            self._chunks_of[path] = tuple(chunk.id for chunk in chunks)

    def remove_file(self, path: str) -> bool:
        """Forget a file's chunks; False when it had none indexed."""
        ids = self._chunks_of.pop(path, None)
        if ids is None:
            return False
        for chunk_id in ids:
            self._bm25.remove(chunk_id)
            del self._path_of[chunk_id]
        return True

    def search(
        self, query: str, *, limit: int = 10, path_prefix: str | None = None
    ) -> list[tuple[str, float]]:
        """The best chunks for ``query``: (chunk id, score), best first, ties by id."""
        return top(self._scores(query, path_prefix), limit)

    def rank_files(
        self, query: str, limit: int = 10, *, path_prefix: str | None = None
    ) -> list[tuple[str, float, str]]:
        """Files scored by their best chunk: (path, score, best chunk id), best first,
        ties by path; a file's best chunk ties by id."""
        best: dict[str, tuple[float, str]] = {}
        path_of, get = self._path_of, best.get
        for chunk_id, score in self._scores(query, path_prefix).items():
            path = path_of[chunk_id]
            held = get(path)
            # (-score, id) < (-held score, held id), without building the tuples: this
            # loop visits every chunk scored (thousands for a common word, issue 15).
            if held is None or score > held[0] or (score == held[0] and chunk_id < held[1]):
                best[path] = (score, chunk_id)
        ranked = heapq.nsmallest(
            max(limit, 0), best.items(), key=lambda item: (-item[1][0], item[0])
        )
        return [(path, score, chunk_id) for path, (score, chunk_id) in ranked]

    def _scores(self, query: str, path_prefix: str | None) -> dict[str, float]:
        scores = self._bm25.scores(self._tokenize(query))
        if path_prefix:
            path_of = self._path_of
            scores = {c: s for c, s in scores.items() if path_of[c].startswith(path_prefix)}
        return scores


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
