"""The query service's read side: the materialized state, folded from the topics.

It applies graph deltas (with the same RepoState code the processors use), producer
statuses and dead letters as they arrive, and answers freshness from both sides. It is
pure: the materializer feeds it raw messages, tests feed it values.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from producers.events import SourceStatus
from query.auth.book import TokenBook
from stores.dead_letters import DeadLetter
from stores.deltas import GraphDelta
from stores.freshness import BatchClock, Freshness, ProducerView, compute_freshness
from stores.neighborhoods import NeighborhoodChangeRecord, NeighborhoodSnapshot
from stores.projections.graph_state import FileGraphState
from stores.ranking import EVERY_REPOSITORY, RankingProfile
from stores.repo_state import RepoState

if TYPE_CHECKING:
    from query.churn.ledger import ChurnLedger
    from query.dense import DenseIndex
    from query.retrieval import RepoRetrieval
    from query.search.adjacency import Adjacency
    from query.search.ranking import RankWeights

log = structlog.get_logger(__name__)


# Imported when a repository is first held, not with this module (issue 21): the
# producers (`gazetteer watch`) fold the topics into a read model to learn each
# repository's indexed commit before they scan, and a fresh start holds none, so they
# need no search, dense or churn machinery (numpy and the ranking among it: a third of
# their imports; tests/unit/test_cli_imports.py).
def _new_retrieval() -> RepoRetrieval:
    from query.retrieval import RepoRetrieval

    return RepoRetrieval()


def _new_churn() -> ChurnLedger:
    from query.churn.ledger import ChurnLedger

    return ChurnLedger()


RECENT_DEAD_LETTERS = 100

REJECTED_RECENT_S = 300.0
"""How long a rejected event (fenced, forged, ...) is said in a repository's freshness."""

PRODUCERS_KEPT = 16
"""Statuses kept per repository for display, the owner's and the fenced ones'."""


RECENT_CHANGES = 500
"""Neighborhood changes kept per repository (the last snapshots' worth, for operators)."""


@dataclass(frozen=True, slots=True)
class StampedChange:
    snapshot: int
    computed_at: float
    graph_seq: int
    indexed_commit: str | None
    change: NeighborhoodChangeRecord


@dataclass(frozen=True, slots=True)
class Owner:
    """Who owns a repository's events: the lease its state applied (issue 15)."""

    producer: str
    epoch: int
    host: str
    root: str


@dataclass
class RepoView:
    """One repository as the read side holds it. ``status`` is the owner's: the last one
    of the greatest lease seen; ``statuses`` the last one of every producer seen
    (fenced ones too, for display; they never count as progress)."""

    state: RepoState
    status: SourceStatus | None = None
    statuses: dict[str, SourceStatus] = field(default_factory=dict)
    rejected: tuple[float, str] | None = None  # (failed_at, reason) of the last rejected
    clock: BatchClock = field(default_factory=BatchClock)
    dead_letters: int = 0
    file_graph: FileGraphState | None = None
    retrieval: RepoRetrieval = field(default_factory=_new_retrieval)
    neighborhoods: NeighborhoodSnapshot | None = None
    changes: deque[StampedChange] = field(default_factory=lambda: deque(maxlen=RECENT_CHANGES))
    churn: ChurnLedger = field(default_factory=_new_churn)
    references: dict[str, int] = field(default_factory=dict)  # path -> references found
    # The graph indexed for walking: built on the first answer that needs it, then kept
    # up to date by `ReadModel.apply_delta` (issue 15). See `adjacency`.
    _adjacency: Adjacency | None = field(default=None, repr=False, compare=False)

    def adjacency(self) -> Adjacency:
        """The state's adjacency as it stands. Built once (django: 47-80 ms), then each
        delta folded into it as the state applies it, so an answer after an edit pays for
        the edit, not a rebuild; rebuilt only if the state was replaced (a snapshot)."""
        from query.search.adjacency import Adjacency

        held = self._adjacency
        if held is None or not held.follows(self.state):
            held = self._adjacency = Adjacency.of(self.state)
        return held

    def adjacency_to_fold(self, delta: GraphDelta) -> Adjacency | None:
        """The adjacency ``delta`` is to be folded into, if one is kept. It is dropped
        (the next answer builds it again) when the state was replaced under it, or when
        the delta changes so much of the graph that a rebuild costs less (a scan's)."""
        held = self._adjacency
        if held is not None and not (
            held.follows(self.state) and held.worth_folding(delta, len(self.state.edges))
        ):
            held = self._adjacency = None
        return held

    @property
    def owner(self) -> Owner | None:
        lease = self.state.lease
        if lease is None:
            return None
        return Owner(lease.producer, lease.epoch, lease.host, lease.root)

    @property
    def fenced_producers(self) -> list[tuple[int, str]]:
        """Leases older than the owner's, from the state and from statuses, newest first."""
        owner = self.state.lease.key if self.state.lease is not None else None
        if self.status is not None:
            seen = (self.status.epoch, self.status.producer)
            owner = seen if owner is None or seen > owner else owner
        leases = {f.lease.key for f in self.state.fenced}
        leases |= {(s.epoch, s.producer) for s in self.statuses.values()}
        return sorted((k for k in leases if owner is not None and k < owner), reverse=True)

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
        self.tokens = TokenBook()  # the access tokens (issue 19), folded like the ranking
        # When the materializer last stood at the end of every topic (None: no
        # materializer feeds this model, as in tests that feed values).
        self.caught_up_at: float | None = None
        # Repositories whose producer statuses on the broker went past what was read,
        # at the last look before an answer (query/materializer.py `probe_sources`).
        self.unread_statuses: set[str] = set()
        # The partitions the feeder reads (issue 18: a shard's, `query.shard`), as said.
        self.serves = "all"
        self._instant: float | None = None  # see `one_instant`

    def caught_up(self) -> None:
        """The feeder has read everything its topics held: answers may say ``fresh``."""
        self.caught_up_at = self._clock()

    @contextlib.contextmanager
    def one_instant(self) -> Iterator[None]:
        """Inside: every `freshness` is judged at the instant the block began.

        For an answer about many repositories computed in one synchronous stretch (the
        listing of 500 of them takes longer than ``CAUGHT_UP_WITHIN_S`` on a loaded
        loop): nothing is read from the topics meanwhile, so the read side knows at the
        end what it knew at the start, and judging each repository later than the one
        before would say ``updating`` of the last ones for the time spent listing the
        first (the org simulation's listings at 1,000 repositories did). Nested blocks
        keep the outer instant."""
        if self._instant is not None:
            yield
            return
        self._instant = self._clock()
        try:
            yield
        finally:
            self._instant = None

    def view(self, repo: str) -> RepoView:
        view = self.repos.get(repo)
        if view is None:
            from query.retrieval import RepoRetrieval

            view = self.repos[repo] = RepoView(
                RepoState(repo),
                file_graph=FileGraphState(repo),
                retrieval=RepoRetrieval(repo, self.dense),
            )
        return view

    # ---- broker reset (issue 15): the log the state was folded from is gone.
    reset_reason: str | None = None
    """Why the state was last dropped: every answer of a repository carries it until
    the repository is fresh again."""
    rebuilding: bool = False
    """Set by `reset`, cleared by the materializer once it has re-read the new log."""
    reset_at: float | None = None
    _recovered: frozenset[str] = frozenset()  # fresh again since the reset
    _checking: bool = False

    def reset(self, reason: str) -> None:
        """Drop every repository's state, keeping the repositories listed, so that it is
        folded again from the new topics; until each is fresh again its answers say
        ``reason``, and none says fresh while the new log is being read."""
        for repo, old in list(self.repos.items()):
            if self.dense is not None:
                for path in old.state.files:
                    self.dense.file_removed(repo, path)
            del self.repos[repo]
            self.view(repo)
        self.dead_letters.clear()
        self.ranking.clear()
        self.tokens.clear()  # the new log's tokens only: a lost topic locks out, not in
        self.reset_reason, self.rebuilding, self.reset_at = reason, True, self._clock()
        self._recovered = frozenset()

    def _reset_freshness(self, repo: str) -> Freshness | None:
        """The freshness of a repository not yet fresh since a reset (None: no reset)."""
        reason = self.reset_reason
        if reason is None or self._checking or (repo in self._recovered and not self.rebuilding):
            return None
        view = self.repos[repo]
        if self.rebuilding or view.status is None:
            since = self.reset_at if self.reset_at is not None else self._clock()
            return Freshness(
                status="updating" if self.rebuilding else "stale",
                indexed_commit=view.state.indexed_commit,
                head_commit=None,
                working_tree_dirty=False,
                pending_events=0,
                indexed_at=view.state.indexed_at,
                lag_ms=round(max(0.0, self._clock() - since) * 1000, 1),
                reason=reason,
            )
        self._checking = True
        try:
            answer = self.freshness(repo)
        finally:
            self._checking = False
        if answer.status == "fresh":
            self._recovered = self._recovered | {repo}
            return answer
        return answer.model_copy(update={"reason": f"{reason}: {answer.reason}"})

    # ---- end of broker reset

    def apply_delta(self, delta: GraphDelta) -> bool:
        view = self.view(delta.repo)
        if delta.seq > view.state.seq + 1:
            # A gap means the log lost deltas; say so loudly and keep serving what we have.
            log.error("delta_gap", repo=delta.repo, have=view.state.seq, got=delta.seq)
            return False
        full, delta = delta, _lean(delta, view.references)
        prior = view.churn.before(view.state, view.file_graph, delta)
        adjacency = view.adjacency_to_fold(delta)
        before = adjacency.before(delta) if adjacency is not None else None
        applied = view.state.apply(delta)
        if applied and adjacency is not None and before is not None:
            adjacency.apply(delta, before)
        if applied and view.file_graph is not None:
            view.file_graph.apply(delta)
        if applied:
            view.retrieval.apply(full, {r.path: r for r in delta.files_upserted})
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
            from query.search.ranking import RankWeights

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
        """Keep the status; it is the one freshness follows when its lease is the greatest
        seen (a fenced producer's late statuses are kept for display only)."""
        view = self.view(status.repo)
        view.statuses[status.producer] = status
        if len(view.statuses) > PRODUCERS_KEPT:
            oldest = min(view.statuses.values(), key=lambda s: (s.epoch, s.producer))
            del view.statuses[oldest.producer]
        held = view.status
        if held is not None and (status.epoch, status.producer) < (held.epoch, held.producer):
            return
        view.status = status
        view.clock.record(
            status.producer, status.batch_first_seq, status.last_seq, status.batch_started_at
        )

    def known_epoch(self, repo: str) -> int:
        """The largest lease epoch known for ``repo`` (0 if none): the state's and every
        status's. A producer starting for it claims one more."""
        view = self.repos.get(repo)
        if view is None:
            return 0
        epochs = [s.epoch for s in view.statuses.values()]
        if view.state.lease is not None:
            epochs.append(view.state.lease.epoch)
        return max(epochs, default=0)

    def apply_dead_letter(self, letter: DeadLetter, repo: str | None) -> None:
        self.dead_letters.append(letter)
        self.dead_letters_total += 1
        if repo is not None and repo in self.repos:
            self.repos[repo].dead_letters += 1
            if letter.failure == "rejected":
                self.repos[repo].rejected = (letter.failed_at, letter.reason)

    def freshness(self, repo: str) -> Freshness:
        if (resetting := self._reset_freshness(repo)) is not None:
            return resetting  # broker reset: see `reset`
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
                epoch=status.epoch,
            )
            if status is not None
            else None
        )
        state = view.state
        now = self._clock() if self._instant is None else self._instant
        rejected = None
        if view.rejected is not None and now - view.rejected[0] <= REJECTED_RECENT_S:
            rejected = view.rejected[1]
        since = None
        if status is not None:
            same = state.source is not None and state.source.lease == (
                status.epoch,
                status.producer,
            )
            applied_seq = state.source.seq if same and state.source else 0
            since = view.clock.oldest_pending_since(status.producer, applied_seq)
        answer = compute_freshness(
            view=producer,
            applied=state.source,
            indexed_commit=state.indexed_commit,
            indexed_at=state.indexed_at,
            oldest_pending_since=since,
            now=now,
            rejected=rejected,
            caught_up_at=self.caught_up_at,
        )
        if answer.status == "fresh" and repo in self.unread_statuses:
            # The broker holds a newer status of the producer than the one read: there is
            # news this replica has not read, so it cannot vouch (issue 15).
            reason = "the broker holds a producer status not read yet, or does not answer"
            return answer.model_copy(update={"status": "updating", "reason": reason})
        return answer


def _lean(delta: GraphDelta, counts: dict[str, int]) -> GraphDelta:
    """The delta as the read side's state holds it: its files' records lean
    (`query.retrieval.lean_record`), their references counted in ``counts``."""
    for path in delta.files_removed:
        counts.pop(path, None)
    for record in delta.files_upserted:
        counts[record.path] = len(record.references)
    from query.retrieval import lean_record

    lean = tuple(lean_record(record) for record in delta.files_upserted)
    if all(a is b for a, b in zip(lean, delta.files_upserted, strict=True)):
        return delta
    return delta.model_copy(update={"files_upserted": lean})
