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

from query.search import packed_chunks, packed_facts
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
    per_file: int | None = None,
) -> list[RankedFunction]:
    """The ``limit`` best symbols of ``files`` (the file ranking, best first) for
    ``question``, at most ``per_file`` of a file (None: no cap; a pack's map shows a
    file's first few). ``symbols``, ``chunks``: each file's records; ``chunk_scores``:
    chunk id -> BM25 score for the question (absent: 0).

    Read by column (`packed_facts.column`, `packed_chunks.spans`): a pack's map ranks
    every function of its 100 candidate files, ~5,000 on sympy, and a record built for
    each cost ~100 ms a pack; records are built for the functions returned only."""
    weights = weights or FunctionWeights()
    if not files or limit <= 0:
        return []
    read = question_read(question)
    said, frames = mentions(read), framed(read)
    top_file = files[0].score if files[0].score > 0 else 1.0
    # (place, qualname, name, line_start, line_end, file score, text score)
    found: list[tuple[int, str, str, int, int, float, float]] = []
    for place, ranked in enumerate(files):
        held = symbols.get(ranked.path, ())
        kinds = packed_facts.column(held, "kind")
        picked = [i for i, kind in enumerate(kinds) if kind in FUNCTION_KINDS]
        if not picked:
            continue
        qualnames = packed_facts.column(held, "qualname")
        names = packed_facts.column(held, "name")
        starts = packed_facts.column(held, "line_start")
        ends = packed_facts.column(held, "line_end")
        own = [(qualnames[i], starts[i], ends[i]) for i in picked]
        text = _chunk_score_of(own, chunks.get(ranked.path, ()), chunk_scores)
        file_score = ranked.score / top_file
        found.extend(
            (place, qualnames[i], names[i], starts[i], ends[i], file_score, text[qualnames[i]])
            for i in picked
            if qualnames[i] in text
        )
    top_text = max((f[6] for f in found), default=0.0) or 1.0
    bearing: dict[str, int] = {}
    for f in found:
        bearing[f[2]] = bearing.get(f[2], 0) + 1
    base = [posixpath.basename(f.path) for f in files]
    identifiers = said.identifiers

    def signals_of(f: tuple[int, str, str, int, int, float, float]) -> dict[str, float]:
        place, qualname, name = f[0], f[1], f[2]
        signals = {"file": f[5], "text": f[6] / top_text}
        if qualname in identifiers and "." in qualname:
            signals["named"] = 1.0
        elif len(name) >= MIN_SYMBOL_CHARS and name in identifiers:
            signals["named"] = 1.0 / bearing[name]
        if (base[place], name) in frames:
            signals["frame"] = 1.0
        return signals

    scored: list[tuple[float, int, int, str, int, float, dict[str, float]]] = []
    for at, f in enumerate(found):
        signals = signals_of(f)
        score = (
            weights.file * signals["file"]
            + weights.text * signals["text"]
            + weights.named * signals.get("named", 0.0)
            + weights.frame * signals.get("frame", 0.0)
        )
        scored.append((-round(score, 9), f[0], f[3], f[1], at, score, signals))
    scored.sort(key=lambda item: item[:4])
    seen: set[tuple[str, str]] = set()
    taken: dict[str, int] = {}
    ranked_functions: list[RankedFunction] = []
    for _, place, line_start, qualname, at, score, signals in scored:
        path = files[place].path
        if (path, qualname) in seen:  # a repeated qualname (a getter and its setter): once
            continue
        seen.add((path, qualname))
        if per_file is not None:
            if taken.get(path, 0) >= per_file:
                continue
            taken[path] = taken.get(path, 0) + 1
        ranked_functions.append(
            RankedFunction(path, qualname, score, line_start, found[at][4], signals)
        )
        if len(ranked_functions) == limit:
            break
    return ranked_functions


def _chunk_score_of(
    symbols: Sequence[tuple[str, int, int]],
    chunks: Sequence[ChunkRecord],
    scores: Mapping[str, float],
) -> dict[str, float]:
    """qualname -> the BM25 score of its chunk, or of the narrowest symbol chunk that
    holds its lines; a symbol ((qualname, line_start, line_end)) no chunk holds is left
    out."""
    own: dict[str, float] = {}
    spans: list[tuple[int, int, float]] = []
    for chunk_id, kind, qualname, line_start, line_end in packed_chunks.spans(chunks):
        if qualname is None or kind in ("MODULE", "DOC"):
            continue
        score = scores.get(chunk_id, 0.0)
        own[qualname] = max(own.get(qualname, 0.0), score)
        spans.append((line_start, line_end, score))
    found: dict[str, float] = {}
    for qualname, line_start, line_end in symbols:
        if qualname in own:
            found[qualname] = own[qualname]
            continue
        holding = [s for s in spans if s[0] <= line_start and line_end <= s[1]]
        if holding:
            found[qualname] = min(holding, key=lambda s: (s[1] - s[0], s[0]))[2]
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
