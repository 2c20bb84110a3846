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

Its function-level twin (`FunctionPeer`, ``*.peer-bm25-functions.jsonl``) is the field's
function-level BM25 (SweRank, Table 2): one document per function, method or class
(`function_ranking.FUNCTION_KINDS`, as Gazetteer's parser sees them), its path and
qualname once, then its whole body (a nested function is in its parent's body and a
document of its own), code-aware tokens, plain BM25 over every function of every
non-test file the scan read.
"""

from __future__ import annotations

from collections.abc import Iterable

from query.search.function_ranking import FUNCTION_KINDS
from query.search.sparse import FileBM25, top
from stores.projections.ids import is_test_path
from stores.records import SymbolRecord
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


class FunctionPeer:
    """BM25 over function bodies, fed file by file with the file's symbols."""

    name = "bm25-functions"

    def __init__(self) -> None:
        self._index = FileBM25(tokenizer=tokenize)
        self._keys: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        return len(self._index)

    def add(self, path: str, text: str, symbols: Iterable[SymbolRecord]) -> None:
        """Index the functions of one file (a file indexed again is replaced); a test
        file's are left out, as the file rankings leave test files out."""
        for key in self._keys.pop(path, ()):
            self._index.remove(key)
        if is_test_path(path):
            return
        lines = text.split("\n")
        keys = []
        for symbol in symbols:
            if symbol.kind not in FUNCTION_KINDS:
                continue
            key = f"{path}::{symbol.qualname}"
            body = "\n".join(lines[symbol.line_start - 1 : symbol.line_end])
            self._index.add(key, f"{path} {symbol.qualname}\n{body}")
            keys.append(key)
        self._keys[path] = tuple(keys)

    def rank(self, question: str, limit: int) -> list[str]:
        """The ``limit`` best ``path::qualname`` for ``question``, ties by name."""
        scores = self._index.bm25.scores(tokenize(question))
        return [key for key, _ in top(scores, limit)]


def peer_of(name: str) -> WholeFilePeer | None:
    """The peer ``--peer`` names, or None for ``none``; ValueError for another name."""
    if name == "none":
        return None
    if name == "bm25":
        return WholeFilePeer()
    raise ValueError(f"unknown peer {name!r} (one of {', '.join(PEERS)})")
