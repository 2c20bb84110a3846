"""The seven-channel search across repositories (issue 18), as org-wide search ranks:
each channel's IDF figures (files counted, files holding each term) summed over the
repositories asked (`graph_statistics`; a router sums its shards'), then each
repository's best hits scored with the sum (`graph_candidates`), merged and paged
(`graph_answer`, the router's merge too). With the sum, a term's IDF is the one a
single repository holding every file would give it, and so is each hit's score
(tests/unit/test_org_answers.py). Importance stays each repository's own: it only
breaks ties, as in one repository.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict

from query.graph_search_schemas import (
    ChannelStatsOut,
    GraphCorpusOut,
    GraphCorpusQuestion,
    OrgChannelOut,
    OrgGraphHitOut,
    OrgGraphSearchPage,
)
from query.search.graph_search import ChannelStats, channel_statistics, graph_search
from query.service.access import touched
from query.service.base import at_one_instant
from query.service.errors import InvalidArguments
from query.service.graph_search import parse_channels
from query.service.retrieval import RetrievalAnswers


def graph_corpus(parts: Iterable[GraphCorpusOut]) -> GraphCorpusOut:
    """The shards' figures summed, channel by channel."""
    by_channel: dict[str, list[ChannelStats]] = {}
    for part in parts:
        for channel, figures in part.channels.items():
            by_channel.setdefault(channel, []).append(ChannelStats(figures.files, figures.df))
    return GraphCorpusOut(
        channels={
            c: ChannelStatsOut(files=m.files, df=dict(m.df))
            for c, m in ((c, ChannelStats.merged(f)) for c, f in by_channel.items())
        }
    )


def _graph_order(hit: OrgGraphHitOut) -> tuple[float, float, str, str, int, str]:
    """`graph_search`'s order, the repository before the path."""
    return (-hit.score, -hit.importance, hit.repo, hit.path, hit.line_start or 0, hit.text)


def graph_answer(
    q: str,
    parts: Sequence[OrgGraphSearchPage],
    *,
    offset: int,
    limit: int,
    partitions: str,
    partial: bool,
) -> OrgGraphSearchPage:
    """Each channel's hits of the parts merged, then paged (``offset``, ``limit``)."""
    names = list(dict.fromkeys(c.channel for p in parts for c in p.channels))
    channels = []
    for name in names:
        asked = [c for p in parts for c in p.channels if c.channel == name]
        merged = sorted((h for c in asked for h in c.items), key=_graph_order)
        channels.append(
            OrgChannelOut(
                channel=name,
                total=sum(c.total for c in asked),
                offset=offset,
                limit=limit,
                items=merged[offset : offset + limit],
            )
        )
    freshness = {r: f for p in parts for r, f in p.freshness.items()}
    shown = sorted({h.repo for c in channels for h in c.items})
    return OrgGraphSearchPage(
        query=q,
        repositories=sum(p.repositories for p in parts),
        channels=channels,
        freshness={r: freshness[r] for r in shown},
        partitions=partitions,
        partial=partial,
    )


class OrgGraphSearchAnswers(RetrievalAnswers):
    def graph_search_all(
        self,
        q: str,
        repos: str | None = None,
        channels: str | None = None,
        prefix: str | None = None,
        glob: str | None = None,
        offset: int = 0,
        limit: int = 10,
    ) -> OrgGraphSearchPage:
        """The seven-channel search across repositories, each term's rarity the
        corpus's: every repository's files counted, as one index would count them."""
        question = GraphCorpusQuestion(
            q=q, repos=repos, channels=channels, prefix=prefix, glob=glob, depth=offset + limit
        )
        corpus = self.graph_statistics(question)
        answer = graph_answer(
            q,
            [self.graph_candidates(question.model_copy(update={"corpus": corpus}))],
            offset=offset,
            limit=limit,
            partitions=self.model.serves,
            partial=self.warming(),
        )
        touched(sorted(answer.freshness))
        return answer

    def graph_statistics(self, question: GraphCorpusQuestion) -> GraphCorpusOut:
        """Each asked channel's IDF figures over this replica's repositories asked."""
        chosen = self._chosen(question.repos)
        channels: dict[str, ChannelStatsOut] = {}
        for c in parse_channels(question.channels):
            files = (v.state.files.values() for _, v in chosen)
            m = ChannelStats.merged(channel_statistics(f, c, question.q) for f in files)
            channels[c] = ChannelStatsOut(files=m.files, df=dict(m.df))
        return GraphCorpusOut(channels=channels)

    @at_one_instant
    def graph_candidates(self, question: GraphCorpusQuestion) -> OrgGraphSearchPage:
        """Each channel's ``depth`` best hits of this replica's repositories asked, scored
        with the corpus's figures (the question's ``corpus``)."""
        if question.corpus is None:
            raise InvalidArguments("give the corpus: the sum of every shard's statistics")
        asked = parse_channels(question.channels)
        figures = question.corpus.channels
        if any(c not in figures for c in asked):
            raise InvalidArguments("the corpus lacks a channel asked: give every channel's")
        stats = {c: ChannelStats(figures[c].files, figures[c].df) for c in asked}
        chosen = self._chosen(question.repos)
        pages = {
            repo: graph_search(
                view.state.files.values(),
                question.q,
                asked,
                importance=self._importance(view),
                prefix=question.prefix.lstrip("/") if question.prefix else None,
                glob=question.glob or None,
                offset=0,
                limit=question.depth,
                stats=stats,
            )
            for repo, view in chosen
        }
        channels = [
            OrgChannelOut(
                channel=c,
                total=sum(pages[r][i].total for r in pages),
                offset=0,
                limit=question.depth,
                items=sorted(
                    (OrgGraphHitOut(repo=r, **asdict(h)) for r in pages for h in pages[r][i].hits),
                    key=_graph_order,
                )[: question.depth],
            )
            for i, c in enumerate(asked)
        ]
        shown = sorted({h.repo for c in channels for h in c.items})
        return OrgGraphSearchPage(
            query=question.q,
            repositories=len(chosen),
            channels=channels,
            freshness={r: self.model.freshness(r) for r in shown},
            partitions=self.model.serves,
            partial=self.warming(),
        )
