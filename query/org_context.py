"""A context pack drawn from several repositories within one budget (issue 18).

A pack is one repository's: its targets, their callers, tests and imports are edges of
that repository's graph. So an org-wide pack is sections, one per repository it draws
from, and the question is how to share the budget. The targets are the question's
best files across repositories, ranked on the one scale of `query.org_search` (each
file's best chunk, or the file); each target's seed score is its score over the best
one's, as a single repository's pack scores its seeds (`retrieval.question_pack`).
Each repository drawn from gets a share of the budget in proportion to its targets'
seed scores (largest remainders; ties to the better section), a share under
`MIN_SECTION` tokens being given to the others instead, since a pack that small
holds hardly a target; then each section is its repository's pack within its share,
less its heading. The text is the sections under their headings, and never exceeds
the budget: each section's rendered pack is within its share's pack budget, the
heading and joining newline are paid for out of the share, rounded up.

Pure: ranked seeds in, the plan out; `joined` puts the packs' texts together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from query.search.pack_text import CHARS_PER_TOKEN

MIN_SECTION = 200
"""Tokens below which a repository's share goes to the others (a pack's header and one
target's signature take about that)."""


@dataclass(frozen=True, slots=True)
class Seed:
    """A target of the pack: a repository's chunk or file, its score on the org scale."""

    repo: str
    node: str
    score: float


@dataclass(frozen=True, slots=True)
class Section:
    """One repository's part of the pack: its seeds (scores in [0, 1]), the share of the
    budget it was given, and the budget its pack has (the share less its heading)."""

    repo: str
    seeds: tuple[tuple[str, float], ...]
    share: int
    budget: int


def heading(repo: str) -> str:
    return f"=== repository {repo} ==="


def heading_tokens(repo: str) -> int:
    """The heading's tokens with its newline and the newline joining it to the text
    before, rounded up."""
    return -(-(len(heading(repo)) + 2) // CHARS_PER_TOKEN)


def shares(budget: int, weights: Sequence[float]) -> list[int]:
    """``budget`` split in proportion to ``weights`` (equal when all are 0): floors, then
    one token each to the largest remainders, the earlier first among equals."""
    if not weights:
        return []
    total = sum(weights)
    even = [1.0] * len(weights)
    exact = [budget * w / total for w in weights] if total > 0 else [budget / len(even)] * len(even)
    split = [int(x) for x in exact]
    left = budget - sum(split)
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - split[i]), i))
    for i in order[:left]:
        split[i] += 1
    return split


def plan_sections(seeds: Sequence[Seed], budget: int) -> list[Section]:
    """The sections of a pack of ``seeds`` (best first, on one scale) within ``budget``,
    in the order of their best seed."""
    if not seeds:
        return []
    top = seeds[0].score if seeds[0].score > 0 else 1.0
    by_repo: dict[str, list[tuple[str, float]]] = {}
    for seed in seeds:
        by_repo.setdefault(seed.repo, []).append((seed.node, seed.score / top))
    repos = list(by_repo)
    while True:
        split = shares(budget, [sum(s for _, s in by_repo[r]) for r in repos])
        small = [i for i, share in enumerate(split) if share < MIN_SECTION]
        if not small or len(repos) == 1:
            break
        # The smallest share goes (the later among equals); the rest are shared again.
        del repos[min(small, key=lambda i: (split[i], -i))]
    return [
        Section(repo, tuple(by_repo[repo]), share, max(share - heading_tokens(repo), 0))
        for repo, share in zip(repos, split, strict=True)
        if share > heading_tokens(repo)
    ]


def joined(sections: Sequence[tuple[str, str]]) -> str:
    """The pack's text: each (repository, rendered pack) under its heading."""
    return "\n".join(f"{heading(repo)}\n{text}" for repo, text in sections)
