"""Ranking functions for a question: the symbols of the files ranked first (issue 17).

A file is where a fix lands; a function is what an agent reads first. The file ranking
(`ranking.rank`) comes first and is not changed; the functions, methods and classes
(`DEFINING_KINDS`) of its ``files`` best files are then scored with three signals in
[0, 1]:

- ``file``: their file's score over the first file's (a function of the best file
  starts ahead);
- ``text``: the BM25 score of the symbol's chunk (`SparseIndex.chunk_scores`: its
  ``path qualname`` header, doc and text) over the best candidate chunk's; a symbol
  without a chunk of its own (a function nested in a function, a member of an
  interface) has the score of the chunk that holds its lines;
- ``named``: the question names it, by its qualname (``Session.resolve_redirects``) or
  by its name (at least `MIN_SYMBOL_CHARS` long), over how many candidates bear that
  name;
- ``frame``: a stack trace quoted in the question has a frame in it: its file's name
  and its own name (Python's ``File "x/y.py", line 3, in name``, IPython's and pytest's
  frames; Java's ``at a.b.Class.name(Class.java:3)``; JavaScript's ``at Cls.name
  (x/y.js:3:5)``).

The score is the weighted sum (`FunctionWeights`); ties by file rank, then line, then
qualname. Pure: records and scores in, a bounded list out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from query.search.ranking import MIN_SYMBOL_CHARS, RankedFile, mentions, question_read
from stores.records import ChunkRecord, SymbolRecord

FUNCTION_KINDS = frozenset(
    {"CLASS", "FUNCTION", "METHOD", "INTERFACE", "STRUCT", "ENUM", "TRAIT", "TYPE"}
)
"""What is ranked: the kinds `query.retrieval.DEFINING_KINDS` counts as definitions."""


@dataclass(frozen=True, slots=True)
class FunctionWeights:
    """How the signals weigh: set before anything was measured, not tuned on any split
    (docs/RETRIEVAL_MULTILANG.md, "Function-level localization", says what re-weighing
    on the Python splits did and why it was not adopted)."""

    file: float = 1.0
    text: float = 1.0
    named: float = 0.5
    frame: float = 0.5


_FRAMES = re.compile(
    r'File "(?P<py>[^"\n]+)", line \d+, in (?P<py_name>[\w<>]+)'
    r"|File (?P<ipy>[~\w./\\-]+\.py):\d+, in (?P<ipy_name>\w+)"
    r"|^(?P<pt>[\w./\\-]+\.py):\d+: in (?P<pt_name>\w+)"
    r"|^\s*at [\w$.]*?(?P<java_name>[\w$<>]+)\((?P<java>[\w$]+\.java):\d+\)"
    r"|^\s*at (?:new )?(?:[\w$.<>]*\.)?(?P<js_name>[\w$]+) \((?:file://)?(?P<js>[\w./\\@~-]+\.\w+):\d+",
    re.M,
)


def framed(question: str) -> frozenset[tuple[str, str]]:
    """(file name, function name) of every frame of the stack traces in ``question``."""
    found = set()
    for match in _FRAMES.finditer(question):
        groups = {k: v for k, v in match.groupdict().items() if v}
        names = [v for k, v in groups.items() if k.endswith("_name")]
        files = [v for k, v in groups.items() if not k.endswith("_name")]
        if names and files:
            found.add((posixpath.basename(files[0].replace("\\", "/")), names[0]))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class RankedFunction:
    path: str
    qualname: str
    score: float
    line_start: int
    line_end: int
    signals: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``path::qualname``, as the benchmark names functions."""
        return f"{self.path}::{self.qualname}"


def rank_functions(
    question: str,
    files: Sequence[RankedFile],
    symbols: Mapping[str, Sequence[SymbolRecord]],
    chunks: Mapping[str, Sequence[ChunkRecord]],
    chunk_scores: Mapping[str, float],
    *,
    weights: FunctionWeights | None = None,
    limit: int = 10,
) -> list[RankedFunction]:
    """The ``limit`` best symbols of ``files`` (the file ranking, best first) for
    ``question``. ``symbols``, ``chunks``: each file's records; ``chunk_scores``: chunk
    id -> BM25 score for the question (absent: 0)."""
    weights = weights or FunctionWeights()
    if not files or limit <= 0:
        return []
    read = question_read(question)
    said, frames = mentions(read), framed(read)
    top_file = files[0].score if files[0].score > 0 else 1.0
    found: list[tuple[int, SymbolRecord, float, float]] = []
    for place, ranked in enumerate(files):
        own = [s for s in symbols.get(ranked.path, ()) if s.kind in FUNCTION_KINDS]
        text = _chunk_score_of(own, chunks.get(ranked.path, ()), chunk_scores)
        found.extend(
            (place, s, ranked.score / top_file, text[s.qualname]) for s in own if s.qualname in text
        )
    top_text = max((t for *_, t in found), default=0.0) or 1.0
    bearing: dict[str, int] = {}
    for _, symbol, _, _ in found:
        bearing[symbol.name] = bearing.get(symbol.name, 0) + 1
    scored: list[tuple[float, int, RankedFunction]] = []
    for place, symbol, file_score, text_score in found:
        signals = {"file": file_score, "text": text_score / top_text}
        if symbol.qualname in said.identifiers and "." in symbol.qualname:
            signals["named"] = 1.0
        elif len(symbol.name) >= MIN_SYMBOL_CHARS and symbol.name in said.identifiers:
            signals["named"] = 1.0 / bearing[symbol.name]
        path = files[place].path
        if (posixpath.basename(path), symbol.name) in frames:
            signals["frame"] = 1.0
        score = (
            weights.file * signals["file"]
            + weights.text * signals["text"]
            + weights.named * signals.get("named", 0.0)
            + weights.frame * signals.get("frame", 0.0)
        )
        function = RankedFunction(
            path, symbol.qualname, score, symbol.line_start, symbol.line_end, signals
        )
        scored.append((score, place, function))
    scored.sort(
        key=lambda item: (-round(item[0], 9), item[1], item[2].line_start, item[2].qualname)
    )
    seen: set[str] = set()
    ranked_functions: list[RankedFunction] = []
    for _, _, function in scored:
        if function.key in seen:  # a repeated qualname (a getter and its setter): once
            continue
        seen.add(function.key)
        ranked_functions.append(function)
        if len(ranked_functions) == limit:
            break
    return ranked_functions


def _chunk_score_of(
    symbols: Sequence[SymbolRecord], chunks: Sequence[ChunkRecord], scores: Mapping[str, float]
) -> dict[str, float]:
    """qualname -> the BM25 score of its chunk, or of the narrowest symbol chunk that
    holds its lines; a symbol no chunk holds is left out."""
    own: dict[str, float] = {}
    spans: list[tuple[int, int, float]] = []
    for chunk in chunks:
        if chunk.qualname is None or chunk.kind in ("MODULE", "DOC"):
            continue
        score = scores.get(chunk.id, 0.0)
        own[chunk.qualname] = max(own.get(chunk.qualname, 0.0), score)
        spans.append((chunk.line_start, chunk.line_end, score))
    found: dict[str, float] = {}
    for symbol in symbols:
        if symbol.qualname in own:
            found[symbol.qualname] = own[symbol.qualname]
            continue
        holding = [s for s in spans if s[0] <= symbol.line_start and symbol.line_end <= s[1]]
        if holding:
            found[symbol.qualname] = min(holding, key=lambda s: (s[1] - s[0], s[0]))[2]
    return found


STRONG_TEXT = 0.5
"""A function "matches strongly" when its chunk scores at least this over the best's."""


def file_signals(
    functions: Sequence[RankedFunction], weights: FunctionWeights | None = None
) -> dict[str, dict[str, float]]:
    """What the ranked functions say of their files, as two file signals (issue 17's
    "function-level scores feeding the file ranking"):

    - ``function_best``: the file's best function by its own evidence (``text`` +
      ``named`` and ``frame`` at their weights; the ``file`` term, which is the file
      ranking itself, left out) over the best function's of any file;
    - ``function_count``: how many of its functions match strongly (``text`` at least
      `STRONG_TEXT`), over the most any file has.

    Files without a ranked function get neither."""
    weights = weights or FunctionWeights()
    best: dict[str, float] = {}
    strong: dict[str, int] = {}
    for function in functions:
        own = function.signals
        score = (
            weights.text * own.get("text", 0.0)
            + weights.named * own.get("named", 0.0)
            + weights.frame * own.get("frame", 0.0)
        )
        best[function.path] = max(best.get(function.path, 0.0), score)
        if own.get("text", 0.0) >= STRONG_TEXT:
            strong[function.path] = strong.get(function.path, 0) + 1
    top_best = max(best.values(), default=0.0)
    top_strong = max(strong.values(), default=0)
    found: dict[str, dict[str, float]] = {}
    for path in sorted(best):
        said: dict[str, float] = {}
        if top_best > 0 and best[path] > 0:
            said["function_best"] = round(best[path] / top_best, 6)
        if top_strong and path in strong:
            said["function_count"] = round(strong[path] / top_strong, 6)
        if said:
            found[path] = said
    return found
