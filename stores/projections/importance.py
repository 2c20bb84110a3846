"""Which files matter: PageRank over imports, semantic centrality, and their blend.

The Neo4j guide ranks every search channel by a composite importance: 0.6 x PageRank
over the import graph (damping 0.85) + 0.4 x semantic centrality. Both signals are
scaled to [0, 1] before blending so the weights mean what they say: PageRank by its
maximum (the most imported file is 1), semantic centrality by construction and then by
its maximum as well.

Pure and deterministic: files are taken in the file graph's sorted order, igraph's
PRPACK solver is exact (no random start), and rankings sort on scores rounded to
``SCORE_DIGITS`` so float noise between equal scores never beats the path tie-break.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import igraph

from stores.projections.file_graph import FileGraph
from stores.records import FileRecord, Keyword

DAMPING = 0.85
PAGERANK_WEIGHT = 0.6
SEMANTIC_WEIGHT = 0.4
SCORE_DIGITS = 9


@dataclass(frozen=True, slots=True)
class FileImportance:
    """One file's standing. ``pagerank`` is its share of the rank (shares sum to 1);
    ``semantic`` is in [0, 1]; ``score`` = w_pr x pagerank / max pagerank + w_sem x semantic."""

    path: str
    pagerank: float
    semantic: float
    score: float


def pagerank(graph: FileGraph, damping: float = DAMPING) -> dict[str, float]:
    """PageRank of each file over the directed, weighted import graph, summing to 1.

    An arc a -> b means a depends on b, so rank flows to what is imported: a file many
    files import, or one imported by important files, ranks high. A file that imports
    nothing spreads its rank uniformly (igraph's PRPACK and networkx agree on this).
    Arcs of weight <= 0 carry nothing and are left out (igraph rejects them anyway).
    """
    if not graph.files:
        return {}
    index = {path: i for i, path in enumerate(sorted(graph.files))}
    # Sorted arcs: the same graph gives bit-identical ranks whatever order it was built in.
    arcs = [(index[a], index[b], w) for (a, b), w in sorted(graph.arcs.items()) if w > 0]
    g = igraph.Graph(n=len(graph.files), edges=[(a, b) for a, b, _ in arcs], directed=True)
    ranks = g.pagerank(
        directed=True,
        damping=damping,
        weights=[w for _, _, w in arcs] if arcs else None,
        implementation="prpack",
    )
    total = sum(ranks)
    return {path: ranks[i] / total for path, i in index.items()}


def semantic_centrality(keywords: Mapping[str, Sequence[Keyword]]) -> dict[str, float]:
    """How much of each file's vocabulary is the repository's shared vocabulary, in [0, 1].

    share(f) = sum over f's keywords of weight x (df(term) - 1) / (N - 1), divided by the
    sum of f's weights: the weight-averaged fraction of the *other* files that use each of
    f's terms (df = files listing the term, N = files considered). The result is then
    divided by the largest share, so the most central file is 1 like the top PageRank.

    Why this measure: it reads in one sentence, it costs one pass to count document
    frequencies and one pass to score (O(total keywords), at most 20 per file), and it is
    bounded without tuning. Leaving the file itself out of df means a file whose terms no
    other file uses scores exactly 0, whatever the size of the repository; a cosine with
    the repository centroid would credit a file for its own contribution to the centroid,
    which dominates in small repositories. Keywords are per-file identifier parts with
    weights (processors/parsing/summary.py), already stripped of stopwords.
    """
    n = len(keywords)
    if n < 2:
        return dict.fromkeys(keywords, 0.0)
    df: dict[str, int] = {}
    for terms in keywords.values():
        for term in {k.term for k in terms}:
            df[term] = df.get(term, 0) + 1
    shares: dict[str, float] = {}
    for path, terms in keywords.items():
        mass = sum(k.weight for k in terms)
        shared = sum(k.weight * (df[k.term] - 1) for k in terms)
        shares[path] = shared / (mass * (n - 1)) if mass > 0 else 0.0
    top = max(shares.values())
    return {path: (s / top if top > 0 else 0.0) for path, s in shares.items()}


def rank_files(
    graph: FileGraph,
    files: Mapping[str, FileRecord],
    *,
    pagerank_weight: float = PAGERANK_WEIGHT,
    semantic_weight: float = SEMANTIC_WEIGHT,
    damping: float = DAMPING,
) -> tuple[FileImportance, ...]:
    """Every file of the graph by composite importance: score descending, then path."""
    keywords = {p: (files[p].keywords if p in files else ()) for p in graph.files}
    return rank(
        graph,
        keywords,
        pagerank_weight=pagerank_weight,
        semantic_weight=semantic_weight,
        damping=damping,
    )


def rank(
    graph: FileGraph,
    keywords: Mapping[str, Sequence[Keyword]],
    *,
    pagerank_weight: float = PAGERANK_WEIGHT,
    semantic_weight: float = SEMANTIC_WEIGHT,
    damping: float = DAMPING,
) -> tuple[FileImportance, ...]:
    """``rank_files`` from the files' keywords alone (what the reclusterer keeps).

    Semantic centrality is computed over the graph's files (the parsed source files), so
    configuration files and documents do not dilute the shared vocabulary.
    """
    ranks = pagerank(graph, damping)
    semantic = semantic_centrality({p: keywords.get(p, ()) for p in graph.files})
    top = max(ranks.values(), default=0.0)
    ranked = [
        FileImportance(
            path=path,
            pagerank=ranks[path],
            semantic=semantic[path],
            score=pagerank_weight * (ranks[path] / top if top > 0 else 0.0)
            + semantic_weight * semantic[path],
        )
        for path in graph.files
    ]
    ranked.sort(key=lambda f: (-round(f.score, SCORE_DIGITS), f.path))
    return tuple(ranked)
