"""Search over seven channels of the materialized state (the Neo4j guide's search).

A channel is one kind of fact a file carries: its purpose (module docstring), the
classes and the functions it defines, what it imports, its keywords, its path, and
``glob`` (the path matched against the query as a pattern: ``**/models.py``). Each
channel answers on its own: its own page, its own true total.

Matching is query-aware (vortexa's seeding rule): per query term, a word of the item
equal to the term is an exact match, a word starting with it a prefix match, the
term anywhere in the item a substring match, case-insensitively. A term counts by
its IDF in the channel (how many files' channel text contains it), so a rare term
outweighs a common one: score = sum over matched terms of idf x kind weight. Hits
sort by score, then by importance (the neighborhood snapshot's), then by path and
line: deterministic, and the important file first among equals.

One pass over the files per channel per query: no index is built, which keeps a
delta free to land between two queries (sympy: 1,500 files, 40k symbols).
"""

from __future__ import annotations

import fnmatch
import heapq
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from query.search.packed_facts import column
from stores.records import FileRecord

Channel = Literal["purpose", "classes", "functions", "imports", "keywords", "paths", "glob"]
CHANNELS: tuple[Channel, ...] = (
    "purpose",
    "classes",
    "functions",
    "imports",
    "keywords",
    "paths",
    "glob",
)
MatchKind = Literal["exact", "prefix", "substring"]
KIND_WEIGHT: Mapping[MatchKind, float] = {"exact": 1.0, "prefix": 0.6, "substring": 0.3}
CLASS_KINDS = frozenset({"CLASS", "STRUCT", "INTERFACE", "TRAIT", "ENUM"})
FUNCTION_KINDS = frozenset({"FUNCTION", "METHOD"})
TEXT_CAP = 160  # characters of a matched text (a purpose line, an import's names)
MAX_TERMS = 8  # an issue's whole text is not a query; its first words are
_WORD = re.compile(r"[\w$]+")
_SEPARATORS = re.compile(r"[./\\:]+")


@dataclass(frozen=True, slots=True)
class Item:
    """One searchable fact of a file: its words, its text, where it is."""

    path: str
    text: str
    words: frozenset[str]
    haystack: str
    line_start: int | None = None
    line_end: int | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    path: str
    text: str
    match: MatchKind
    score: float
    importance: float
    line_start: int | None
    line_end: int | None


@dataclass(frozen=True, slots=True)
class ChannelStats:
    """A channel's IDF figures: the files it counted, and how many of them hold each
    term. Summed over repositories, they are one corpus's (issue 18: an org-wide
    graph search ranks every repository with the sum, as one index would)."""

    files: int
    df: Mapping[str, int]

    @classmethod
    def merged(cls, parts: Iterable[ChannelStats]) -> ChannelStats:
        files, df = 0, dict[str, int]()
        for part in parts:
            files += part.files
            for term, n in part.df.items():
                df[term] = df.get(term, 0) + n
        return cls(files, dict(sorted(df.items())))


@dataclass(frozen=True, slots=True)
class ChannelPage:
    channel: Channel
    total: int
    offset: int
    limit: int
    hits: tuple[Hit, ...]


def terms_of(q: str) -> tuple[str, ...]:
    """The query's distinct lowercase terms, in order, at most MAX_TERMS."""
    return tuple(dict.fromkeys(q.lower().split()))[:MAX_TERMS]


def glob_matches(path: str, pattern: str) -> bool:
    """fnmatch, case-sensitive; a leading ``**/`` also matches at the root."""
    if fnmatch.fnmatchcase(path, pattern):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatchcase(path, pattern[3:])


def match_kind(term: str, item: Item) -> MatchKind | None:
    if term in item.words:
        return "exact"
    if term not in item.haystack:
        return None
    return "prefix" if any(w.startswith(term) for w in item.words) else "substring"


def cap(text: str) -> str:
    return text if len(text) <= TEXT_CAP else text[: TEXT_CAP - 1] + "…"


def split_words(text: str) -> frozenset[str]:
    return frozenset(_SEPARATORS.split(text)) | {text}


def purpose_items(record: FileRecord, terms: Sequence[str]) -> Iterator[Item]:
    if not record.purpose:
        return
    lowered = record.purpose.lower()
    if not any(t in lowered for t in terms):
        return
    lines = [line.strip() for line in record.purpose.splitlines() if line.strip()]
    shown = next((ln for ln in lines if any(t in ln.lower() for t in terms)), lines[0])
    yield Item(record.path, cap(shown), frozenset(_WORD.findall(lowered)), lowered)


def symbol_items(kinds: frozenset[str]) -> Callable[[FileRecord, Sequence[str]], Iterator[Item]]:
    def items(record: FileRecord, terms: Sequence[str]) -> Iterator[Item]:
        symbols = record.symbols  # read by column: a packed file builds its matches only
        kinds_, names = column(symbols, "kind"), column(symbols, "name")
        found = zip(kinds_, names, column(symbols, "qualname"), strict=True)
        for at, (kind, raw_name, raw_qualname) in enumerate(found):
            if kind in kinds:
                # the name is what matches; the qualname only whole ('Session.send'), so
                # 'session' finds the class, not each of its methods
                name, qualname = raw_name.lower(), raw_qualname.lower()
                if not any(t in name or t == qualname for t in terms):
                    continue  # most symbols match nothing: build no item for them
                words = frozenset({name, qualname})
                s = symbols[at]
                yield Item(record.path, s.qualname, words, name, s.line_start, s.line_end)

    return items


def import_items(record: FileRecord, terms: Sequence[str]) -> Iterator[Item]:
    imports = record.imports  # read by column: a packed file builds its matches only
    found = zip(column(imports, "module"), column(imports, "names"), strict=True)
    for at, (raw_module, raw_names) in enumerate(found):
        module = raw_module.lower()
        names = [n.lower() for n in raw_names]
        haystack = " ".join([module, *names])
        if not any(t in haystack for t in terms):
            continue
        imp = imports[at]
        text = f"{imp.module}: {', '.join(imp.names)}" if imp.names else imp.module
        words = split_words(module) | set(names)
        yield Item(record.path, cap(text), words, haystack, imp.line, imp.line)


def keyword_items(record: FileRecord, terms: Sequence[str]) -> Iterator[Item]:
    for raw in column(record.keywords, "term"):  # packed: no record built
        term = raw.lower()
        if not any(t in term for t in terms):
            continue
        yield Item(record.path, raw, frozenset(_WORD.findall(term)) | {term}, term)


def path_items(record: FileRecord, terms: Sequence[str]) -> Iterator[Item]:
    path = record.path.lower()
    parts = path.split("/")
    stems = {p.rsplit(".", 1)[0] for p in parts}
    yield Item(record.path, record.path, frozenset({path, *parts, *stems}), path)


ITEMS: Mapping[Channel, Callable[[FileRecord, Sequence[str]], Iterable[Item]]] = {
    "purpose": purpose_items,
    "classes": symbol_items(CLASS_KINDS),
    "functions": symbol_items(FUNCTION_KINDS),
    "imports": import_items,
    "keywords": keyword_items,
    "paths": path_items,
}


def _scan(
    files: Iterable[FileRecord],
    channel: Channel,
    q: str,
    prefix: str | None,
    glob: str | None,
) -> tuple[list[tuple[Item, dict[str, MatchKind]]], ChannelStats]:
    """The channel's items matching ``q`` within the filters, and its figures over every
    file (filters do not move scores). The item builders skip what no term is in, so
    only matches cost an allocation."""
    terms = terms_of(q)
    found: list[tuple[Item, dict[str, MatchKind]]] = []
    df = dict.fromkeys(terms, 0)
    n = 0
    for record in files:
        n += 1
        keep = (prefix is None or record.path.startswith(prefix)) and (
            glob is None or glob_matches(record.path, glob)
        )
        if channel == "glob":
            if keep and glob_matches(record.path, q.strip()):
                item = Item(record.path, record.path, frozenset(), record.path)
                found.append((item, {q.strip(): "exact"}))
            continue
        seen: set[str] = set()
        for item in ITEMS[channel](record, terms):
            kinds = {t: k for t in terms if (k := match_kind(t, item)) is not None}
            seen.update(kinds)
            if kinds and keep:
                found.append((item, kinds))
        for t in seen:
            df[t] += 1
    return found, ChannelStats(n, df)


def channel_statistics(files: Iterable[FileRecord], channel: Channel, q: str) -> ChannelStats:
    """The channel's IDF figures for ``q`` over ``files``: a repository's share of an
    org-wide graph search's corpus."""
    return _scan(files, channel, q, None, None)[1]


def search_channel(
    files: Iterable[FileRecord],
    channel: Channel,
    q: str,
    *,
    importance: Mapping[str, float],
    prefix: str | None = None,
    glob: str | None = None,
    offset: int = 0,
    limit: int = 20,
    stats: ChannelStats | None = None,
) -> ChannelPage:
    """One channel's page of hits for ``q``, with the true total of the filtered hits.

    IDF counts every file of the repository (filters do not move scores): idf =
    ln(1 + n / df), n the repository's files, df those whose channel contains the term;
    ``stats``: the figures of a whole corpus instead (several repositories').
    """
    found, own = _scan(files, channel, q, prefix, glob)
    figures = own if stats is None else stats
    idf = {
        t: math.log(1 + figures.files / df) if (df := figures.df.get(t, 0)) else 0.0
        for t in terms_of(q)
    }
    hits = [hit(item, kinds, idf, importance) for item, kinds in found]
    # Only the page's prefix is ordered: a broad query matches tens of thousands.
    best = heapq.nsmallest(
        offset + limit,
        hits,
        key=lambda h: (-h.score, -h.importance, h.path, h.line_start or 0, h.text),
    )
    return ChannelPage(channel, len(hits), offset, limit, tuple(best[offset : offset + limit]))


def hit(
    item: Item,
    kinds: Mapping[str, MatchKind],
    idf: Mapping[str, float],
    importance: Mapping[str, float],
) -> Hit:
    score = sum(idf.get(t, 1.0) * KIND_WEIGHT[k] for t, k in kinds.items())
    best = min(kinds.values(), key=lambda k: -KIND_WEIGHT[k])
    return Hit(
        path=item.path,
        text=item.text,
        match=best,
        score=round(score, 6),
        importance=importance.get(item.path, 0.0),
        line_start=item.line_start,
        line_end=item.line_end,
    )


def graph_search(
    files: Iterable[FileRecord],
    q: str,
    channels: Sequence[Channel] = CHANNELS,
    *,
    importance: Mapping[str, float],
    prefix: str | None = None,
    glob: str | None = None,
    offset: int = 0,
    limit: int = 20,
    stats: Mapping[Channel, ChannelStats] | None = None,
) -> tuple[ChannelPage, ...]:
    """Each asked channel's page, in the order asked (one pass over the files each);
    ``stats``: each channel's figures of a whole corpus (`search_channel`)."""
    records = list(files)
    return tuple(
        search_channel(
            records,
            c,
            q,
            importance=importance,
            prefix=prefix,
            glob=glob,
            offset=offset,
            limit=limit,
            stats=stats.get(c) if stats is not None else None,
        )
        for c in channels
    )
