"""The shapes of the retrieval answers: search hits, session starts, context packs and
the ranking in effect."""

from __future__ import annotations

from pydantic import BaseModel, Field

from query.search.ranking import MAX_QUESTION_CHARS
from stores.freshness import Freshness


class ChunkOut(BaseModel):
    id: str
    kind: str
    qualname: str | None
    signature: str | None
    line_start: int
    line_end: int


class SearchHit(BaseModel):
    path: str
    score: float
    signals: dict[str, float] = Field(description="bm25, path, symbol, filename, structural")
    best_chunk: ChunkOut | None
    read: str = Field(description="the lines to read first: 'L120-159'")
    inbound_degree: int | None = Field(description="files depending on it (None: unknown)")
    neighborhood: str | None
    neighborhood_label: str | None


class RankingOut(BaseModel):
    scope: str | None = Field(
        description="the profile's scope (the repository, or '*'); None: the defaults"
    )
    source: str = Field(description="where the weights come from")
    weights: dict[str, float] = Field(
        description="every file's, under a profile; without one, the Python files'"
    )
    weights_off_python: dict[str, float] | None = Field(
        None,
        description="without a profile: the weights of the files not in Python (learned on "
        "the pooled development splits); None under a profile, which weighs every file",
    )
    set_at: float | None
    scores: dict[str, dict[str, float]] = Field(description="how they scored when tuned")


class SearchPage(BaseModel):
    repo: str
    query: str = Field(description="the question as ranked")
    question_chars: int = Field(description="the question's length, in characters")
    question_truncated: bool = Field(
        description=f"the question was longer than the ranking reads ({MAX_QUESTION_CHARS:,} "
        "characters): it ranked `query`, the question's beginning"
    )
    retrievers: list[str]
    ranking: RankingOut = Field(description="the weights the files were ranked with")
    total: int = Field(description="files matched before the cut")
    truncated: bool = Field(description="hits left out to stay within max_tokens or limit")
    items: list[SearchHit]
    freshness: Freshness


class OrgSearchHit(SearchHit):
    """A file of one of several repositories ranked as one corpus."""

    repo: str
    freshness: Freshness = Field(description="the repository's (each hit says its own)")


class OrgSearchPage(BaseModel):
    query: str = Field(description="the question as ranked")
    question_chars: int
    question_truncated: bool
    repositories: int = Field(description="repositories searched")
    ranking: RankingOut = Field(description="the weights every repository was ranked with")
    candidates: int = Field(description="the repositories' best files, before the merge's cut")
    truncated: bool = Field(description="hits left out to stay within max_tokens")
    items: list[OrgSearchHit] = Field(
        description="best first, on one scale: BM25 with the statistics of every repository "
        "searched, names weighed by how many of their files define them"
    )
    partitions: str = Field(description="the partitions whose repositories were searched")
    partial: bool = Field(description="some repositories could not be searched")


class CorpusOut(BaseModel):
    """A shard's share of an org-wide question's figures (`query.org_search.Corpus`):
    a router sums them over its shards, then sends the whole back with the question."""

    count: int = Field(ge=0, description="chunks indexed")
    total_length: int = Field(ge=0, description="their tokens")
    df: dict[str, int] = Field(description="chunks holding each of the question's terms")
    names: dict[str, int] = Field(description="files defining each name the question says")
    top: float | None = Field(None, description="the best BM25 file score, once known")


class CorpusQuestion(BaseModel):
    q: str = Field(min_length=1, max_length=200_000)
    repos: str | None = Field(None, max_length=2000)
    corpus: CorpusOut | None = None
    limit: int = Field(10, ge=1, le=100)
    max_tokens: int = Field(2000, ge=100, le=50_000)


class SeedNeighborhood(BaseModel):
    id: str
    label: str
    size: int
    cohesion: float
    entry_points: list[str]
    score: float = Field(description="the sum of its matched files' search scores")
    matched: list[SearchHit] = Field(description="its files among the hits, best first")


class SessionStart(BaseModel):
    repo: str
    query: str = Field(description="the message as ranked")
    question_chars: int = Field(description="the question's length, in characters")
    question_truncated: bool = Field(
        description=f"the question was longer than the ranking reads ({MAX_QUESTION_CHARS:,} "
        "characters): it ranked `query`, the question's beginning"
    )
    retrievers: list[str]
    total: int = Field(description="neighborhoods (of two files or more) the hits fell in")
    neighborhoods: list[SeedNeighborhood] = Field(description="the best, at most `top`")
    snapshot_stale: bool | None = Field(description="None before the first recluster")
    freshness: Freshness


class ContextOut(BaseModel):
    repo: str
    question_truncated: bool | None = Field(
        description=f"for a question (q): it was longer than the ranking reads "
        f"({MAX_QUESTION_CHARS:,} characters) and its beginning chose the targets; None "
        "for a symbol or a file"
    )
    title: str
    text: str = Field(description="for the agent: files grouped, targets marked [TARGET]")
    tokens: int = Field(description="estimated (characters / 4); never over the budget")
    budget: int
    confidence: float
    targets: list[str]
    targets_total: int
    read_first: list[str] = Field(description="'path:L10-49 (inbound 12)' per file")
    read_next: list[str] = Field(
        default_factory=list,
        description="a question's map: the files ranked next, 'path · L10-30 name · L40-52' "
        "each (the lines of its functions ranked for the question); empty for a symbol or "
        "a file",
    )
    reasoning: list[str]
    freshness: Freshness


class OrgTarget(BaseModel):
    repo: str
    target: str = Field(description="a chunk, symbol or file of the repository")


class ContextSection(BaseModel):
    """One repository's pack in an org-wide pack, its text left to the pack's."""

    repo: str
    tokens: int = Field(description="its text's, never over its budget")
    budget: int = Field(description="its share of the pack's budget, less its heading")
    confidence: float
    targets: list[str]
    targets_total: int
    read_first: list[str] = Field(description="'path:L10-49 (inbound 12)' per file")
    reasoning: list[str]
    freshness: Freshness

    @classmethod
    def of(cls, pack: ContextOut) -> ContextSection:
        return cls.model_validate(pack.model_dump(exclude={"text", "title", "question_truncated"}))


class OrgContextOut(BaseModel):
    """A context pack drawn from several repositories within one budget: a section per
    repository, each its own pack with its freshness (query/org_context.py)."""

    query: str = Field(description="the question as ranked")
    question_chars: int
    question_truncated: bool
    repositories: int = Field(description="repositories searched for targets")
    title: str
    text: str = Field(description="the sections' texts, each under its repository's heading")
    tokens: int = Field(description="estimated (characters / 4); never over the budget")
    budget: int
    confidence: float = Field(description="the best section's")
    targets: list[OrgTarget] = Field(description="every section's targets, best section first")
    targets_total: int
    sections: list[ContextSection] = Field(
        description="one per repository drawn from, best first (its text is in `text`, "
        "under its heading): its budget's share (by its targets' scores), its targets and "
        "files to read first, its freshness"
    )
    partitions: str = Field(description="the partitions whose repositories were searched")
    partial: bool = Field(description="some repositories could not be searched")


class PackSection(BaseModel):
    """One repository's section of an org-wide context pack, as planned: its targets
    (node or chunk ids with scores in [0, 1]) and its budget."""

    repo: str
    seeds: list[tuple[str, float]] = Field(max_length=10)
    budget: int = Field(ge=1, le=100_000)


class PackQuestion(BaseModel):
    q: str = Field(min_length=1, max_length=200_000)
    sections: list[PackSection] = Field(max_length=10)


class PackSections(BaseModel):
    sections: list[ContextOut]


class NeighborhoodCard(BaseModel):
    """A neighborhood an org-wide session start may name, as its replica knows it."""

    repo: str
    id: str
    label: str
    size: int
    cohesion: float
    entry_points: list[str]
    snapshot_stale: bool


class OrgSeedNeighborhood(BaseModel):
    repo: str
    id: str
    label: str
    size: int
    cohesion: float
    entry_points: list[str]
    score: float = Field(description="the sum of its matched files' search scores")
    matched: list[OrgSearchHit] = Field(description="its files among the hits, best first")
    snapshot_stale: bool
    freshness: Freshness = Field(description="its repository's")


class OrgSessionStart(BaseModel):
    query: str = Field(description="the message as ranked")
    question_chars: int
    question_truncated: bool
    repositories: int = Field(description="repositories searched")
    total: int = Field(description="neighborhoods (of two files or more) the hits fell in")
    neighborhoods: list[OrgSeedNeighborhood] = Field(
        description="the best, at most `top`, across repositories: the org-wide search's "
        "`hits` best files grouped by their repository's neighborhoods"
    )
    partitions: str
    partial: bool


class SessionCandidates(BaseModel):
    """A replica's part of an org-wide session start: its best files on the corpus's
    scale, and the neighborhoods they fall in."""

    page: OrgSearchPage
    cards: list[NeighborhoodCard]
