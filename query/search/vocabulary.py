"""Query expansion learned from the repository's own prose (issue 17).

An issue speaks prose ("the progress bar flickers when resized"); the code that fixes it
speaks identifiers (``refresh``, ``ncols``, ``terminal_width``). The repository says
which go with which: a docstring or comment and the code beside it, in one chunk. Each
chunk gives a set of prose words (its doc and its whole-line comments: ``#``, ``//``,
``/*``, ``*``) and a set of code terms (the code-aware tokens, `tokens.tokenize`, of its
other lines, triple-quoted strings left out).

`expand` reads the question's prose words (lowercased, 3+ letters, no stopwords) and
counts, over the chunks whose prose holds a word ``w``, how often each code term ``t``
comes with it: ``t``'s score is the sum over the question's words of
``c(w, t) / c(w) * log(N / df(t))`` (how often ``w`` predicts ``t``, weighed by how rare
``t`` is among the ``N`` chunks), counting a pair seen in at least `MIN_PAIR` chunks. A
word in more than `MAX_WORD_SHARE` of the chunks' prose predicts nothing in particular
and is skipped; a term the question already has is not an expansion. The `EXPANSIONS`
best terms are the expanded question; `RepoRetrieval` scores the files with BM25 over
them, the ``expansion`` signal (the best file 1), given to the candidates (it adds none).

Counted at question time, over the chunks kept: no pair table is stored (a repository's
prose x code pairs run to millions). Kept only when asked (the evaluation), as the
literals are. Pure.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from query.search.expansion import STOPWORDS as ENGLISH
from stores.text.tokens import STOPWORDS, tokenize

MIN_PAIR = 2
MAX_WORD_SHARE = 0.05
EXPANSIONS = 8
MAX_PROSE_WORDS = 40
MAX_CODE_TERMS = 60
"""Per chunk, the first words and terms kept (bounded memory and question time)."""

_COMMENT = re.compile(r"^\s*(?:#(?=\s|$)|//+|/\*+|\*+(?!/))\s?(.*)$")
_TRIPLE = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'')
_PROSE_WORD = re.compile(r"[a-z]{3,}")
_SKIP = STOPWORDS | ENGLISH


def prose_words(text: str) -> list[str]:
    """The lowercased words of 3+ ASCII letters of ``text``, stopwords left out, once
    each, in order."""
    seen: dict[str, None] = {}
    for word in _PROSE_WORD.findall(text.lower()):
        if word not in _SKIP:
            seen.setdefault(word, None)
    return list(seen)


def split_chunk(doc: str | None, text: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """A chunk's prose words (its doc and whole-line comments) and code terms (the
    code-aware tokens of its other lines, 3+ letters, once each, in order)."""
    prose: list[str] = [doc or ""]
    code: list[str] = []
    for line in _TRIPLE.sub(" ", text).splitlines():
        comment = _COMMENT.match(line)
        if comment:
            prose.append(comment.group(1))
        else:
            code.append(line)
    terms: dict[str, None] = {}
    for token in tokenize("\n".join(code)):
        if len(terms) >= MAX_CODE_TERMS:
            break
        if len(token) >= 3 and token.isalpha():
            terms.setdefault(token, None)
    words = prose_words("\n".join(prose))[:MAX_PROSE_WORDS]
    return frozenset(words), tuple(terms)


class Vocabulary:
    """Each file's chunks as (prose words, code terms), with the document frequencies
    `expand` weighs by."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[tuple[frozenset[str], tuple[str, ...]], ...]] = {}
        self._term_df: Counter[str] = Counter()
        self._word_df: Counter[str] = Counter()
        self._chunks = 0

    def __len__(self) -> int:
        return self._chunks

    def put(self, path: str, chunks: Iterable[tuple[str | None, str]]) -> None:
        """``chunks``: each chunk's (doc, text)."""
        self.remove(path)
        entries = tuple(split_chunk(doc, text) for doc, text in chunks)
        self._files[path] = entries
        for words, terms in entries:
            self._word_df.update(words)
            self._term_df.update(terms)
        self._chunks += len(entries)

    def remove(self, path: str) -> None:
        entries = self._files.pop(path, ())
        for words, terms in entries:
            self._word_df.subtract(words)
            self._term_df.subtract(terms)
        self._chunks -= len(entries)

    def expand(self, question: str) -> list[tuple[str, float]]:
        """The code terms the question's prose predicts, best first (ties by term), each
        with its score over the best's; at most `EXPANSIONS`."""
        total = self._chunks
        if total == 0:
            return []
        asked = set(tokenize(question))
        words = {
            w
            for w in prose_words(question)
            if MIN_PAIR <= self._word_df[w] <= MAX_WORD_SHARE * total
        }
        if not words:
            return []
        pairs: Counter[tuple[str, str]] = Counter()
        for entries in self._files.values():
            for prose, terms in entries:
                hit = words.intersection(prose)
                if not hit:
                    continue
                for word in hit:
                    pairs.update((word, t) for t in terms if t not in asked)
        scores: dict[str, float] = {}
        for (word, term), count in pairs.items():
            if count < MIN_PAIR:
                continue
            idf = math.log(total / self._term_df[term])
            scores[term] = scores.get(term, 0.0) + count / self._word_df[word] * idf
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:EXPANSIONS]
        if not best or best[0][1] <= 0:
            return []
        top = best[0][1]
        return [(term, round(score / top, 6)) for term, score in best if score > 0]


def expansion_signal(
    hits: Sequence[tuple[str, float, str]],
) -> dict[str, dict[str, float]]:
    """The ``expansion`` signal of the files BM25 found for the expanded terms: each
    file's score over the best's."""
    top = hits[0][1] if hits and hits[0][1] > 0 else 0.0
    if top <= 0:
        return {}
    return {path: {"expansion": score / top} for path, score, _ in hits if score > 0}
