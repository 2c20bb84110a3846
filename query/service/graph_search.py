"""The seven-channel search: purpose, classes, functions, imports, keywords, paths and
glob, each paged on its own with its true total, bounded and fresh-stamped."""

from __future__ import annotations

from typing import get_args

from query.graph_search_schemas import ChannelOut, GraphHitOut, GraphSearchPage
from query.search.graph_search import CHANNELS, Channel, ChannelPage, graph_search
from query.service.base import ServiceBase
from query.service.errors import InvalidArguments


def parse_channels(text: str | None) -> list[Channel]:
    """``"paths,classes"`` as channels in their canonical order; None or '': all."""
    if not text:
        return list(CHANNELS)
    asked = list(dict.fromkeys(c.strip() for c in text.split(",") if c.strip()))
    unknown = [c for c in asked if c not in get_args(Channel)]
    if unknown or not asked:
        raise InvalidArguments(f"unknown channels {unknown}; known: {', '.join(CHANNELS)}")
    return [c for c in CHANNELS if c in asked]


def channel_out(page: ChannelPage) -> ChannelOut:
    return ChannelOut(
        channel=page.channel,
        total=page.total,
        offset=page.offset,
        limit=page.limit,
        items=[GraphHitOut.model_validate(h, from_attributes=True) for h in page.hits],
    )


class GraphSearchAnswers(ServiceBase):
    def graph_search(
        self,
        repo: str,
        q: str,
        channels: str | None = None,
        prefix: str | None = None,
        glob: str | None = None,
        offset: int = 0,
        limit: int = 10,
    ) -> GraphSearchPage:
        """Files and symbols matching ``q`` per channel, exact > prefix > substring, rare
        terms first, then by importance; each channel paged (``offset``, ``limit``)."""
        view = self.view(repo)
        pages = graph_search(
            view.state.files.values(),
            q,
            parse_channels(channels),
            importance=self._importance(view),
            prefix=prefix.lstrip("/") if prefix else None,
            glob=glob or None,
            offset=offset,
            limit=limit,
        )
        return GraphSearchPage(
            repo=repo,
            query=q,
            channels=[channel_out(p) for p in pages],
            freshness=self.model.freshness(repo),
        )
