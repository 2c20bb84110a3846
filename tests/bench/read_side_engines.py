"""The search engines `read_side_options.py` compares, kept apart from the project's
modules so that a fresh process can open an index and measure its own memory with
nothing else of ours imported (only the code-aware tokenizer).

- `CompactBM25`: `SparseIndex`'s Okapi BM25, postings as numpy arrays (CSR).
- `Fts5BM25`: SQLite FTS5's ``bm25()`` over our tokens, pre-tokenized.
- `TantivyBM25`: tantivy's BM25 over our tokens, pre-tokenized.

Each answers ``rank_files(query, limit)`` like `SparseIndex.rank_files`: files by
their best chunk, (path, score, chunk id), best first.
"""

from __future__ import annotations

import math
import shutil
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stores.text.tokens import tokenize


@dataclass(frozen=True, slots=True)
class Docs:
    """The corpus's chunks in id order, with their tokens and files (paths sorted)."""

    ids: list[str]
    paths: list[str]
    path_of: np.ndarray  # doc -> index into ``paths``
    tokens: list[list[str]]
    chunks: list[Any]  # ChunkRecord: texts for the text stores


class CompactBM25:
    """`SparseIndex`'s scoring over numpy postings: one immutable segment.

    Incremental updates would keep this as the base segment beside a small dict-based
    one for files changed since (and tombstones for their old chunks), merged when the
    small one grows: statistics (N, df, total length) stay exact across both."""

    def __init__(self, docs: Docs, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.paths, self.path_of, self.ids = docs.paths, docs.path_of, docs.ids
        per_term: dict[str, list[tuple[int, int]]] = {}
        lengths = np.zeros(len(docs.tokens), dtype=np.int32)
        for doc, tokens in enumerate(docs.tokens):
            counts = Counter(tokens)
            lengths[doc] = sum(counts.values())
            for term, tf in counts.items():
                per_term.setdefault(term, []).append((doc, tf))
        self.terms = {term: i for i, term in enumerate(sorted(per_term))}
        indptr = np.zeros(len(self.terms) + 1, dtype=np.int64)
        for term, i in self.terms.items():
            indptr[i + 1] = len(per_term[term])
        self.indptr = np.cumsum(indptr)
        flat = [pair for term in sorted(per_term) for pair in per_term[term]]
        self.docs = np.fromiter((d for d, _ in flat), dtype=np.int32, count=len(flat))
        self.tfs = np.fromiter((t for _, t in flat), dtype=np.uint16, count=len(flat))
        self.lengths = lengths
        self.n, self.avg = len(lengths), float(lengths.sum()) / max(len(lengths), 1)

    def scores(self, tokens: list[str]) -> np.ndarray:
        acc = np.zeros(self.n, dtype=np.float64)
        base, per_token = self.k1 * (1 - self.b), self.k1 * self.b / self.avg
        for term, qtf in sorted(Counter(tokens).items()):
            i = self.terms.get(term)
            if i is None:
                continue
            start, end = self.indptr[i], self.indptr[i + 1]
            df = int(end - start)
            idf = math.log(1 + (self.n - df + 0.5) / (df + 0.5))
            weight = qtf * idf * (self.k1 + 1)
            docs, tf = self.docs[start:end], self.tfs[start:end].astype(np.float64)
            acc[docs] += weight * tf / (tf + base + per_token * self.lengths[docs])
        return acc

    def rank_files(
        self, query: str, limit: int = 10, *, path_prefix: str | None = None
    ) -> list[tuple[str, float, str]]:
        acc = self.scores(tokenize(query))
        hit = np.flatnonzero(acc > 0)
        if path_prefix:
            hit = hit[[self.paths[self.path_of[d]].startswith(path_prefix) for d in hit]]
        order = hit[np.lexsort((hit, -acc[hit]))]  # best first, ties by chunk id
        files, first = np.unique(self.path_of[order], return_index=True)
        best = order[first]
        ranked = np.lexsort((files, -acc[best]))[:limit]  # ties by path
        return [(self.paths[files[j]], float(acc[best[j]]), self.ids[best[j]]) for j in ranked]


def fts_query(tokens: list[str]) -> str:
    return " OR ".join(f'"{t}"' for t in tokens)


class Fts5BM25:
    """Files by their best chunk, as FTS5's bm25() ranks the chunks."""

    def __init__(self, db: Path, paths: list[str], ids: list[str]) -> None:
        self.db = sqlite3.connect(db)
        self.paths, self.ids = paths, ids

    def rank_files(
        self, query: str, limit: int = 10, *, path_prefix: str | None = None
    ) -> list[tuple[str, float, str]]:
        tokens = tokenize(query)
        if not tokens:
            return []
        rows = self.db.execute(
            "SELECT path_id, min(rank), rowid FROM fts WHERE fts MATCH ? "
            "GROUP BY path_id ORDER BY 2, path_id LIMIT ?",
            (fts_query(tokens), limit),
        ).fetchall()
        return [(self.paths[p], -score, self.ids[doc]) for p, score, doc in rows]


def build_fts5(docs: Docs, db: Path) -> None:
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(body, path_id UNINDEXED, "
        "tokenize='unicode61 remove_diacritics 0')"
    )
    con.executemany(
        "INSERT INTO fts(rowid, body, path_id) VALUES (?, ?, ?)",
        ((i, " ".join(t), int(docs.path_of[i])) for i, t in enumerate(docs.tokens)),
    )
    con.execute("CREATE TABLE texts(rowid INTEGER PRIMARY KEY, path_id INTEGER, text TEXT)")
    con.executemany(
        "INSERT INTO texts VALUES (?, ?, ?)",
        ((i, int(docs.path_of[i]), c.text) for i, c in enumerate(docs.chunks)),
    )
    con.execute("CREATE INDEX texts_path ON texts(path_id)")
    con.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    con.commit()
    con.close()


class TantivyBM25:
    def __init__(self, where: Path, paths: list[str], ids: list[str]) -> None:
        import tantivy

        self.tantivy = tantivy
        self.index = tantivy.Index.open(str(where))
        self.index.reload()
        self.searcher = self.index.searcher()
        self.schema = self.index.schema
        self.paths, self.ids = paths, ids

    def rank_files(
        self, query: str, limit: int = 10, *, path_prefix: str | None = None
    ) -> list[tuple[str, float, str]]:
        tv = self.tantivy
        counts = Counter(tokenize(query))
        if not counts:
            return []
        clauses = [
            (tv.Occur.Should, tv.Query.boost_query(tv.Query.term_query(self.schema, "body", t), q))
            for t, q in sorted(counts.items())
        ]
        q = tv.Query.boolean_query(clauses)
        best: dict[int, tuple[float, int]] = {}
        wanted = limit * 5
        while True:
            hits = self.searcher.search(q, limit=wanted).hits
            for score, address in hits:
                doc = self.searcher.doc(address)
                chunk, path = doc["doc"][0], doc["path"][0]
                held = best.get(path)
                if held is None or (-score, chunk) < (-held[0], held[1]):
                    best[path] = (score, chunk)
            if len(best) >= limit or len(hits) < wanted:
                break
            best, wanted = {}, wanted * 4
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:limit]
        return [(self.paths[p], s, self.ids[c]) for p, (s, c) in ranked]


def build_tantivy(docs: Docs, where: Path) -> None:
    import tantivy

    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", tokenizer_name="whitespace", index_option="freq")
    builder.add_integer_field("doc", stored=True, fast=True)
    builder.add_integer_field("path", stored=True, fast=True)
    index = tantivy.Index(builder.build(), path=str(where))
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for i, tokens in enumerate(docs.tokens):
        writer.add_document(
            tantivy.Document(body=" ".join(tokens), doc=i, path=int(docs.path_of[i]))
        )
    writer.commit()
    writer.wait_merging_threads()
