"""Search, session starts and context packs: where to look, and what to read in budget.

``search`` ranks files for a question (BM25 over chunks re-ranked by the files and
names the question mentions, by importance when the neighborhoods are known) and says
which retrievers answered; each hit carries the lines to read first, its inbound degree
and its neighborhood. ``context`` builds a token-budgeted pack for a question, a symbol
or a file. Both are bounded by ``max_tokens`` / ``budget`` and carry freshness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from pydantic import BaseModel

from query.org_search import Corpus, Member, corpus_of, rank_across, top_of
from query.read_model import RepoView
from query.retrieval import QuotedChunks, proximity_of, question_pack
from query.retrieval_schemas import (
    ChunkOut,
    ContextOut,
    CorpusOut,
    OrgSearchHit,
    OrgSearchPage,
    RankingOut,
    SearchHit,
    SearchPage,
    SeedNeighborhood,
    SessionStart,
)
from query.search.bm25 import Statistics
from query.search.context_pack import ContextPack, file_context, render
from query.search.context_pack import symbol_context as symbol_pack
from query.search.pack_map import lead_line
from query.search.ranking import (
    MAX_QUESTION_CHARS,
    OFF_PYTHON,
    Proximity,
    RankedFile,
    RankWeights,
    is_python_path,
    question_read,
)
from query.service.access import touched
from query.service.base import ServiceBase, at_one_instant
from query.service.errors import InvalidArguments, NotFound
from query.service.repositories import name_matches
from stores.freshness import Freshness
from stores.ranking import EVERY_REPOSITORY
from stores.records import CONFIG_LANGUAGES, ChunkRecord

READ_LINES = 40  # the lines an agent should read first


def read_range(chunk: ChunkRecord | None) -> str:
    if chunk is None:
        return "L1-40"
    end = min(chunk.line_end, chunk.line_start + READ_LINES - 1)
    return f"L{chunk.line_start}-{end}"


def corpus_out(corpus: Corpus) -> CorpusOut:
    stats = corpus.stats
    return CorpusOut(
        count=stats.count,
        total_length=stats.total_length,
        df=dict(stats.df),
        names=dict(corpus.names),
        top=corpus.top,
    )


def corpus_in(corpus: CorpusOut) -> Corpus:
    return Corpus(
        Statistics(corpus.count, corpus.total_length, corpus.df), corpus.names, corpus.top
    )


def chunks_by_path(view: RepoView) -> Mapping[str, Sequence[ChunkRecord]]:
    """What a context pack reads: each file's chunks, with their texts."""
    return QuotedChunks(view.state.files, view.retrieval)


def membership_of(view: RepoView) -> Mapping[str, str]:
    snapshot = view.neighborhoods
    return snapshot.membership() if snapshot else {}


H = TypeVar("H", bound=BaseModel)


def within_tokens(ranked: Sequence[H], max_tokens: int) -> list[H]:
    """The leading hits whose JSON fits ``max_tokens`` (characters / 4); at least one."""
    items: list[H] = []
    used = 0
    for item in ranked:
        cost = len(item.model_dump_json()) // 4
        if items and used + cost > max_tokens:
            break
        items.append(item)
        used += cost
    return items


class RetrievalAnswers(ServiceBase):
    def _chunks(self, view: RepoView) -> Mapping[str, Sequence[ChunkRecord]]:
        return self._cache.get(view, "chunks", lambda: chunks_by_path(view))

    def _weights(self, repo: str) -> RankWeights | None:
        held = self.model.ranking_of(repo)
        return held[1] if held is not None else None

    def _proximity(self, view: RepoView, weights: RankWeights | None) -> Proximity | None:
        """The graph around the named files, when the weights read it: a profile's, or by
        default `OFF_PYTHON`'s in a repository with source code not in Python (Python's
        default weights do not read it, and a Python repository does not pay for it)."""
        if weights is not None and not weights.uses_proximity:
            return None
        if weights is None and not (
            OFF_PYTHON.uses_proximity
            and self._cache.get(view, "off_python", lambda: _has_code_off_python(view))
        ):
            return None
        return self._cache.get(
            view, "proximity", lambda: proximity_of(self._adjacency(view), membership_of(view))
        )

    def _ranking(self, repo: str) -> RankingOut:
        held = self.model.ranking_of(repo)
        if held is None:
            defaults = RankWeights().as_dict()
            return RankingOut(
                scope=None,
                source="defaults",
                weights=defaults,
                weights_off_python=OFF_PYTHON.as_dict(),
                set_at=None,
                scores={},
            )
        profile, weights = held
        return RankingOut(
            scope=profile.scope,
            source=profile.source,
            weights=weights.as_dict(),
            weights_off_python=None,
            set_at=profile.set_at,
            scores=profile.scores,
        )

    def _hits(
        self, view: RepoView, q: str, limit: int, path_prefix: str | None, session: str | None
    ) -> tuple[list[SearchHit], int]:
        repo = view.state.repo
        weights = self._weights(repo)
        ranked = view.retrieval.search(
            q,
            limit=limit,
            path_prefix=path_prefix,
            importance=self._importance(view),
            recent=self._sessions.boosts(repo, session) if session else None,
            weights=weights,
            proximity=self._proximity(view, weights),
        )
        return [self._hit(view, hit) for hit in ranked], len(ranked)

    def search(
        self,
        repo: str,
        q: str,
        limit: int = 10,
        path_prefix: str | None = None,
        max_tokens: int = 2000,
        session: str | None = None,
    ) -> SearchPage:
        """Files ranked for a question, with the lines to read first."""
        view = self.view(repo)
        read = question_read(q)
        ranked, total = self._hits(view, read, limit, path_prefix, session)
        items = within_tokens(ranked, max_tokens)
        if session:
            self._sessions.touch(repo, session, [item.path for item in items[:3]])
        return SearchPage(
            repo=repo,
            query=read,
            question_chars=len(q),
            question_truncated=len(read) < len(q),
            retrievers=list(view.retrieval.retrievers),
            ranking=self._ranking(repo),
            total=total,
            truncated=len(items) < total,
            items=items,
            freshness=self.model.freshness(repo),
        )

    def _hit(self, view: RepoView, hit: RankedFile) -> SearchHit:
        """A ranked file as an answer: the lines to read first, its standing."""
        chunk = view.retrieval.chunks.get(hit.best_chunk) if hit.best_chunk else None
        place = self._standing(view).get(hit.path)
        return SearchHit(
            path=hit.path,
            score=round(hit.score, 6),
            signals={k: round(v, 6) for k, v in sorted(hit.signals.items())},
            best_chunk=(ChunkOut.model_validate(chunk, from_attributes=True) if chunk else None),
            read=read_range(chunk),
            inbound_degree=place.in_degree if place else None,
            neighborhood=place.neighborhood if place else None,
            neighborhood_label=self._labels(view).get(place.neighborhood) if place else None,
        )

    def _chosen(self, repos: str | None) -> list[tuple[str, RepoView]]:
        """The repositories a question names (a comma list of ids, names, substrings or
        globs; all held when None), by id: only those the request may read."""
        patterns = [p.strip() for p in (repos or "").split(",") if p.strip()]
        held = self.held()
        return [
            (r, held[r])
            for r in sorted(held)
            if not patterns or any(name_matches(p, r, held[r]) for p in patterns)
        ]

    def _members(self, repos: str | None) -> list[Member]:
        return [Member(r, v.retrieval, self._importance(v)) for r, v in self._chosen(repos)]

    def search_statistics(self, q: str, repos: str | None = None) -> CorpusOut:
        """This replica's share of an org-wide question's figures (a router's first pass)."""
        corpus = corpus_of(question_read(q), self._members(repos))
        return corpus_out(corpus)

    def search_top(self, q: str, corpus: CorpusOut, repos: str | None = None) -> CorpusOut:
        """The corpus with this replica's best BM25 file score (a router's second pass)."""
        whole = corpus_in(corpus)
        top = top_of(question_read(q), self._members(repos), whole)
        return corpus.model_copy(update={"top": top})

    def search_all(
        self, q: str, repos: str | None = None, limit: int = 10, max_tokens: int = 2000
    ) -> OrgSearchPage:
        """Files ranked across every repository held (or those ``repos`` names), on one
        scale (`query.org_search`)."""
        return self._search_across(q, repos, limit, max_tokens, None)

    def search_corpus(
        self,
        q: str,
        corpus: CorpusOut,
        repos: str | None = None,
        limit: int = 10,
        max_tokens: int = 2000,
    ) -> OrgSearchPage:
        """`search_all` with the figures of every shard, when this replica holds only
        some of the repositories searched (a router's last pass)."""
        return self._search_across(q, repos, limit, max_tokens, corpus)

    @at_one_instant
    def _search_across(
        self,
        q: str,
        repos: str | None,
        limit: int,
        max_tokens: int,
        corpus: CorpusOut | None,
        *,
        note: bool = True,
    ) -> OrgSearchPage:
        """The org-wide search page; ``note``: its hits' repositories are the answer's
        (the audit line's), not only the candidates of another answer."""
        read = question_read(q)
        members = self._members(repos)
        ranked, candidates = rank_across(
            read,
            members,
            weights=self._weights(EVERY_REPOSITORY),
            limit=limit,
            corpus=corpus_in(corpus) if corpus is not None else None,
        )
        held = self.model.repos
        hits = [
            OrgSearchHit(
                repo=h.repo,
                **self._hit(held[h.repo], h.file).model_dump(),
                freshness=self.model.freshness(h.repo),
            )
            for h in ranked
        ]
        items = within_tokens(hits, max_tokens)
        if note:
            touched(sorted({hit.repo for hit in items}))  # the audit line's repositories
        return OrgSearchPage(
            query=read,
            question_chars=len(q),
            question_truncated=len(read) < len(q),
            repositories=len(members),
            ranking=self._ranking(EVERY_REPOSITORY),
            candidates=candidates,
            truncated=len(items) < len(hits),
            items=items,
            partitions=self.model.serves,
            partial=self.warming(),
        )

    def ranking(self, repo: str) -> RankingOut:
        """The weights search ranks the repository's files with, and where they come from."""
        self.view(repo)
        return self._ranking(repo)

    def session_start(
        self,
        repo: str,
        q: str,
        top: int = 3,
        hits: int = 20,
        matched: int = 5,
        session: str | None = None,
    ) -> SessionStart:
        """The neighborhoods the first message of a session falls in, ranked by the
        scores of the hits in them (one-file neighborhoods left out)."""
        view = self.view(repo)
        read = question_read(q)
        found, _ = self._hits(view, read, hits, None, session)
        snapshot = view.neighborhoods
        records = {n.id: n for n in snapshot.neighborhoods} if snapshot else {}
        grouped: dict[str, list[SearchHit]] = {}
        for hit in found:
            record = records.get(hit.neighborhood or "")
            if record is not None and record.size > 1:
                grouped.setdefault(record.id, []).append(hit)
        ranked = sorted(grouped.items(), key=lambda item: (-sum(h.score for h in item[1]), item[0]))
        chosen = [
            SeedNeighborhood(
                id=nid,
                label=records[nid].label,
                size=records[nid].size,
                cohesion=records[nid].cohesion,
                entry_points=list(records[nid].entry_points),
                score=round(sum(h.score for h in members), 6),
                matched=members[:matched],
            )
            for nid, members in ranked[:top]
        ]
        if session:
            self._sessions.touch(repo, session, [m.path for n in chosen for m in n.matched[:1]])
        return SessionStart(
            repo=repo,
            query=read,
            question_chars=len(q),
            question_truncated=len(read) < len(q),
            retrievers=list(view.retrieval.retrievers),
            total=len(ranked),
            neighborhoods=chosen,
            snapshot_stale=view.neighborhoods_stale if snapshot else None,
            freshness=self.model.freshness(repo),
        )

    def context(
        self,
        repo: str,
        q: str | None = None,
        symbol: str | None = None,
        path: str | None = None,
        budget: int = 8000,
        seeds: int = 3,
        session: str | None = None,
    ) -> ContextOut:
        """A context pack for exactly one of a question, a symbol or a file, within
        ``budget`` tokens: targets in full, related code as signatures. With a symbol,
        ``path`` (a file or folder) narrows the symbols the name stands for."""
        view = self.view(repo)
        if sum(x is not None for x in (q, symbol, path if symbol is None else None)) != 1:
            raise InvalidArguments("give exactly one of q, symbol, path")
        adjacency, by_path = self._adjacency(view), self._chunks(view)
        if symbol is not None:
            pack = symbol_pack(
                view.state, by_path, symbol, budget=budget, path=path, adjacency=adjacency
            )
        elif path is not None:
            if path.strip("/") not in view.state.files:
                raise NotFound(f"no file {path!r} in repository {repo!r}")
            pack = file_context(
                view.state, by_path, path.strip("/"), budget=budget, adjacency=adjacency
            )
        else:
            assert q is not None
            weights = self._weights(repo)
            pack = question_pack(
                view.state,
                view.retrieval,
                question_read(q),
                by_path,
                budget=budget,
                seeds=seeds,
                importance=self._importance(view),
                recent=self._sessions.boosts(repo, session) if session else None,
                adjacency=adjacency,
                weights=weights,
                proximity=self._proximity(view, weights),
            )
        if session:
            self._sessions.touch(repo, session, [t.path for t in pack.targets if t.path])
        truncated = None if q is None else len(q) > MAX_QUESTION_CHARS
        return context_out(repo, pack, self.model.freshness(repo), question_truncated=truncated)


def context_out(
    repo: str, pack: ContextPack, freshness: Freshness, *, question_truncated: bool | None = None
) -> ContextOut:
    return ContextOut(
        repo=repo,
        question_truncated=question_truncated,
        title=pack.title,
        text=render(pack),
        tokens=pack.tokens,
        budget=pack.budget,
        confidence=round(pack.confidence, 4),
        targets=[t.key for t in pack.targets],
        targets_total=pack.targets_total,
        read_first=[
            f"{r.path}:L{r.line_start}-{r.line_end} (inbound {r.inbound})" for r in pack.files
        ],
        read_next=[lead_line(lead) for lead in pack.map],
        reasoning=list(pack.reasoning),
        freshness=freshness,
    )


def _has_code_off_python(view: RepoView) -> bool:
    """Whether the repository holds source code in a language other than Python."""
    return any(
        record.language not in (None, "python")
        and record.language not in CONFIG_LANGUAGES
        and not is_python_path(path)
        for path, record in view.state.files.items()
    )
