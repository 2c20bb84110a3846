"""Files ranked across repositories as one corpus (issue 18: org-wide answers).

Each repository's ranking divides its signals by what only it knows: a file's BM25
score by its own best file's, a name's evidence by how many of its own files define
the name, and BM25's IDF and average length are its own. Two repositories' scores
are then not comparable: every repository's best file scores about 1. So a question
asked of several repositories is ranked in two passes, as a distributed search
engine ranks over shards (DFS: statistics first, then the query):

1. every repository gives its share of the statistics the question's BM25 reads
   (documents, total length, each term's document frequency: `bm25.Statistics`),
   and of how many files define each name the question says; summed, they are the
   corpus's;
2. every repository ranks its files with those statistics: BM25 with the corpus's IDF
   and average length, ``text`` divided by the corpus's best score, ``symbol`` by the
   corpus's count of defining files. The other signals are absolute (a path or a
   stem the question names, a frame, source or not) or the repository's own
   (``structural``: its importance, PageRank within the repository).

The scores are then one scale, and the merge is a sort. Across shards (a router) the
passes are three: each shard's `corpus_of`, merged; each shard's `top_of` with it, the
greatest kept; then each shard's `rank_across` with the whole `Corpus`. With ``structural`` at 0 and
nothing cut, the merged ranking is, score for score, the ranking of one index holding
every repository's files (tests/unit/test_org_search.py builds both). Each repository
pools its 200 best BM25 files where one index would pool 200 of all: when a pool is
cut, the merge has weighed more candidates, never fewer. The dense ranking is left
out: its reciprocal ranks are a repository's own. Pure: retrievals in, ranked out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from query.retrieval import RepoRetrieval
from query.search.bm25 import Statistics
from query.search.ranking import RankedFile, RankWeights, mentions, question_read, rank

POOL = 200
"""BM25 files each repository weighs (as `ranking.rank`'s ``pool``)."""


@dataclass(frozen=True, slots=True)
class Member:
    """One repository of an org-wide question: its retrieval and its files' importance."""

    repo: str
    retrieval: RepoRetrieval
    importance: Mapping[str, float] | None = None


@dataclass(frozen=True, slots=True)
class OrgRanked:
    repo: str
    file: RankedFile


@dataclass(frozen=True, slots=True)
class Corpus:
    """What every repository of a question shares to be ranked on one scale: the BM25
    statistics of the question's terms, how many files define each name it says, and
    (once known) the best BM25 file score of all of them."""

    stats: Statistics
    names: Mapping[str, int]
    top: float | None = None

    @classmethod
    def merged(cls, parts: Sequence[Corpus]) -> Corpus:
        names: dict[str, int] = {}
        for part in parts:
            for name, n in part.names.items():
                names[name] = names.get(name, 0) + n
        tops = [p.top for p in parts if p.top is not None]
        return cls(Statistics.merged(p.stats for p in parts), names, max(tops) if tops else None)


def corpus_of(question: str, members: Sequence[Member]) -> Corpus:
    """The members' share of the corpus (without its ``top``): the first pass."""
    question = question_read(question)
    said = mentions(question)
    return Corpus(
        Statistics.merged(m.retrieval.sparse.statistics(question) for m in members),
        {
            name: sum(len(m.retrieval.definers.get(name, ())) for m in members)
            for name in sorted(said.identifiers)
        },
    )


def _hits(
    question: str, members: Sequence[Member], stats: Statistics, pool: int
) -> dict[str, list[tuple[str, float, str]]]:
    return {m.repo: m.retrieval.sparse.rank_files(question, pool, stats=stats) for m in members}


def top_of(question: str, members: Sequence[Member], corpus: Corpus, pool: int = POOL) -> float:
    """The best BM25 file score of the members with the corpus's statistics: the second
    pass (a router takes the greatest over its shards)."""
    hits = _hits(question_read(question), members, corpus.stats, pool)
    return max((found[0][1] for found in hits.values() if found), default=0.0)


def rank_across(
    question: str,
    members: Sequence[Member],
    *,
    weights: RankWeights | None = None,
    limit: int = 10,
    pool: int = POOL,
    corpus: Corpus | None = None,
) -> tuple[list[OrgRanked], int]:
    """The ``limit`` best files of all ``members`` for ``question``, best first (ties
    by repository, then path), and how many files the members ranked before the cut.
    ``corpus``: the whole corpus's figures when ``members`` are only part of it (a
    shard's repositories: `corpus_of` and `top_of` of every shard, merged); else the
    members are the corpus."""
    question = question_read(question)
    if corpus is None:
        corpus = corpus_of(question, members)
    hits = _hits(question, members, corpus.stats, pool)
    top = corpus.top
    if top is None:
        top = max((found[0][1] for found in hits.values() if found), default=0.0)
    ranked: list[OrgRanked] = []
    total = 0
    for member in members:
        retrieval = member.retrieval
        files = rank(
            question,
            retrieval.sparse,
            retrieval.definers,
            retrieval.paths(),
            importance=member.importance,
            weights=weights,
            limit=limit,
            pool=pool,
            sources=retrieval.sources,
            hits=hits[member.repo],
            text_top=top,
            name_files=corpus.names,
        )
        total += len(files)
        ranked.extend(OrgRanked(member.repo, f) for f in files)
    ranked.sort(key=lambda h: (-round(h.file.score, 9), h.repo, h.file.path))
    return ranked[:limit], total
