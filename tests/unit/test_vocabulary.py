"""Query expansion from the repository's own prose (query/search/vocabulary.py): a
chunk's prose words and code terms, the terms a question's prose predicts, and the
``expansion`` signal as `RepoRetrieval` gives it."""

from __future__ import annotations

import math

from processors.indexer import RepoIndex
from query.retrieval import RepoRetrieval
from query.search.vocabulary import Vocabulary, expansion_signal, prose_words, split_chunk
from tests.factories import Stamp


def test_prose_words_are_lowercased_once_each_without_stopwords() -> None:
    assert prose_words("The Progress bar; the BAR flickers, ok?") == ["progress", "bar", "flickers"]


def test_a_chunk_splits_into_its_doc_and_comments_and_the_terms_of_its_code() -> None:
    text = (
        "def refresh(bar):\n"
        '    """Redraw the bar."""\n'
        "    # when the terminal is resized\n"
        "    return bar.ncols_total\n"
    )
    words, terms = split_chunk("Redraw the progress bar.", text)
    assert words == frozenset({"redraw", "progress", "bar", "terminal", "resized"})
    assert terms == ("refresh", "bar", "ncolstotal", "ncols", "total")


def test_comment_markers_of_every_language_but_not_rust_attributes() -> None:
    text = "// go and rust\n/* block */\n * star\n#[cfg(test)]\nlet widget = 1;\n"
    words, terms = split_chunk(None, text)
    assert words == frozenset({"rust", "block", "star"})
    assert terms == ("cfg", "test", "widget")


def vocabulary() -> Vocabulary:
    found = Vocabulary()
    found.put("bar.py", [("Redraw the progress bar.", "def refresh(): ncols()")] * 2)
    found.put("bar2.py", [("progress of the bar", "def tick(): ncols()")])
    for n in range(80):  # filler: the words above stay rare (at most 5% of chunks)
        found.put(f"other{n}.py", [(f"other thing {n}", f"def other{n}(): pass")])
    return found


def test_expand_weighs_how_often_a_word_predicts_a_term_by_the_term_s_rarity() -> None:
    found = vocabulary()
    total = 83
    # "progress" and "bar" are each in 3 chunks' prose; ncols in 3 chunks, refresh in 2;
    # tick is seen with them once (below MIN_PAIR), redraw once in a question word: not one
    ncols = 2 * (3 / 3) * math.log(total / 3)
    refresh = 2 * (2 / 3) * math.log(total / 2)
    assert found.expand("the progress bar is wrong") == [
        ("ncols", 1.0),
        ("refresh", round(refresh / ncols, 6)),
    ]
    # a term the question has is no expansion
    assert found.expand("refresh the progress bar") == [("ncols", 1.0)]
    assert found.expand("nothing known here") == []


def test_a_word_in_too_many_chunks_predicts_nothing() -> None:
    found = vocabulary()
    assert found.expand("other") == []  # in 80 of 83 chunks' prose


def test_removing_a_file_forgets_its_chunks() -> None:
    found = vocabulary()
    found.remove("bar.py")
    found.remove("bar.py")  # twice: a no-op
    assert len(found) == 81
    assert found.expand("progress bar") == []  # one chunk left with them: below MIN_PAIR


def test_expansion_signal_is_each_file_s_score_over_the_best() -> None:
    hits = [("a.py", 4.0, "a.py#f"), ("b.py", 1.0, "b.py#g"), ("c.py", 0.0, "c.py#h")]
    assert expansion_signal(hits) == {"a.py": {"expansion": 1.0}, "b.py": {"expansion": 0.25}}
    assert expansion_signal([]) == {}


BAR = '''
def refresh(bar):
    """Redraw the progress bar."""
    return bar.ncols()


def redraw(bar):
    """Redraw the progress bar again."""
    return bar.ncols() + 1
'''
WIDTH = """
def ncols():
    # wrong on some terminals
    return 80
"""


def retrieval_of(files: dict[str, str], *, vocabulary: bool) -> RepoRetrieval:
    found, index, stamp = RepoRetrieval(vocabulary=vocabulary), RepoIndex("app-1"), Stamp()
    found.apply(stamp.claimed(index))
    for path, text in files.items():
        delta = index.handle(stamp.changed(path, text), now=1.0)
        assert delta is not None
        found.apply(delta)
    return found


FILES = {"app/bar.py": BAR, "app/width.py": WIDTH} | {
    f"app/other{n}.py": f'def other{n}():\n    """Other thing."""\n    return {n}\n'
    for n in range(40)
}


def test_asked_the_retrieval_gives_the_expansion_signal_to_its_candidates() -> None:
    found = retrieval_of(FILES, vocabulary=True)
    assert found.vocabulary is not None
    assert found.vocabulary.expand("the progress bar is wrong") == [("ncols", 1.0)]
    ranked = {r.path: r.signals for r in found.search("the progress bar is wrong", limit=50)}
    # width.py is a candidate by "wrong"; the expansion to ncols finds it and bar.py
    assert ranked["app/width.py"]["expansion"] == 1.0
    # (BM25 over "ncols": width.py's short chunk defines it, bar.py's call it)
    assert round(ranked["app/bar.py"]["expansion"], 6) == 0.659686
    assert all("expansion" not in s for p, s in ranked.items() if "other" in p)


def test_by_default_the_retrieval_keeps_no_vocabulary() -> None:
    found = retrieval_of(FILES, vocabulary=False)
    assert found.vocabulary is None
    ranked = {r.path: r.signals for r in found.search("the progress bar is wrong", limit=50)}
    assert all("expansion" not in s for s in ranked.values())
