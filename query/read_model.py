"""The query service's read side: the materialized state, folded from the topics.

It applies graph deltas (with the same RepoState code the processors use), producer
statuses and dead letters as they arrive, and answers freshness from both sides. It is
pure: the materializer feeds it raw messages, tests feed it values.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from processors.churn.ledger import ChurnLedger
from processors.neighborhoods.graph_state import FileGraphState
from processors.retrieval.ranking import RankWeights
from producers.events import SourceStatus
from query.dense import DenseIndex
from query.retrieval import RepoRetrieval
from stores.dead_letters import DeadLetter
from stores.deltas import GraphDelta
from stores.freshness import BatchClock, Freshness, ProducerView, compute_freshness
from stores.neighborhoods import NeighborhoodChangeRecord, NeighborhoodSnapshot
from stores.ranking import EVERY_REPOSITORY, RankingProfile
from stores.repo_state import RepoState

log = structlog.get_logger(__name__)

RECENT_DEAD_LETTERS = 100


RECENT_CHANGES = 500
"""Neighborhood changes kept per repository (the last snapshots' worth, for operators)."""


@dataclass(frozen=True, slots=True)
class StampedChange:
    snapshot: int
    computed_at: float
    graph_seq: int
    indexed_commit: str | None
    change: NeighborhoodChangeRecord


@dataclass
class RepoView:
    state: RepoState
    status: SourceStatus | None = None
    clock: BatchClock = field(default_factory=BatchClock)
    dead_letters: int = 0
    file_graph: FileGraphState | None = None
    retrieval: RepoRetrieval = field(default_factory=RepoRetrieval)
    neighborhoods: NeighborhoodSnapshot | None = None
    changes: deque[StampedChange] = field(default_factory=lambda: deque(maxlen=RECENT_CHANGES))
    churn: ChurnLedger = field(default_factory=ChurnLedger)
    references: dict[str, int] = field(default_factory=dict)  # path -> references found

    @property
    def neighborhoods_stale(self) -> bool:
        """The file graph changed after the graph delta the neighborhoods were built from."""
        changed = self.file_graph.changed_seq if self.file_graph is not None else 0
        built = self.neighborhoods.graph_seq if self.neighborhoods is not None else -1
        return changed > built


class ReadModel:
    def __init__(
        self, clock: Callable[[], float] = time.time, dense: DenseIndex | None = None
    ) -> None:
        self._clock = clock
        self.dense = dense
        self.repos: dict[str, RepoView] = {}
        self.dead_letters: deque[DeadLetter] = deque(maxlen=RECENT_DEAD_LETTERS)
        self.dead_letters_total = 0
        self.deltas_applied = 0
        self.ranking: dict[str, tuple[RankingProfile, RankWeights]] = {}  # by scope

    def view(self, repo: str) -> RepoView:
        view = self.repos.get(repo)
        if view is None:
            view = self.repos[repo] = RepoView(
                RepoState(repo),
                file_graph=FileGraphState(repo),
                retrieval=RepoRetrieval(repo, self.dense),
            )
        return view

    def apply_delta(self, delta: GraphDelta) -> bool:
        view = self.view(delta.repo)
        if delta.seq > view.state.seq + 1:
            # A gap means the log lost deltas; say so loudly and keep serving what we have.
            log.error("delta_gap", repo=delta.repo, have=view.state.seq, got=delta.seq)
            return False
        delta = _without_references(delta, view.references)
        prior = view.churn.before(view.state, view.file_graph, delta)
        applied = view.state.apply(delta)
        if applied and view.file_graph is not None:
            view.file_graph.apply(delta)
        if applied:
            view.retrieval.apply(delta)
            view.churn.apply(delta, prior, view.state, view.file_graph)
        self.deltas_applied += applied
        return applied

    def apply_snapshot(self, snapshot: NeighborhoodSnapshot) -> bool:
        """Keep a repository's latest neighborhoods; an older or repeated one is a no-op."""
        view = self.view(snapshot.repo)
        if view.neighborhoods is not None and snapshot.seq <= view.neighborhoods.seq:
            return False
        view.neighborhoods = snapshot
        view.churn.apply_snapshot(snapshot)
        if self.dense is not None:
            self.dense.prioritize(snapshot.repo, snapshot.importance())
        for change in snapshot.changes:
            view.changes.append(
                StampedChange(
                    snapshot.seq,
                    snapshot.computed_at,
                    snapshot.graph_seq,
                    snapshot.indexed_commit,
                    change,
                )
            )
        return True

    def apply_ranking(self, profile: RankingProfile) -> bool:
        """Keep each scope's latest profile (by the time it was set); one naming a
        weight search does not know is refused, the one before it staying."""
        held = self.ranking.get(profile.scope)
        if held is not None and held[0].set_at > profile.set_at:
            return False
        try:
            weights = RankWeights.from_mapping(profile.weights)
        except ValueError as exc:
            log.error("ranking_profile_refused", scope=profile.scope, error=str(exc))
            return False
        self.ranking[profile.scope] = (profile, weights)
        return True

    def ranking_of(self, repo: str) -> tuple[RankingProfile, RankWeights] | None:
        """The repository's profile, else the one for every repository, else none."""
        return self.ranking.get(repo) or self.ranking.get(EVERY_REPOSITORY)

    def apply_status(self, status: SourceStatus) -> None:
        view = self.view(status.repo)
        view.status = status
        view.clock.record(
            status.producer, status.batch_first_seq, status.last_seq, status.batch_started_at
        )

    def apply_dead_letter(self, letter: DeadLetter, repo: str | None) -> None:
        self.dead_letters.append(letter)
        self.dead_letters_total += 1
        if repo is not None and repo in self.repos:
            self.repos[repo].dead_letters += 1

    def freshness(self, repo: str) -> Freshness:
        view = self.repos[repo]
        status = view.status
        producer = (
            ProducerView(
                producer=status.producer,
                head_commit=status.head_commit,
                working_tree_dirty=status.working_tree_dirty,
                last_seq=status.last_seq,
                sent_at=status.sent_at,
                heartbeat_s=status.heartbeat_s,
                state=status.state,
            )
            if status is not None
            else None
        )
        state = view.state
        since = None
        if status is not None:
            same = state.source is not None and state.source.producer == status.producer
            applied_seq = state.source.seq if same and state.source else 0
            since = view.clock.oldest_pending_since(status.producer, applied_seq)
        return compute_freshness(
            view=producer,
            applied=state.source,
            indexed_commit=state.indexed_commit,
            indexed_at=state.indexed_at,
            oldest_pending_since=since,
            now=self._clock(),
        )


def _without_references(delta: GraphDelta, counts: dict[str, int]) -> GraphDelta:
    """The delta with its files' references dropped, their counts kept in ``counts``.

    The worker resolves references into edges; the read side serves the edges and only
    counts the references, which were half of its memory (sympy: 1,407 -> 754 MB,
    tracemalloc over the folded deltas)."""
    for path in delta.files_removed:
        counts.pop(path, None)
    if not any(record.references for record in delta.files_upserted):
        for record in delta.files_upserted:
            counts[record.path] = 0
        return delta
    lean = []
    for record in delta.files_upserted:
        counts[record.path] = len(record.references)
        lean.append(record.model_copy(update={"references": ()}) if record.references else record)
    return delta.model_copy(update={"files_upserted": tuple(lean)})
