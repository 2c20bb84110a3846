"""The numpy-backed BM25 scores, bit for bit, as the former dicts of dicts did.

`tests/sparse_oracle.py` is `query/search/sparse.py` as it was before issue 16 §3 (its
postings term -> {doc: tf}). Seeded histories of adds, removes and re-adds are applied
to the new index, compacting at every step, at times, or never; after every step its
statistics, scores (compared as ``float.hex``), chunk search and file ranking equal a
from-scratch build of the oracle over what remains.
"""

from __future__ import annotations

import math
import random
from array import array

import numpy as np
import pytest

from query.search.sparse import BM25, SparseIndex
from stores.records import ChunkRecord
from tests import sparse_oracle

WORDS = [
    "parse",
    "request",
    "body",
    "user",
    "load",
    "save",
    "cache",
    "query",
    "table",
    "row",
    "sql",
    "token",
    "stream",
    "path",
]
PATHS = ["a/b/users.py", "a/b/query.py", "a/cache.py", "c/sql.py", "c/row.py", "d.py", "a/x.py"]
PREFIXES = [None, "", "a/", "a/b", "c/", "zz"]
# (compact_fraction, compact_min): at every change, now and then, never (in these sizes)
COMPACTION = [(0.0, 0), (0.25, 40), (0.25, 8192)]


def chunk(path: str, n: int, text: str, qualname: str) -> ChunkRecord:
    return ChunkRecord(
        id=f"{path}#{n}",
        path=path,
        kind="FUNCTION",
        qualname=qualname,
        line_start=n + 1,
        line_end=n + 1,
        text=text,
        content_hash=f"{path}#{n}:{text}",
    )


def random_file(rng: random.Random, path: str) -> list[ChunkRecord]:
    # Few words, equal texts and equal qualnames: ties between chunks and files.
    texts = [" ".join(rng.choices(WORDS, k=rng.randrange(1, 7))) for _ in range(3)]
    return [
        chunk(path, n, rng.choice(texts), rng.choice(["f", "g", "load_user"]))
        for n in rng.sample(range(9), rng.randrange(0, 5))
    ]


def random_query(rng: random.Random) -> str:
    words = rng.choices([*WORDS, "users", "nothing", "load_user"], k=rng.randrange(0, 6))
    return " ".join(words)


def hexed(rows: list[tuple]) -> list[tuple]:  # type: ignore[type-arg]
    return [tuple(v.hex() if isinstance(v, float) else v for v in row) for row in rows]


def fresh_oracle(files: dict[str, list[ChunkRecord]]) -> sparse_oracle.SparseIndex:
    oracle = sparse_oracle.SparseIndex()
    for path in sorted(files):
        oracle.add_file(path, files[path])
    return oracle


def assert_same(index: SparseIndex, oracle: sparse_oracle.SparseIndex, rng: random.Random) -> None:
    new, old = index.bm25, oracle.bm25
    assert len(index) == len(oracle) and index.paths() == oracle.paths()
    assert (len(new), new.average_length.hex()) == (len(old), old.average_length.hex())
    assert new.vocabulary() == old.vocabulary()
    for word in [*WORDS, "users", "nothing"]:
        assert new.document_frequency(word) == old.document_frequency(word)
        assert new.idf(word).hex() == old.idf(word).hex()
    for _ in range(4):
        query = random_query(rng)
        tokens = index._tokenize(query)
        got, want = new.scores(tokens), old.scores(tokens)
        assert {k: v.hex() for k, v in got.items()} == {k: v.hex() for k, v in want.items()}
        limit, prefix = rng.choice([0, 1, 3, 10, 50]), rng.choice(PREFIXES)
        assert hexed(index.search(query, limit=limit, path_prefix=prefix)) == hexed(
            oracle.search(query, limit=limit, path_prefix=prefix)
        )
        assert hexed(index.rank_files(query, limit, path_prefix=prefix)) == hexed(
            oracle.rank_files(query, limit, path_prefix=prefix)
        )
    for chunk_id in list(oracle._path_of)[:5]:
        assert index._path_of[chunk_id] == oracle._path_of[chunk_id]


@pytest.mark.parametrize(("fraction", "least"), COMPACTION)
@pytest.mark.parametrize("seed", [16, 3])
def test_any_history_scores_as_a_fresh_build_of_the_dict_index(
    seed: int, fraction: float, least: int
) -> None:
    rng = random.Random(seed)
    index = SparseIndex(compact_fraction=fraction, compact_min=least)
    files: dict[str, list[ChunkRecord]] = {}
    removed: dict[str, list[ChunkRecord]] = {}
    for _ in range(300):
        path, roll = rng.choice(PATHS), rng.random()
        if roll < 0.25:
            assert index.remove_file(path) == (path in files)
            if path in files:
                removed[path] = files.pop(path)
        elif roll < 0.4 and removed:  # a re-add: the same chunks again
            path = rng.choice(sorted(removed))
            index.add_file(path, removed[path])
            files[path] = removed.pop(path)
        else:
            chunks = random_file(rng, path)
            index.add_file(path, chunks)
            files.pop(path, None)
            if chunks:
                files[path] = chunks
        if rng.random() < 0.05:
            index.compact()  # an idle moment's compaction changes no answer
        assert_same(index, fresh_oracle(files), rng)
        pending = index.bm25._live_postings + index.bm25._dead_postings
        assert pending <= max(least, fraction * len(index.bm25._slots))
    assert files  # the history ends with something indexed


def test_bm25_histories_of_documents_score_as_the_dict_bm25() -> None:
    """`BM25` itself (`FileBM25` uses it) under adds and removes of raw tokens, with
    slots and term ids reused after compactions."""
    rng = random.Random(161)
    index = BM25(compact_fraction=0.0, compact_min=3)
    live: dict[str, list[str]] = {}
    for _ in range(300):
        doc_id = f"d{rng.randrange(20)}"
        if rng.random() < 0.35:
            assert index.remove(doc_id) == (doc_id in live)
            live.pop(doc_id, None)
        else:
            live[doc_id] = rng.choices([*WORDS, f"rare{rng.randrange(40)}"], k=rng.randrange(1, 9))
            index.add(doc_id, live[doc_id])
        fresh = sparse_oracle.BM25()
        for key in sorted(live):
            fresh.add(key, live[key])
        assert index.vocabulary() == fresh.vocabulary()
        assert index.average_length.hex() == fresh.average_length.hex()
        query = rng.choices([*WORDS, "rare1", "rare2", "absent"], k=rng.randrange(1, 5))
        got, want = index.scores(query), fresh.scores(query)
        assert {k: v.hex() for k, v in got.items()} == {k: v.hex() for k, v in want.items()}
    assert len(index) == len(live) > 0
    # reuse kept the arrays to the most documents alive at once, not every one added
    assert len(index._ids) <= 20


def test_a_term_frequency_past_uint16_is_kept_whole() -> None:
    index, fresh = BM25(compact_fraction=0.0, compact_min=0), sparse_oracle.BM25()
    for bm25 in (index, fresh):
        bm25.add("big", ["w"] * 70_000 + ["v"])
        bm25.add("small", ["w", "v", "v"])
    assert index._tfs.dtype.itemsize == 4
    got, want = index.scores(["w", "v"]), fresh.scores(["w", "v"])
    assert {k: v.hex() for k, v in got.items()} == {k: v.hex() for k, v in want.items()}
    idf = math.log(1 + 0.5 / 2.5)  # both documents hold w: N = df = 2
    length = (70_001 + 3) / 2
    expected = idf * 70_000 * 2.2 / (70_000 + 1.2 * (0.25 + 0.75 * 70_001 / length))
    assert got["big"] == pytest.approx(expected + fresh.scores(["v"])["big"], rel=1e-12)


def test_a_removed_document_is_a_tombstone_until_the_compaction() -> None:
    index = BM25(compact_fraction=0.0, compact_min=6)
    index.compact()  # nothing to fold
    assert (index.scores(["x"]), index.vocabulary(), index.compactions) == ({}, frozenset(), 1)
    index.add("a", ["x", "y"])
    index.add("b", ["x"])
    assert index.remove("a") and not index.remove("a")
    # pending: 3 live postings + 2 dead, under 6: nothing compacted yet, a is dead
    assert (len(index._slots), index._dead_postings, index.document_frequency("x")) == (0, 2, 1)
    assert index.vocabulary() == {"x"} and index.scores(["y"]) == {}
    index.add("c", ["z", "x"])  # pending 7 > 6: compacted; a's postings are gone
    assert (len(index._slots), index._dead_postings, index._live_postings) == (3, 0, 0)
    assert index._free == [0] and index._names.count(None) == 1  # a's slot, y's id: free
    index.add("d", ["w"])  # the next document takes a's slot
    assert index._free == [] and index._live == {"w": array("i", [0, 1])}
    index.compact()  # a new term gets its id when it leaves the live segment: y's
    assert index._names.count(None) == 0 and index._live == {}
    assert index.scores(["w", "x"]).keys() == {"b", "c", "d"}


@pytest.mark.parametrize(("fraction", "least"), [(0.25, 40), (0.25, 8192), (0.0, 0)])
@pytest.mark.parametrize("seed", [5, 21])
def test_files_added_in_batches_score_as_added_one_by_one(
    seed: int, fraction: float, least: int
) -> None:
    """`SparseIndex.add_files` (a batch to the base in one pass, or file by file when
    small) between single adds and removes: after every step the same answers as a
    fresh build of the dict index; a path twice in a batch counts its last chunks."""
    rng = random.Random(seed)
    index = SparseIndex(compact_fraction=fraction, compact_min=least)
    files: dict[str, list[ChunkRecord]] = {}
    paths = [*PATHS, *(f"e/f{i}.py" for i in range(30))]
    batches = 0
    for _ in range(120):
        roll = rng.random()
        if roll < 0.2:
            path = rng.choice(paths)
            assert index.remove_file(path) == (path in files)
            files.pop(path, None)
        else:
            batch = [(p, random_file(rng, p)) for p in rng.choices(paths, k=rng.randrange(0, 25))]
            compactions = index.bm25.compactions
            index.add_files(batch)
            batches += index.bm25.compactions > compactions
            pending = index.bm25._live_postings + index.bm25._dead_postings
            assert pending <= max(least, fraction * len(index.bm25._slots))
            for path, chunks in batch:
                files.pop(path, None)
                if chunks:
                    files[path] = chunks
        assert_same(index, fresh_oracle(files), rng)
    assert files and batches  # some batch went to the base at once


def test_a_batch_on_an_empty_index_takes_the_slots_of_one_by_one_adds() -> None:
    one_by_one, batched = BM25(compact_min=4), BM25(compact_min=4)
    docs = [("a", ["x", "y", "x"], 0), ("b", ["y", "z"], 1), ("c", ["w"], 1)]
    for doc_id, tokens, group in docs:
        one_by_one.add(doc_id, tokens, group)
    batched.add_many(docs)
    assert batched.compactions == 1 and not batched._live  # past 4 postings: the base
    assert batched._slot_of == one_by_one._slot_of == {"a": 0, "b": 1, "c": 2}
    assert batched.groups(np.arange(3, dtype=np.int32)).tolist() == [0, 1, 1]
    for query in (["x"], ["y", "z"], ["w", "x", "q"]):
        got, want = batched.scores(query), one_by_one.scores(query)
        assert {k: v.hex() for k, v in got.items()} == {k: v.hex() for k, v in want.items()}
    small = BM25(compact_min=100)
    small.add_many(docs)  # under the threshold: the live segment, as adds
    assert small.compactions == 0 and small._live["x"] == array("i", [0, 2])
