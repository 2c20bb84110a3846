"""The same-run peer of ``gazetteer eval localize``: a plain whole-file BM25.

A number for Gazetteer's ranking means little alone: the benchmark's README asks for a
baseline computed in the same run, over the same files. The peer is the one the field
publishes (SweRank, arXiv 2505.07849, Table 1, "BM25 (whole files)"): one document per
file, its path once and its text, tokenized code-aware (`stores.text.tokens.tokenize`:
identifiers split on case and separators, so ``JsonParser`` meets "json parser" in an
issue), no graph, no chunks, no tuned weight. It sees every file the scan read (the
files Gazetteer indexes) and ranks them by BM25 alone; test files are left out of its
ranking by the same rule as Gazetteer's (`eval_localize` filters both).

``--peer none`` skips it; ``--peer bm25`` (the default) writes ``*.peer-bm25.jsonl``
beside the predictions, in the format ``score.py`` reads.
"""

from __future__ import annotations

from query.search.sparse import FileBM25
from stores.text.tokens import tokenize

PEERS = ("bm25", "none")
"""The peers ``--peer`` accepts: ``bm25`` (whole-file BM25, code-aware) or ``none``."""

PATH_WEIGHT = 1
"""The path's tokens count once, as the first line a reader of the file sees."""


class WholeFilePeer:
    """Whole-file BM25 over code-aware tokens, fed file by file as the scan reads them."""

    name = "bm25"

    def __init__(self) -> None:
        self._index = FileBM25(path_weight=PATH_WEIGHT, tokenizer=tokenize)

    def __len__(self) -> int:
        return len(self._index)

    def add(self, path: str, text: str) -> None:
        """Index one file's text (a path indexed again is replaced)."""
        self._index.add(path, text)

    def rank(self, question: str, limit: int) -> list[str]:
        """The ``limit`` best files for ``question``: BM25 descending, ties by path."""
        return [path for path, _ in self._index.search(question, limit=limit)]


def peer_of(name: str) -> WholeFilePeer | None:
    """The peer ``--peer`` names, or None for ``none``; ValueError for another name."""
    if name == "none":
        return None
    if name == "bm25":
        return WholeFilePeer()
    raise ValueError(f"unknown peer {name!r} (one of {', '.join(PEERS)})")
