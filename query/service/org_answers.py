"""Org-wide context packs and session starts (issue 18).

Each is made as org-wide search is (query/org_search.py): candidates ranked on one
scale across repositories, then merged. A replica holding every repository asked
merges its own candidates; a router (query/router.py) asks each shard for its
candidates with the whole corpus's figures and merges theirs with the same functions
(`merged_hits`, `context_answer`, `session_answer`; `graph_answer` in
query/service/org_graph_search.py), so the two answers are one by construction. What
each shard gives:

- ``context``: its best files for the question (the `/shard/search` pass, ``limit``
  the pack's seeds); the seeds kept across shards are planned into sections
  (query/org_context.py), and each section is packed by its repository's replica
  (`context_sections`, ``/shard/context``);
- ``session-start``: its ``hits`` best files and the neighborhoods they fall in
  (`session_candidates`, ``/shard/session-start``); the ``hits`` best across shards
  are grouped by (repository, neighborhood), each neighborhood scored by its files;
- ``graph-search``: query/service/org_graph_search.py.

An org-wide answer is made of the repositories the request may read (`held`): an
unreadable one is neither searched nor counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from query.org_context import Seed, joined, plan_sections
from query.read_model import RepoView
from query.retrieval_schemas import (
    ContextOut,
    ContextSection,
    CorpusOut,
    NeighborhoodCard,
    OrgContextOut,
    OrgSearchHit,
    OrgSearchPage,
    OrgSeedNeighborhood,
    OrgSessionStart,
    OrgTarget,
    PackSection,
    PackSections,
    SessionCandidates,
)
from query.search.context_pack import build_pack
from query.search.pack_text import tokens
from query.search.ranking import MAX_QUESTION_CHARS, question_read
from query.service.access import touched
from query.service.base import at_one_instant
from query.service.retrieval import RetrievalAnswers, context_out
from stores.neighborhoods import NeighborhoodRecord

CANDIDATES_TOKENS = 50_000
"""A candidates page is the merge's input, not an answer: bounded only by the most."""


def hit_order(hit: OrgSearchHit) -> tuple[float, str, str]:
    """The order of merged hits: score (as shown), then repository and path."""
    return (-round(hit.score, 6), hit.repo, hit.path)


def merged_hits(pages: Iterable[OrgSearchPage], limit: int) -> list[OrgSearchHit]:
    """The ``limit`` best hits of the pages (each ranked on the corpus's scale)."""
    return sorted((h for page in pages for h in page.items), key=hit_order)[:limit]


def _asked(pages: Sequence[OrgSearchPage], q: str) -> tuple[str, bool, int]:
    """The question as ranked, whether it was cut, and the repositories searched."""
    read = pages[0].query if pages else question_read(q)
    return read, len(read) < len(q), sum(p.repositories for p in pages)


def seeds_of(hits: Sequence[OrgSearchHit]) -> list[Seed]:
    """The pack's seeds: each hit's best chunk (or its file), with its score."""
    return [
        Seed(h.repo, h.best_chunk.id if h.best_chunk else f"file:{h.path}", h.score) for h in hits
    ]


def sections_asked(hits: Sequence[OrgSearchHit], budget: int) -> list[PackSection]:
    """The sections the best ``hits`` make of a pack within ``budget``."""
    return [
        PackSection(repo=s.repo, seeds=list(s.seeds), budget=s.budget)
        for s in plan_sections(seeds_of(hits), budget)
    ]


def context_answer(
    q: str,
    pages: Sequence[OrgSearchPage],
    sections: Sequence[ContextOut],
    budget: int,
    *,
    partitions: str,
    partial: bool,
) -> OrgContextOut:
    """The org-wide pack of its sections (in the plan's order)."""
    read, cut, repositories = _asked(pages, q)
    text = joined([(s.repo, s.text) for s in sections])
    return OrgContextOut(
        query=read,
        question_chars=len(q),
        question_truncated=cut,
        repositories=repositories,
        title=read[:80],
        text=text,
        tokens=tokens(text),
        budget=budget,
        confidence=max((s.confidence for s in sections), default=0.0),
        targets=[OrgTarget(repo=s.repo, target=t) for s in sections for t in s.targets],
        targets_total=sum(s.targets_total for s in sections),
        sections=[ContextSection.of(s) for s in sections],
        partitions=partitions,
        partial=partial,
    )


def session_answer(
    q: str,
    parts: Sequence[SessionCandidates],
    *,
    top: int,
    hits: int,
    matched: int,
    partitions: str,
    partial: bool,
) -> OrgSessionStart:
    """The neighborhoods the ``hits`` best files of the parts fall in, best first (by
    the sum of their files' scores, then repository and id), at most ``top``."""
    pages = [p.page for p in parts]
    read, cut, repositories = _asked(pages, q)
    cards = {(c.repo, c.id): c for p in parts for c in p.cards}
    grouped: dict[tuple[str, str], list[OrgSearchHit]] = {}
    for hit in merged_hits(pages, hits):
        key = (hit.repo, hit.neighborhood or "")
        if key in cards:
            grouped.setdefault(key, []).append(hit)
    ranked = sorted(grouped.items(), key=lambda kv: (-sum(h.score for h in kv[1]), kv[0]))
    chosen = [
        OrgSeedNeighborhood(
            **cards[key].model_dump(),
            score=round(sum(h.score for h in members), 6),
            matched=members[:matched],
            freshness=members[0].freshness,
        )
        for key, members in ranked[:top]
    ]
    return OrgSessionStart(
        query=read,
        question_chars=len(q),
        question_truncated=cut,
        repositories=repositories,
        total=len(ranked),
        neighborhoods=chosen,
        partitions=partitions,
        partial=partial,
    )


class OrgAnswers(RetrievalAnswers):
    def context_all(
        self, q: str, repos: str | None = None, budget: int = 8000, seeds: int = 3
    ) -> OrgContextOut:
        """A context pack drawn from the repositories searched (every one held, or
        those ``repos`` names) within one ``budget``: a section per repository."""
        page = self._search_across(q, repos, seeds, CANDIDATES_TOKENS, None, note=False)
        asked = sections_asked(merged_hits([page], seeds), budget)
        sections = self.context_sections(q, asked).sections
        return context_answer(
            q, [page], sections, budget, partitions=self.model.serves, partial=page.partial
        )

    @at_one_instant
    def context_sections(self, q: str, sections: Sequence[PackSection]) -> PackSections:
        """Each section's pack: its repository's, of its seeds within its budget."""
        read = question_read(q)
        packs = []
        for section in sections:
            view = self.view(section.repo)
            pack = build_pack(
                view.state,
                self._chunks(view),
                section.seeds,
                budget=section.budget,
                title=read[:80],
                adjacency=self._adjacency(view),
            )
            freshness = self.model.freshness(section.repo)
            cut = len(q) > MAX_QUESTION_CHARS
            packs.append(context_out(section.repo, pack, freshness, question_truncated=cut))
        touched([s.repo for s in sections])  # the audit line's: their code is in the answer
        return PackSections(sections=packs)

    def session_start_all(
        self,
        q: str,
        repos: str | None = None,
        top: int = 3,
        hits: int = 20,
        matched: int = 5,
    ) -> OrgSessionStart:
        """Where to start across repositories: the neighborhoods the first message's
        best files (on the org-wide search's scale) fall in."""
        part = self.session_candidates(q, repos=repos, hits=hits)
        answer = session_answer(
            q,
            [part],
            top=top,
            hits=hits,
            matched=matched,
            partitions=self.model.serves,
            partial=part.page.partial,
        )
        touched(sorted({n.repo for n in answer.neighborhoods}))
        return answer

    def session_candidates(
        self, q: str, corpus: CorpusOut | None = None, repos: str | None = None, hits: int = 20
    ) -> SessionCandidates:
        """This replica's best ``hits`` files and their neighborhoods (of two files or
        more); ``corpus``: the whole corpus's figures when it holds part of it."""
        page = self._search_across(q, repos, hits, CANDIDATES_TOKENS, corpus, note=False)
        cards: dict[tuple[str, str], NeighborhoodCard] = {}
        for hit in page.items:
            view = self.model.repos[hit.repo]
            record = self._records(view).get(hit.neighborhood or "")
            if record is not None and record.size > 1 and (hit.repo, record.id) not in cards:
                cards[(hit.repo, record.id)] = NeighborhoodCard(
                    repo=hit.repo,
                    id=record.id,
                    label=record.label,
                    size=record.size,
                    cohesion=record.cohesion,
                    entry_points=list(record.entry_points),
                    snapshot_stale=view.neighborhoods_stale,
                )
        return SessionCandidates(page=page, cards=list(cards.values()))

    def _records(self, view: RepoView) -> Mapping[str, NeighborhoodRecord]:
        """The repository's neighborhoods by id, per version (none before a recluster)."""
        snapshot = view.neighborhoods
        return self._cache.get(
            view,
            "neighborhood_records",
            lambda: {n.id: n for n in snapshot.neighborhoods} if snapshot else {},
        )
