"""Function-level localization: the symbols of the best files ranked by their file's
score, their chunk's BM25 and whether the question names them (query/search/
function_ranking.py); the chunk scores it reads (`SparseIndex.chunk_scores`); the
function-level BM25 peer (deploy/eval_peer.py) and the scorer (deploy/eval_functions.py)."""

from __future__ import annotations

import hashlib

import pytest

from deploy.eval_functions import Gold, score
from deploy.eval_peer import FunctionPeer
from query.search import packed_facts
from query.search.function_ranking import RankedFunction, file_signals, framed, rank_functions
from query.search.packed_chunks import PackedChunks
from query.search.packed_chunks import pack as pack_chunks
from query.search.ranking import RankedFile
from query.search.sparse import SparseIndex
from stores.records import ChunkRecord, SymbolRecord


def symbol(qualname: str, kind: str, start: int, end: int) -> SymbolRecord:
    return SymbolRecord(
        name=qualname.rsplit(".", 1)[-1],
        qualname=qualname,
        kind=kind,  # type: ignore[arg-type]
        line_start=start,
        line_end=end,
        signature=qualname,
    )


def chunk(
    path: str, qualname: str | None, kind: str, start: int, end: int, text: str = ""
) -> ChunkRecord:
    return ChunkRecord(
        id=f"{path}#{qualname or f'module:{start}'}",
        path=path,
        kind=kind,
        qualname=qualname,
        line_start=start,
        line_end=end,
        text=text,
        content_hash=hashlib.sha256(f"{path}:{qualname}:{start}".encode()).hexdigest(),
    )


SYMBOLS = {
    "a.py": [
        symbol("Cart", "CLASS", 1, 20),
        symbol("Cart.total", "METHOD", 3, 8),
        symbol("Cart.total.inner", "FUNCTION", 5, 6),
        symbol("LIMIT", "VARIABLE", 22, 22),
        symbol("helper", "FUNCTION", 24, 26),
    ],
    "b.py": [symbol("parse_total", "FUNCTION", 1, 4), symbol("Orphan", "CLASS", 10, 12)],
}
CHUNKS = {
    "a.py": [
        chunk("a.py", "Cart", "CLASS", 1, 20),
        chunk("a.py", "Cart.total", "METHOD", 3, 8),
        chunk("a.py", None, "MODULE", 21, 22),
        chunk("a.py", "helper", "FUNCTION", 24, 26),
    ],
    "b.py": [chunk("b.py", "parse_total", "FUNCTION", 1, 4)],
}
SCORES = {"a.py#Cart": 1.0, "a.py#Cart.total": 4.0, "a.py#module:21": 9.0, "b.py#parse_total": 2.0}
FILES = [RankedFile("a.py", 2.0, "a.py#Cart.total"), RankedFile("b.py", 1.0, None)]


def test_functions_rank_by_file_score_chunk_score_and_being_named() -> None:
    ranked = rank_functions(
        "Cart.total returns the wrong helper sum", FILES, SYMBOLS, CHUNKS, SCORES
    )
    # Cart.total: file 1 + text 4/4 + named 0.5; its nested inner: its parent's chunk;
    # Cart: text 1/4, named by its name; helper: no text, named; parse_total: file 1/2,
    # text 2/4. The module chunk (9.0) ranks nothing; the variable and the symbol no
    # chunk holds (Orphan) are not candidates.
    assert [(f.key, f.score) for f in ranked] == [
        ("a.py::Cart.total", 2.5),
        ("a.py::Cart.total.inner", 2.0),
        ("a.py::Cart", 1.75),
        ("a.py::helper", 1.5),
        ("b.py::parse_total", 1.0),
    ]
    assert ranked[0].signals == {"file": 1.0, "text": 1.0, "named": 1.0}
    assert (ranked[1].line_start, ranked[1].line_end) == (5, 6)


def test_function_ranking_is_bounded_and_empty_without_files() -> None:
    question = "Cart.total returns the wrong helper sum"
    ranked = rank_functions(question, FILES, SYMBOLS, CHUNKS, SCORES, limit=2)
    assert [f.key for f in ranked] == ["a.py::Cart.total", "a.py::Cart.total.inner"]
    assert rank_functions(question, [], SYMBOLS, CHUNKS, SCORES) == []
    only_b = rank_functions(question, FILES[1:], SYMBOLS, CHUNKS, SCORES)
    assert [(f.key, f.score) for f in only_b] == [("b.py::parse_total", 2.0)]


def test_a_file_gives_at_most_per_file_functions_and_packed_records_rank_the_same() -> None:
    question = "Cart.total returns the wrong helper sum"
    full = rank_functions(question, FILES, SYMBOLS, CHUNKS, SCORES)
    capped = rank_functions(question, FILES, SYMBOLS, CHUNKS, SCORES, per_file=2)
    # a.py's best two, then b.py's: the cap skips a file's rest, not the limit's count
    assert [(f.key, f.score) for f in capped] == [
        ("a.py::Cart.total", 2.5),
        ("a.py::Cart.total.inner", 2.0),
        ("b.py::parse_total", 1.0),
    ]
    assert [
        f.key for f in rank_functions(question, FILES, SYMBOLS, CHUNKS, SCORES, per_file=0)
    ] == []
    # the read side holds records packed by column: the same ranking, signals and lines
    packed_symbols = {p: packed_facts.pack(records) for p, records in SYMBOLS.items()}
    packed = {p: pack_chunks(p, records) for p, records in CHUNKS.items()}
    assert isinstance(packed_symbols["a.py"], packed_facts.PackedFacts)
    assert isinstance(packed["a.py"], PackedChunks)
    assert rank_functions(question, FILES, packed_symbols, packed, SCORES) == full


def test_chunk_scores_are_the_search_scores_of_the_chunks_of_the_files_asked() -> None:
    index = SparseIndex()
    index.add_file(
        "a.py",
        [
            chunk("a.py", "total", "FUNCTION", 1, 2, "def total(items): return sum(items)"),
            chunk("a.py", "empty", "FUNCTION", 3, 4, "def empty(): return []"),
        ],
    )
    index.add_file("b.py", [chunk("b.py", "total", "FUNCTION", 1, 2, "total = 0")])
    everything = dict(index.search("total sum", limit=10))
    assert set(everything) == {"a.py#total", "b.py#total"}
    assert index.chunk_scores("total sum", ["a.py"]) == {"a.py#total": everything["a.py#total"]}
    assert index.chunk_scores("total sum", ["b.py", "c.py"]) == {
        "b.py#total": everything["b.py#total"]
    }
    assert index.chunk_scores("total sum", []) == {}
    assert index.chunk_scores("nothing", ["a.py"]) == {}


def test_the_function_peer_ranks_function_bodies_by_bm25() -> None:
    peer = FunctionPeer()
    text = (
        "class Cart:\n"
        '    """A cart of the goods a customer keeps in the basket of the shop."""\n'
        "    def total(self):\n"
        "        return sum(self.items)\n"
        "\n"
        "def helper():\n"
        "    return 3\n"
    )
    symbols = [
        symbol("Cart", "CLASS", 1, 4),
        symbol("Cart.total", "METHOD", 3, 4),
        symbol("helper", "FUNCTION", 6, 7),
        symbol("LIMIT", "VARIABLE", 9, 9),
    ]
    peer.add("shop/cart.py", text, symbols)
    peer.add("tests/test_cart.py", text, symbols)  # a test file's functions: left out
    assert len(peer) == 3
    assert peer.rank("the sum of the items", 10) == [
        "shop/cart.py::Cart.total",
        "shop/cart.py::Cart",
    ]
    assert peer.rank("helper", 10) == ["shop/cart.py::helper"]
    peer.add("shop/cart.py", "def other():\n    pass\n", [symbol("other", "FUNCTION", 1, 2)])
    assert len(peer) == 1
    assert peer.rank("sum items", 10) == []


def test_an_instance_counts_when_all_its_gold_functions_are_in_the_top_k() -> None:
    golds = [
        Gold("a", "Go", frozenset({"x.go::F", "x.go::G"})),
        Gold("b", "Go", frozenset({"y.go::H"})),
        Gold("c", "Rust", frozenset()),  # only module-level changes: not scored
        Gold("d", "Rust", frozenset({"z.rs::f"})),
    ]
    predicted = {
        "a": ["x.go::F", "x.go::Q", "x.go::R", "x.go::S", "x.go::T", "x.go::G"],
        "b": ["y.go::H"],
        "c": ["z.rs::f"],
    }  # "d" has no prediction: a miss
    rows = score(golds, predicted)
    assert rows["Go"] == {
        "instances": 2,
        "scored": 2,
        "Acc@1": 50.0,
        "Acc@5": 50.0,
        "Acc@10": 100.0,
        "Recall@1": 75.0,
        "Recall@5": 75.0,
        "Recall@10": 100.0,
        "MRR": 100.0,
    }
    assert rows["Rust"]["scored"] == 1 and rows["Rust"]["Acc@10"] == 0.0
    assert rows["all"]["scored"] == 3
    assert rows["all"]["Acc@10"] == pytest.approx(66.67)
    assert list(rows) == ["Go", "Rust", "all"]


TRACE = """Traceback (most recent call last):
  File "/venv/site-packages/shop/b.py", line 3, in parse_total
    return total(x)
  File "/venv/site-packages/shop/a.py", line 25, in <module>
    at com.acme.shop.Cart.checkout(Cart.java:42)
    at Object.helper (lib/util.js:3:1)
src/shop/c.py:12: in collect
"""


def test_frames_are_read_as_file_names_and_function_names() -> None:
    assert framed(TRACE) == {
        ("b.py", "parse_total"),
        ("a.py", "<module>"),
        ("Cart.java", "checkout"),
        ("util.js", "helper"),
        ("c.py", "collect"),
    }


def test_a_function_in_a_frame_of_the_question_is_lifted() -> None:
    ranked = rank_functions(TRACE, FILES, SYMBOLS, CHUNKS, {"b.py#parse_total": 2.0})
    # parse_total: file 1/2, text 1, named ("in parse_total"), frame 0.5; the best
    # file's named functions ("Cart.checkout", "total(x)", "Object.helper") tie, in
    # line order
    assert [(f.key, f.score) for f in ranked] == [
        ("b.py::parse_total", 2.5),
        ("a.py::Cart", 1.5),
        ("a.py::Cart.total", 1.5),
        ("a.py::helper", 1.5),
        ("a.py::Cart.total.inner", 1.0),
    ]
    assert ranked[0].signals == {"file": 0.5, "text": 1.0, "named": 1.0, "frame": 1.0}
    assert [f.key for f in ranked if "frame" in f.signals] == ["b.py::parse_total"]


def ranked_function(path: str, qualname: str, **signals: float) -> RankedFunction:
    return RankedFunction(path, qualname, 0.0, 1, 2, dict(signals))


def test_file_signals_are_the_best_function_and_the_count_of_strong_ones() -> None:
    functions = [
        ranked_function("a.py", "f", file=1.0, text=0.4, named=1.0),  # own 0.4 + 0.5 = 0.9
        ranked_function("a.py", "g", file=1.0, text=0.6),
        ranked_function("b.py", "h", file=0.5, text=1.0, frame=1.0),  # own 1.5: the best
        ranked_function("b.py", "i", file=0.5, text=0.5),
        ranked_function("b.py", "j", file=0.5, text=0.7),
        ranked_function("c.py", "k", file=0.2, text=0.0),
    ]
    # the `file` term is left out (it is the file ranking itself); c.py scores 0: nothing
    assert file_signals(functions) == {
        "a.py": {"function_best": 0.6, "function_count": round(1 / 3, 6)},
        "b.py": {"function_best": 1.0, "function_count": 1.0},
    }


def test_file_signals_of_no_function_are_none() -> None:
    assert file_signals([]) == {}
    assert file_signals([ranked_function("a.py", "f", file=1.0, text=0.0)]) == {}
