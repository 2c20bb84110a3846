"""Graph expansion of search seeds, the ContextOS rule, exactly.

Breadth-first from the seeds, a level at a time, to depth 2 and 20 nodes at most; a
level admits its candidates heaviest edge first (ties by id), so when the node cap
cuts a level the strongest links are the ones kept. A node with more than 30
connections (adjacency.py defines them) may be reached but is not expanded: passing
through a hub would pull in half the repository. Score = weight x 0.5^depth (a seed
scores 1), and results come sorted by depth, then score descending, then id.

Only edges of weight >= 0.9 are traversed. With our weights that means: reference
edges (CALLS, USES, REFERENCES, TESTS) weigh the count of references they stand for,
so >= 1, and always pass; a file's IMPORTS edge weighs its resolved references, or 1
when none resolves, and passes, except the share of a package import spread over n
>= 2 files (1/n <= 0.5), which is too weak a tie to follow. Name-match edges are never
traversed whatever their weight, nor CONTAINS / DEFINED_BY / SIBLING (structure, not
dependency): `Adjacency.links` holds neither.

Seeds given as names (entities a search extracted) drop what ContextOS drops: names
shorter than 3 characters, pure numbers and stopwords.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from query.search.adjacency import Adjacency
from stores.projections.hubs import EXPANSION_HUB_DEGREE

MAX_DEPTH = 2
MAX_NODES = 20
MIN_WEIGHT = 0.9
DECAY = 0.5

STOPWORDS = frozenset(
    """a about above after again all also an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers him his how i if in into is it its
    itself just me more most my no nor not now of off on once only or other our out over
    own same she should so some such than that the their them then there these they this
    those through to too under until up very was we were what when where which while who
    whom why will with would you your""".split()
)


@dataclass(frozen=True, slots=True)
class Expanded:
    """A node the expansion reached: how far, how strongly, and from where."""

    node: str
    depth: int
    score: float
    via: str | None = None
    kind: str | None = None
    """The kind of the edge from ``via`` (None for a seed)."""


def entity_seeds(
    names: Iterable[str], *, min_length: int = 3, stopwords: frozenset[str] = STOPWORDS
) -> tuple[str, ...]:
    """The names worth expanding from, in first-seen order, each once."""
    kept: dict[str, None] = {}
    for name in names:
        name = name.strip()
        if len(name) < min_length or name.isdigit() or name.lower() in stopwords:
            continue
        kept.setdefault(name, None)
    return tuple(kept)


def seeds_for_names(
    adjacency: Adjacency, names: Iterable[str], *, per_name: int = 5
) -> tuple[str, ...]:
    """The file and symbol nodes of the kept names, up to ``per_name`` each (by id)."""
    seeds: dict[str, None] = {}
    for name in entity_seeds(names):
        for node in adjacency.named(name)[:per_name]:
            seeds.setdefault(node, None)
    return tuple(seeds)


def expand(
    adjacency: Adjacency,
    seeds: Sequence[str],
    *,
    max_depth: int = MAX_DEPTH,
    max_nodes: int = MAX_NODES,
    min_weight: float = MIN_WEIGHT,
    hub_degree: int = EXPANSION_HUB_DEGREE,
    externals: bool = True,
) -> tuple[Expanded, ...]:
    """The seeds (in the order given, unknown ones dropped) and what they reach.

    ``externals=False`` leaves external modules out (a context pack has no text for them);
    otherwise they are reached like any node and, having no edges of their own, end there.
    """
    found: dict[str, Expanded] = {}
    frontier: list[str] = []
    for seed in seeds:
        if len(found) >= max_nodes:
            break
        if seed in adjacency.nodes and seed not in found:
            found[seed] = Expanded(seed, 0, 1.0)
            frontier.append(seed)
    for depth in range(1, max_depth + 1):
        if not frontier or len(found) >= max_nodes:
            break
        best: dict[str, tuple[float, str, str]] = {}
        for node in frontier:
            if adjacency.degree(node) > hub_degree:
                continue  # reached, not passed
            for link in adjacency.links(node):
                other = link.other
                if link.weight < min_weight or other in found:
                    continue
                if not externals and other.startswith("ext:"):
                    continue
                candidate = (link.weight, node, link.kind)
                current = best.get(other)
                if current is None or _stronger(candidate, current):
                    best[other] = candidate
        frontier = []
        for other, (weight, via, kind) in sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0])):
            if len(found) >= max_nodes:
                break
            found[other] = Expanded(other, depth, weight * DECAY**depth, via, kind)
            frontier.append(other)
    return tuple(sorted(found.values(), key=lambda e: (e.depth, -e.score, e.node)))


def _stronger(a: tuple[float, str, str], b: tuple[float, str, str]) -> bool:
    """Heavier wins; at equal weight the smaller (via, kind) does, so the answer is stable."""
    return (-a[0], a[1], a[2]) < (-b[0], b[1], b[2])
