"""Tokens and BM25: exact scores by hand, exact statistics under adds and removes."""

from __future__ import annotations

import math
import random

import pytest

from query.search.sparse import BM25, FileBM25, SparseIndex
from stores.records import ChunkRecord
from stores.text.tokens import tokenize, word_tokens


def chunk(path: str, name: str, text: str, kind: str = "FUNCTION") -> ChunkRecord:
    return ChunkRecord(
        id=f"{path}#{name}",
        path=path,
        kind=kind,
        qualname=name,
        line_start=1,
        line_end=1,
        text=text,
        content_hash=f"{path}#{name}:{text}",
    )


# tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("getUserName", ["getusername", "get", "user", "name"]),
        ("get_user_name", ["getusername", "get", "user", "name"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("XMLHttpRequest2", ["xmlhttprequest2", "xml", "http", "request"]),
        ("__init__ sha256 42", ["init", "sha256", "sha"]),
        ("django/db/models/query.py", ["django", "db", "models", "query", "py"]),
        ("os.path.join(a, b)", ["os", "path", "join"]),
        ("def run(self): return self.x", ["run"]),
        ("The user is not in the list", ["user", "list"]),
        ("const naïveCafé = 名前", ["naïvecafé", "naïve", "café", "名前"]),
    ],
)
def test_code_aware_tokens(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_plain_word_tokens_keep_everything_lowercased() -> None:
    assert word_tokens("def getUserName(self): return 42") == [
        "def",
        "getusername",
        "self",
        "return",
        "42",
    ]


# BM25 by hand


def test_scores_match_a_hand_computation_on_three_documents() -> None:
    """score = sum_t qtf * idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len / avglen)),
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)); here N = 3, avglen = (4 + 2 + 3) / 3 = 3."""
    bm25 = BM25(k1=1.2, b=0.75)
    bm25.add("d1", ["user", "name", "user", "save"])
    bm25.add("d2", ["user", "load"])
    bm25.add("d3", ["save", "file", "path"])
    assert (len(bm25), bm25.average_length, bm25.document_frequency("user")) == (3, 3.0, 2)

    def part(df: int, tf: int, length: int) -> float:
        idf = math.log(1 + (3 - df + 0.5) / (df + 0.5))
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 3))

    scores = bm25.scores(["user", "save", "nothing"])
    assert scores == pytest.approx(
        {
            "d1": part(2, 2, 4) + part(2, 1, 4),
            "d2": part(2, 1, 2),
            "d3": part(2, 1, 3),
        },
        rel=1e-12,
    )
    # hand values: idf(df=2) = ln(1 + 1.5 / 2.5) = ln 1.6 = 0.470004
    assert scores["d2"] == pytest.approx(0.470004 * 2.2 / (1 + 1.2 * 0.75), rel=1e-5)
    # a repeated query term counts once per repetition
    assert bm25.scores(["load", "load"])["d2"] == pytest.approx(2 * part(1, 1, 2))
    assert BM25().scores(["user"]) == {}


def test_adds_and_removes_keep_statistics_equal_to_a_fresh_build() -> None:
    rng = random.Random(7)
    words = [f"w{n}" for n in range(12)]
    index, live = BM25(), dict[str, list[str]]()
    for step in range(400):
        doc_id = f"d{rng.randrange(25)}"
        if rng.random() < 0.35:
            assert index.remove(doc_id) == (doc_id in live)
            live.pop(doc_id, None)
        else:
            tokens = rng.choices(words, k=rng.randrange(0, 9))
            index.add(doc_id, tokens)
            live[doc_id] = tokens
        if step % 40 == 39:
            fresh = BM25()
            for key in sorted(live):
                fresh.add(key, live[key])
            assert (len(index), index.average_length) == (len(fresh), fresh.average_length)
            assert index.vocabulary() == fresh.vocabulary()
            for word in words:
                assert index.document_frequency(word) == fresh.document_frequency(word)
                assert index.scores([word, "w1"]) == fresh.scores([word, "w1"])  # exact


# the chunk index


def corpus() -> SparseIndex:
    index = SparseIndex()
    index.add_file(
        "app/users.py",
        [
            chunk("app/users.py", "load_user", "def load_user(user_id): query user table"),
            chunk("app/users.py", "save_user", "def save_user(user): write user row"),
        ],
    )
    index.add_file(
        "app/files.py", [chunk("app/files.py", "save_file", "def save_file(path): write bytes")]
    )
    index.add_file(
        "lib/cache.py", [chunk("lib/cache.py", "cache_user", "def cache_user(user): memo")]
    )
    return index


def test_search_scores_chunks_with_path_and_qualname_tokens() -> None:
    index = corpus()
    assert len(index) == 4 and index.paths() == {"app/users.py", "app/files.py", "lib/cache.py"}
    hits = index.search("save user", limit=10)
    # 'save' (df 2) outweighs 'user' (df 3); each is twice in its chunk (name and text)
    assert [h[0] for h in hits] == [
        "app/users.py#save_user",
        "app/files.py#save_file",
        "app/users.py#load_user",
        "lib/cache.py#cache_user",
    ]
    assert index.search("save user", limit=2) == hits[:2]
    # 'users' (the path) is a term of both chunks of app/users.py only; the shorter first
    assert [h[0] for h in index.search("users", limit=5)] == [
        "app/users.py#save_user",
        "app/users.py#load_user",
    ]
    assert index.search("nothing here", limit=5) == []


def test_rank_files_by_their_best_chunk() -> None:
    index = corpus()
    ranked = index.rank_files("save user", 10)
    best = dict(index.search("save user", limit=10))
    assert ranked == [
        ("app/users.py", best["app/users.py#save_user"], "app/users.py#save_user"),
        ("app/files.py", best["app/files.py#save_file"], "app/files.py#save_file"),
        ("lib/cache.py", best["lib/cache.py#cache_user"], "lib/cache.py#cache_user"),
    ]
    assert index.rank_files("save user", 1) == ranked[:1]


def test_path_prefix_filters_chunks_and_files() -> None:
    index = corpus()
    assert [h[0] for h in index.search("user", limit=10, path_prefix="lib/")] == [
        "lib/cache.py#cache_user"
    ]
    assert [r[0] for r in index.rank_files("save", 10, path_prefix="app/f")] == ["app/files.py"]


def test_ties_rank_by_id_and_path_whatever_the_insertion_order() -> None:
    index = SparseIndex()
    for path in ("b.py", "a.py", "c.py"):
        index.add_file(path, [chunk(path, "f", "same text"), chunk(path, "g", "same text")])
    assert [h[0] for h in index.search("same", limit=3)] == ["a.py#f", "a.py#g", "b.py#f"]
    assert [(p, c) for p, _, c in index.rank_files("same", 5)] == [
        ("a.py", "a.py#f"),
        ("b.py", "b.py#f"),
        ("c.py", "c.py#f"),
    ]


def test_a_changed_file_replaces_its_chunks_and_a_removed_file_leaves_no_trace() -> None:
    index = corpus()
    index.add_file("app/users.py", [chunk("app/users.py", "drop_user", "def drop_user(): gone")])
    assert [h[0] for h in index.search("load", limit=5)] == []
    assert index.remove_file("lib/cache.py") and not index.remove_file("lib/cache.py")
    fresh = SparseIndex()
    fresh.add_file(
        "app/files.py", [chunk("app/files.py", "save_file", "def save_file(path): write bytes")]
    )
    fresh.add_file("app/users.py", [chunk("app/users.py", "drop_user", "def drop_user(): gone")])
    assert index.bm25.vocabulary() == fresh.bm25.vocabulary()
    assert index.search("user save drop path", limit=9) == fresh.search(
        "user save drop path", limit=9
    )
    index.add_file("app/files.py", [])
    assert index.paths() == {"app/users.py"}
    with pytest.raises(ValueError):
        index.add_file("x.py", [chunk("y.py", "f", "text")])


def test_path_weight_repeats_the_path_tokens() -> None:
    plain, boosted = SparseIndex(), SparseIndex(path_weight=3)
    for index in (plain, boosted):
        index.add_file("orm/query.py", [chunk("orm/query.py", "f", "run sql")])
        index.add_file("orm/other.py", [chunk("orm/other.py", "g", "query builder")])
    # equal tf for 'query' in both chunks unboosted; the path wins when boosted
    assert plain.search("query", limit=1)[0][0] == "orm/other.py#g"
    assert boosted.search("query", limit=1)[0][0] == "orm/query.py#f"


def test_whole_file_baseline_with_either_tokenizer() -> None:
    plain, coded = FileBM25(), FileBM25(tokenizer=tokenize)
    for index in (plain, coded):
        index.add("a.py", "def getUserName(): pass")
        index.add("b.py", "def get_user_name(): pass")
        index.add("c.py", "the name of the user")
    assert [p for p, _ in plain.search("user", limit=5)] == ["c.py"]
    # the shortest document first; a.py and b.py tie, ranked by path
    assert [p for p, _ in coded.search("user", limit=5)] == ["c.py", "a.py", "b.py"]
    assert [p for p, _ in coded.search("user", limit=5, path_prefix="b")] == ["b.py"]
    assert coded.remove("c.py") and len(coded) == 2
