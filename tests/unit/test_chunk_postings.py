"""Chunks' counted tokens (stores/chunk_postings.py), and a BM25 built from them.

The counts are what the sparse index counts of each chunk; an index that takes them
(`SparseIndex.add_files` with ``counted``) answers bit for bit as one that tokenized the
texts, and as the dict oracle's fresh build (`tests/sparse_oracle.py`), whatever it held
before, whichever files the counts hold, and however it compacts. Bytes that do not
read, and counts of other chunks or by another tokenizer, are never used.
"""

from __future__ import annotations

import dataclasses
import random
from array import array
from collections import Counter

import pytest

from query.search.sparse import SparseIndex
from stores.chunk_postings import (
    CountCache,
    CountedChunks,
    PostingsRejected,
    count,
    decode,
    encode,
    tokenizer_fingerprint,
)
from stores.records import ChunkRecord, FileRecord
from stores.text.chunk_text import embed_text
from stores.text.tokens import tokenize
from tests.unit.test_retrieval_sparse_arrays import (
    COMPACTION,
    PATHS,
    PREFIXES,
    chunk,
    fresh_oracle,
    hexed,
    random_file,
    random_query,
)


def record(path: str, chunks: list[ChunkRecord]) -> FileRecord:
    return FileRecord(
        path=path,
        language="python",
        size=1,
        lines=1,
        content_hash="h",
        skipped=None,
        parse_errors=0,
        chunks=tuple(chunks),
        origin="scan",
        commit=None,
        working_tree=False,
        producer="p",
    )


def test_each_chunks_counts_are_its_tokens_counter_in_first_seen_order() -> None:
    chunks = [
        chunk("a/users.py", 0, "load_user(user) user userName", "load_user"),
        chunk("a/users.py", 1, "", "empty"),
        chunk("b.py", 2, "getUserName parse parse ünïcode 名前", "f"),
    ]
    postings = count(chunks)
    assert len(postings) == 3 and postings.usable
    for k, c in enumerate(chunks):
        start, end = int(postings.starts[k]), int(postings.starts[k + 1])
        got = [
            (postings.vocabulary[t], n)
            for t, n in zip(postings.terms[start:end], postings.tfs[start:end], strict=True)
        ]
        assert got == list(Counter(tokenize(embed_text(c))).items())
    assert len(set(postings.vocabulary)) == len(postings.vocabulary)
    again = decode(encode(postings))
    assert again.vocabulary == postings.vocabulary and again.digest == postings.digest
    assert again.tokenizer == tokenizer_fingerprint()
    for name in ("starts", "terms", "tfs"):
        assert getattr(again, name).tolist() == getattr(postings, name).tolist()
    empty = decode(encode(count([])))
    assert len(empty) == 0 and empty.vocabulary == ()


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: raw[:-1],
        lambda raw: raw + b"\0",
        lambda raw: b"{}\n" + raw[raw.index(b"\n") + 1 :],
        lambda raw: b"not json\n",
        lambda raw: b"",
        lambda raw: raw.replace(b'"terms": ', b'"terms": 9', 1),
    ],
)
def test_bytes_that_do_not_read_are_refused(damage) -> None:  # type: ignore[no-untyped-def]
    raw = encode(count([chunk("a.py", 0, "parse the request body", "f")]))
    with pytest.raises(PostingsRejected):
        decode(damage(raw))


def test_counts_out_of_bounds_are_refused() -> None:
    postings = count([chunk("a.py", 0, "parse request body", "f")])
    for broken in (
        dataclasses.replace(postings, terms=postings.terms + 100),
        dataclasses.replace(postings, tfs=postings.tfs * 0),
        dataclasses.replace(postings, starts=postings.starts[::-1].copy()),
    ):
        with pytest.raises(PostingsRejected):
            decode(encode(broken))


def test_counts_of_other_chunks_or_by_another_tokenizer_are_not_tied_to_the_files() -> None:
    files = [
        record("a.py", [chunk("a.py", 0, "parse request", "f")]),
        record("b.py", []),
        record("c.py", [chunk("c.py", 0, "row", "g"), chunk("c.py", 1, "sql row", "h")]),
    ]
    postings = count([c for f in files for c in f.chunks])
    counted = CountedChunks.of(postings, files)
    assert counted is not None
    assert counted.first == {"a.py": 0, "c.py": 1} and counted.sizes == {"a.py": 1, "c.py": 2}
    edited = [
        *files[:2],
        record("c.py", [chunk("c.py", 0, "row", "g"), chunk("c.py", 1, "x", "h")]),
    ]
    assert CountedChunks.of(postings, edited) is None
    assert CountedChunks.of(postings, files[:1]) is None
    assert CountedChunks.of(dataclasses.replace(postings, tokenizer="0" * 16), files) is None


def _index(compaction: tuple[float, int]) -> SparseIndex:
    fraction, minimum = compaction
    return SparseIndex(compact_fraction=fraction, compact_min=minimum)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("compaction", COMPACTION)
def test_an_index_built_from_counts_answers_as_one_that_tokenized(
    seed: int, compaction: tuple[float, int]
) -> None:
    rng = random.Random(seed)
    held: dict[str, list[ChunkRecord]] = {}
    tokenized, from_counts = _index(compaction), _index(compaction)
    for _ in range(rng.randrange(0, 3)):  # what the index held before the batch
        path = rng.choice(PATHS)
        held[path] = random_file(rng, path)
        for index in (tokenized, from_counts):
            index.add_file(path, held[path])
    batch = {path: random_file(rng, path) for path in rng.sample(PATHS, rng.randrange(1, 7))}
    files = [record(path, batch[path]) for path in sorted(batch)]
    counted_files = [f for f in files if rng.random() < 0.8]  # the rest tokenized
    counted = CountedChunks.of(count([c for f in counted_files for c in f.chunks]), counted_files)
    assert counted is not None
    items = [(f.path, f.chunks) for f in files]
    tokenized.add_files(items)
    from_counts.add_files(items, counted)
    held.update(batch)
    oracle = fresh_oracle({p: c for p, c in held.items() if c})
    assert len(from_counts) == len(tokenized) == len(oracle)
    assert from_counts.paths() == tokenized.paths()
    assert from_counts.bm25.vocabulary() == tokenized.bm25.vocabulary()
    for _ in range(8):
        query = random_query(rng)
        prefix = rng.choice(PREFIXES)
        for index in (from_counts, tokenized):
            assert hexed(index.search(query, limit=7, path_prefix=prefix)) == hexed(
                oracle.search(query, limit=7, path_prefix=prefix)
            )
            assert hexed(index.rank_files(query, 5, path_prefix=prefix)) == hexed(
                oracle.rank_files(query, 5, path_prefix=prefix)
            )
    # and it goes on as any index: a file replaced, one removed
    path = rng.choice(PATHS)
    again = random_file(rng, path)
    for index in (tokenized, from_counts):
        index.add_file(path, again)
        index.remove_file(PATHS[0])
    query = random_query(rng)
    assert hexed(from_counts.rank_files(query, 5)) == hexed(tokenized.rank_files(query, 5))


def test_an_index_of_another_tokenizer_tokenizes_itself() -> None:
    files = [record("a.py", [chunk("a.py", 0, "parse request body", "f")])]
    counted = CountedChunks.of(count(list(files[0].chunks)), files)
    assert counted is not None
    words = SparseIndex(tokenizer=str.split)
    words.add_files([(f.path, f.chunks) for f in files], counted)
    plain = SparseIndex(tokenizer=str.split)
    plain.add_files([(f.path, f.chunks) for f in files])
    assert words.bm25.vocabulary() == plain.bm25.vocabulary() != frozenset(tokenize("a.py f"))


def test_a_count_cache_gives_the_same_counts_and_holds_only_the_last_counts_chunks() -> None:
    rng = random.Random(7)
    before = [c for path in PATHS for c in random_file(rng, path)]
    after = [*before[: len(before) // 2], chunk("z.py", 0, "brand new words", "n")]
    cache = CountCache()
    for chunks in (before, after, after):
        cached, plain = count(chunks, cache), count(chunks)
        assert cached.vocabulary == plain.vocabulary and cached.digest == plain.digest
        for name in ("starts", "terms", "tfs"):
            assert getattr(cached, name).tolist() == getattr(plain, name).tolist()
        assert len(cache) == len({c.content_hash for c in chunks})
    # what it holds is what the next count reads for an unchanged chunk
    kept = after[0]
    cache.replace({kept.content_hash: (("reused",), array("i", [3]).tobytes())})
    assert count([kept], cache).vocabulary == ("reused",)


def test_counts_go_to_free_slots_as_tokens_do() -> None:
    """An index with free slots (documents removed, then compacted) places counted
    documents one by one, in the slots `add_many` would give them."""
    old = [chunk("a.py", n, f"stale words {n}", "f") for n in range(4)]
    new = {p: [chunk(p, n, f"parse {p} row {n}", "g") for n in range(3)] for p in PATHS[:3]}
    files = [record(p, new[p]) for p in sorted(new)]
    counted = CountedChunks.of(count([c for f in files for c in f.chunks]), files)
    assert counted is not None
    indexes = []
    for counts in (None, counted):
        index = _index((0.0, 0))
        index.add_file("a.py", old)
        index.remove_file("a.py")  # compacted at once: four free slots
        index.add_files([(f.path, f.chunks) for f in files], counts)
        indexes.append(index)
    tokenized, from_counts = indexes
    for query in ("parse row", "a/b/users.py row 2", "stale"):
        assert hexed(from_counts.search(query, limit=9)) == hexed(tokenized.search(query, limit=9))
    assert [from_counts.bm25._slot_of[c.id] for f in files for c in f.chunks] == [
        tokenized.bm25._slot_of[c.id] for f in files for c in f.chunks
    ]
