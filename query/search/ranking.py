"""Ranking files for a question: BM25 over chunks re-ranked by what the question names.

An issue or a question names things: a file (``requests/sessions.py``), a module
(``requests.sessions``), a class or function (``Session.resolve_redirects``), a file's
stem (``sessions``). Each file gets signals in [0, 1]:

- ``text``: how well its text matches: its best chunk's BM25 score over the best
  file's (``bm25`` beside it);
- ``dense_rrf``: once the repository has vectors, the file's reciprocal rank in the
  dense (cosine) ranking over the first place's, 1/(60 + rank) (``dense``: the cosine);
- ``path``: the question contains the file's path or its dotted module path;
- ``symbol``: identifiers of the question the file defines (classes, functions,
  methods), each weighed by how rare the name is (1 / files defining it), capped at 1;
- ``filename``: the file's stem appears in the question as a word;
- ``structural``: its importance (PageRank and keyword centrality), when known;
- ``frame``: it is the innermost frame of a stack trace quoted in the question that
  lies in the repository's own code (Python's tracebacks, IPython's and pytest's
  reports; ``at ...(file:line)`` frames of JavaScript, Java and Rust; Go's): where it
  broke is where a fix most often lands (on the benchmark's development splits the
  innermost own frame was the fixed file in 8 of the 11 instances whose frames name
  a repository file);
- ``source``: it is source code, not documentation, an example under ``doc/``,
  ``docs/`` or ``examples/``, or third-party code vendored into the repository
  (``vendor/``, ``_vendor/``, ``third_party/``, ``node_modules/``, a ``packages/``
  inside a package): prose matches prose, but the answer to "where" is the project's
  own code (on the benchmark's development split, documents and example snippets took
  the top places of 7 of the 22 misses);
- ``session``: the agent's session touched it recently (1 for the latest, fading);
- ``imports`` and ``graph``: how close it sits to the files the question names (a
  path, a frame, a rare name: named at 0.5 or more): linked to them by a file-level
  import or reference, either way, and in the same neighborhood; each the sum of those
  named files' evidence over 3, capped at 1. Both weigh 0 by default: on the
  benchmark's development splits every weight tried cost Verified's MRR (0.1 on
  ``imports``: 75.9 -> 74.7; 0.1 on ``graph``: 75.9 -> 75.8, and Lite's Acc@3 2.8
  points): the fixed file is far more often the named file itself than a neighbor of
  it. They are there for `gazetteer eval tune` on a deployment's own history;
- ``literal``, ``literal_quoted``, ``literal_error``: it holds string literals whose
  fixed words the question (all of it; what it quotes; its error lines) has in order
  (an error message, a log line: `query.search.literals`), each weighed by its length
  and by how few files hold it, capped at 1. Computed for the candidates BM25 and the
  names found (they add none), weight 0 by default (docs/RETRIEVAL_MULTILANG.md);
- ``history`` and ``fixes``: the repository's past commits whose messages match the
  question changed it; fixes changed it often (`query.search.history`). Computed by
  `gazetteer eval history` only (no history reaches the read side): weight 0;
- ``function_best`` and ``function_count``: what the function ranking of the 20 best
  files says of each (`function_ranking.file_signals`); ``expansion``: BM25 over the code
  terms the repository's own docstrings and comments predict for the question's prose
  (`query.search.vocabulary`). Computed by `gazetteer eval localize` only, weight 0:
  held out by repository neither helped on every split (docs/RETRIEVAL_MULTILANG.md).

The score is the weighted sum (`RankWeights`, tunable). Without a profile of its own a
Python file is weighed by `RankWeights()` and any other file by `OFF_PYTHON` (learned on
the pooled development splits, docs/RETRIEVAL_MULTILANG.md); a profile, once set, weighs
every file. Files that the question names are candidates even when BM25 does not
retrieve them.
"""

from __future__ import annotations

import functools
import math
import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field

from query.search.frames import innermost_frames
from query.search.sparse import SparseIndex

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
# A path as written: a run of path characters ending in an extension. The lookbehind
# starts a match only where a run starts: without it, an unbroken run with no
# extension (``a`` * 50,000, ``a/`` * 25,000) was tried from each of its characters,
# quadratic (5.8 s for 50 KB, issue 15); the matches are the same.
_PATHLIKE = re.compile(r"(?<![\w./-])[\w./-]+\.\w+")
_TRAILING_WORD = re.compile(r"\w+$")
MIN_SYMBOL_CHARS = 4

MAX_QUESTION_CHARS = 20_000
"""What the ranking reads of a question: its first 20,000 characters (about 5,000
tokens: an issue with its traceback fits). Past that a question costs time (BM25 walks
the postings of every distinct term) and adds little; answers say when the question
was cut (issue 15)."""


def question_read(question: str, limit: int = MAX_QUESTION_CHARS) -> str:
    """The part of ``question`` the ranking reads: its first ``limit`` characters, less
    a word cut in half (unless that word is all there is)."""
    if len(question) <= limit:
        return question
    read = question[:limit]
    if question[limit].isalnum() or question[limit] == "_":
        read = _TRAILING_WORD.sub("", read) or read
    return read


@dataclass(frozen=True, slots=True)
class RankWeights:
    """The weight of each signal in a file's score. ``structural`` and ``source`` are
    where `gazetteer eval tune` put them on both of the benchmark's development splits,
    in the 10 folds held out by repository (source 0.6 in 9, 0.8 in one; structural 0.4
    in 6, 0.3-0.6 in 9; 0.1 and 0.15 before); ``frame`` 0.3-0.4 in every fold."""

    text: float = 1.0
    path: float = 0.8
    symbol: float = 0.6
    filename: float = 0.15
    structural: float = 0.4
    frame: float = 0.3
    source: float = 0.6
    session: float = 0.2
    dense_rrf: float = 0.3
    imports: float = 0.0
    graph: float = 0.0
    literal: float = 0.0
    literal_quoted: float = 0.0
    literal_error: float = 0.0
    history: float = 0.0
    fixes: float = 0.0
    function_best: float = 0.0
    function_count: float = 0.0
    expansion: float = 0.0

    @property
    def uses_proximity(self) -> bool:
        return self.imports > 0 or self.graph > 0

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in SCORED}

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> RankWeights:
        """Weights by name (those not given keep their defaults); an unknown name or a
        value that is not a finite number >= 0 is refused."""
        unknown = sorted(set(values) - set(SCORED))
        if unknown:
            raise ValueError(f"unknown ranking weights {unknown}; known: {list(SCORED)}")
        parsed: dict[str, float] = {}
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"weight {name!r} is not a number: {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"weight {name!r} must be a finite number >= 0, not {value}")
            parsed[name] = float(value)
        return cls(**parsed)


OFF_PYTHON = RankWeights(
    symbol=0.15, structural=0.2, frame=0.1, source=1.0, imports=0.15, graph=0.05
)
"""The default weights of a file not in Python (Go, Java, JavaScript, Rust, TypeScript,
and files of no language), learned by `gazetteer eval learn` on the three development
splits pooled (194 instances, 16 repositories), Python's weights held at their defaults:
coordinate search, objective Acc@1 + Acc@5 + Acc@10 + MRR. Cross-validated with each
repository held out, the multi-language split went from Acc@1/5/10 25.4/46.6/64.4 to
28.8/51.7/67.8 (Python's splits unchanged). Off Python a rare name is weaker evidence
(symbol 0.15, not 0.6) and being source stronger (1.0); ``session`` keeps its default (no
benchmark signal), ``dense_rrf`` too (the embedder is off by default: at 0.3 MiniLM moved
one instance of 59, docs/RETRIEVAL_MULTILANG.md)."""

PYTHON_SUFFIXES = (".py", ".pyi")


def is_python_path(path: str) -> bool:
    """The files `RankWeights()` weighs by default; every other file takes `OFF_PYTHON`."""
    return path.endswith(PYTHON_SUFFIXES)


@dataclass(frozen=True, slots=True)
class Proximity:
    """Where files sit in the graph: ``linked(path)``, the files it imports or
    references and those importing or referencing it (resolved edges only);
    ``neighborhood``, each file's neighborhood id."""

    linked: Callable[[str], Iterable[str]]
    neighborhood: Mapping[str, str]


NAMED_AT = 0.5
"""A file is named by the question when its path, frame or rare-name evidence is at
least this (``symbol`` 0.5: a name two files define)."""


@dataclass(frozen=True, slots=True)
class RankedFile:
    path: str
    score: float
    best_chunk: str | None
    signals: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Mentions:
    identifiers: frozenset[str]  # every dotted part and every whole dotted name
    words: frozenset[str]  # lowercased words
    text: str


def mentions(question: str) -> Mentions:
    identifiers: set[str] = set()
    for match in _IDENTIFIER.finditer(question):
        name = match.group(0)
        identifiers.add(name)
        identifiers.update(name.split("."))
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", question)}
    return Mentions(frozenset(identifiers), frozenset(words), question)


def module_path(path: str) -> str | None:
    """``requests/sessions.py`` -> ``requests.sessions`` (Python files only)."""
    if not path.endswith(".py"):
        return None
    stem = path[:-3]
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem.replace("/", ".")


def rank(
    question: str,
    sparse: SparseIndex,
    definers: Mapping[str, Collection[str]],
    paths: Set[str],
    *,
    importance: Mapping[str, float] | None = None,
    weights: RankWeights | None = None,
    limit: int = 10,
    pool: int = 200,
    path_prefix: str | None = None,
    dense: list[tuple[str, float, str]] | None = None,
    rrf_k: int = 60,
    sources: Set[str] = frozenset(),
    recent: Mapping[str, float] | None = None,
    proximity: Proximity | None = None,
    hits: list[tuple[str, float, str]] | None = None,
    text_top: float | None = None,
    name_files: Mapping[str, int] | None = None,
    evidence: Mapping[str, Mapping[str, float]] | None = None,
) -> list[RankedFile]:
    """The files best matching ``question`` (its `question_read` part), best first
    (ties by path).

    ``definers``: symbol name -> files defining it; ``paths``: the files retrieval
    knows (a named file outside them is ignored); ``proximity``: for the ``imports``
    and ``graph`` signals (without it they are not computed). ``weights``: every file's;
    without them a Python file's are `RankWeights()`, any other file's `OFF_PYTHON`.

    Ranked as one of several repositories (`query.org_search`): ``hits``, the BM25
    files scored with the corpus's statistics; ``text_top``, the best of them over
    every repository (what ``text`` is divided by); ``name_files``, how many files of
    every repository define each name (what ``symbol`` is divided by).
    ``evidence``: signals computed beside the ranking, by file (the ``literal`` ones,
    `LiteralIndex.signals`), given to the candidates among those files.
    """
    importance = importance or {}
    question = question_read(question)
    said = mentions(question)
    if hits is None:
        hits = sparse.rank_files(question, pool, path_prefix=path_prefix)
    if text_top is not None and text_top > 0:
        top = text_top
    else:
        top = hits[0][1] if hits and hits[0][1] > 0 else 1.0
    signals: dict[str, dict[str, float]] = {}
    best: dict[str, str | None] = {}
    for path, score, chunk in hits:
        signals[path] = {"text": score / top, "bm25": score / top}
        best[path] = chunk
    if dense:
        # Measured on the benchmark's Lite dev split: replacing the BM25 score by an
        # equal-weight reciprocal-rank fusion with MiniLM's ranking lost 11 points of
        # Acc@1 (38.9 -> 27.8), so by default the dense ranking enters by rank fusion
        # at a weight of its own, beside BM25's score.
        ceiling = 1.0 / (rrf_k + 1)
        for place, (path, score, chunk) in enumerate(dense):
            own = signals.setdefault(path, {})
            own["dense"] = round(score, 6)
            own["dense_rrf"] = (1.0 / (rrf_k + place + 1)) / ceiling
            best.setdefault(path, chunk)
            own.setdefault("text", 0.0)
    for name in said.identifiers:
        if len(name) < MIN_SYMBOL_CHARS:
            continue
        files = definers.get(name)
        if not files:
            continue
        share = len(files) if name_files is None else max(name_files.get(name, 0), len(files))
        for path in files:
            if path_prefix and not path.startswith(path_prefix):
                continue
            own = signals.setdefault(path, {})
            own["symbol"] = min(1.0, own.get("symbol", 0.0) + 1.0 / share)
    lowered = said.text.lower()
    by_name: dict[str, list[str]] | None = None
    for found in _PATHLIKE.findall(said.text):
        if by_name is None:
            by_name = _by_name(paths)
        for path in _paths_ending(found.strip("./"), paths, by_name):
            signals.setdefault(path, {})["path"] = 1.0
    for path in innermost_frames(said.text, paths, own=sources.__contains__):
        if not path_prefix or path.startswith(path_prefix):
            signals.setdefault(path, {})["frame"] = 1.0
    for path in list(signals):
        module, stem = _path_facts(path)
        if module and "." in module and module in said.identifiers:
            signals[path]["path"] = 1.0
        if len(stem) >= MIN_SYMBOL_CHARS and stem in said.words and stem in lowered:
            signals[path]["filename"] = 1.0
        if path in importance:
            signals[path]["structural"] = importance[path]
        if path in sources:
            signals[path]["source"] = 1.0
        if recent and path in recent:
            signals[path]["session"] = recent[path]
        if evidence and path in evidence:
            signals[path].update(evidence[path])
    if proximity is not None:
        _proximity(signals, proximity)
    if weights is not None:
        python = other = _weighted(weights)
    else:
        python, other = _weighted(RankWeights()), _weighted(OFF_PYTHON)
    ranked = [
        RankedFile(path, _score(s, python if is_python_path(path) else other), best.get(path), s)
        for path, s in signals.items()
    ]
    ranked.sort(key=lambda r: (-round(r.score, 9), r.path))
    return ranked[:limit]


SCORED = (
    "text",
    "path",
    "symbol",
    "filename",
    "structural",
    "frame",
    "source",
    "session",
    "dense_rrf",
    "imports",
    "graph",
    "literal",
    "literal_quoted",
    "literal_error",
    "history",
    "fixes",
    "function_best",
    "function_count",
    "expansion",
)
_NOT_SOURCE = re.compile(
    r"(^|/)(docs?|examples?|vendor|vendored|_vendor|third_party|thirdparty|node_modules|"
    r"bower_components)/"
    r"|^[^/]+/(.+/)?packages/"  # requests/packages/urllib3 (a top-level packages/ is a monorepo's)
)


def is_source(path: str, language: str | None) -> bool:
    """Code a fix could land in: a parsed language, not under doc/, docs/, examples/,
    nor third-party code vendored into the repository."""
    return language is not None and _NOT_SOURCE.search(path) is None


def _proximity(signals: dict[str, dict[str, float]], proximity: Proximity) -> None:
    """The ``imports`` and ``graph`` signals of the candidates, from the named files."""
    named: dict[str, float] = {}
    for path, own in signals.items():
        evidence = max(own.get("path", 0.0), own.get("frame", 0.0), own.get("symbol", 0.0))
        if evidence >= NAMED_AT:
            named[path] = evidence
    if not named:
        return
    linked: dict[str, float] = {}
    by_neighborhood: dict[str, float] = {}
    for path, evidence in named.items():
        for other in set(proximity.linked(path)) - {path}:
            linked[other] = linked.get(other, 0.0) + evidence
        home = proximity.neighborhood.get(path)
        if home is not None:
            by_neighborhood[home] = by_neighborhood.get(home, 0.0) + evidence
    for path, own in signals.items():
        if path in linked:
            own["imports"] = min(1.0, linked[path] / 3)
        home = proximity.neighborhood.get(path)
        if home is not None and home in by_neighborhood:
            shared = by_neighborhood[home] - named.get(path, 0.0)  # not itself
            if shared > 0:
                own["graph"] = min(1.0, shared / 3)


def _weighted(weights: RankWeights) -> tuple[tuple[str, float], ...]:
    """The signals that weigh, with their weights, in `SCORED` order."""
    return tuple((name, w) for name in SCORED if (w := getattr(weights, name)))


def _score(signals: Mapping[str, float], weighted: Sequence[tuple[str, float]]) -> float:
    """The weighted sum in `SCORED` order. Bit for bit the sum over every signal: a
    signal absent or of weight 0 adds 0.0, and x + 0.0 is x for the sums here (every
    signal and weight is >= 0, so no partial sum is -0.0). A loop, not ``sum`` over
    ``getattr``: 1.7 ms of a 10 ms django search was this (issue 15)."""
    score = 0.0
    get = signals.get
    for name, weight in weighted:
        value = get(name)
        if value is not None:
            score += weight * value
    return score


@functools.lru_cache(maxsize=1 << 16)
def _path_facts(path: str) -> tuple[str | None, str]:
    """A path's dotted module (`module_path`) and lowercased stem: a function of the
    path alone, so cached (each search asked them of its ~400 candidates)."""
    return module_path(path), posixpath.splitext(posixpath.basename(path))[0].lower()


def _by_name(paths: Iterable[str]) -> dict[str, list[str]]:
    """The files by their base name, sorted: where a quoted path's files are looked up
    (a scan of every path per quoted path was 30 ms of a 50 KB question, issue 15)."""
    by_name: dict[str, list[str]] = {}
    for path in sorted(paths):
        by_name.setdefault(posixpath.basename(path), []).append(path)
    return by_name


def _paths_ending(written: str, paths: Set[str], by_name: Mapping[str, list[str]]) -> list[str]:
    """Files whose path is ``written`` or ends with ``/written`` (a path as an issue
    quotes it, from some folder down); ``by_name``: `_by_name` of ``paths``."""
    if "/" not in written and "." not in written:
        return []
    if written in paths:
        return [written]
    suffix = "/" + written
    return [p for p in by_name.get(posixpath.basename(written), ()) if p.endswith(suffix)][:5]
