"""Versioned topic names: the wire between the producers, the processors and the readers.

A breaking change to a message contract gets a new topic version (``.v2``) so that
old and new consumers never read each other's messages. A namespace prefixes every
name, so that several deployments (or test runs) can share one cluster.

- ``file-events``: FileChanged, FileDeleted, CommitObserved and the scan/commit
  barriers, keyed by repository;
- ``sources``: SourceStatus heartbeats of the producers, keyed by producer session
  (`status_key`) on their repository's partition;
- ``graph-deltas``: GraphDelta records of the processors, keyed by repository: the
  materialized state's log;
- ``dead-letters``: events that could not be processed, with the reason, keyed by the
  original key;
- ``neighborhoods``: NeighborhoodSnapshot records of the reclusterer, keyed by
  repository: each recluster's neighborhoods, file standings and changes;
- ``ranking``: RankingProfile records (the search weights), keyed by repository or
  ``*``: stored with the index, so every query replica ranks with the same weights;
- ``tokens``: TokenRecord records (stores/tokens.py: the access tokens' hashes, scopes
  and repositories), keyed by token id: every query replica authenticates from them;
- ``state-snapshots``: each repository's state snapshot (stores/state_snapshot.py), one
  message each, keyed by repository on its graph deltas' partition: where a new replica
  or a worker on another machine starts a repository instead of delta 1 (issue 16).

Each topic carries its own broker config (retention, compaction), chosen from who reads
it, from where, and what a reader starting today needs of its history (issue 16); see
the ``*_CONFIG`` constants. Apache Kafka applies them; the embedded Tansu ignores them
and keeps every record in memory until ``up`` stops (deploy/topics_admin.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

DEFAULT_NAMESPACE = "gazetteer"

_MINUTE_MS = 60 * 1000
_DAY_MS = 24 * 60 * _MINUTE_MS


def _config(**values: str) -> Mapping[str, str]:
    """A topic config, read-only: Kafka names have dots, so ``retention_ms`` is
    ``retention.ms``."""
    return MappingProxyType({name.replace("_", "."): value for name, value in values.items()})


FILE_EVENTS_CONFIG = _config(cleanup_policy="delete", retention_ms=str(7 * _DAY_MS))
"""Seven days, Kafka's default. The only reader is the worker group, from its committed
offsets (faust); a restarted worker restores its state from graph-deltas, not from these
events (the lease and its key ride in the deltas), and a new producer session scans or
reconciles from the indexed commit. So the history a reader needs is what the group has
not committed yet: the retention must outlast any outage of the whole worker group. A
group gone longer loses the events in between (the repositories stay ``updating``, the
sequence has a gap); restarting the producers (``watch``) reconciles them."""

SOURCES_CONFIG = _config(
    cleanup_policy="compact,delete",
    retention_ms=str(30 * _DAY_MS),
    min_compaction_lag_ms=str(10 * _MINUTE_MS),
    segment_ms=str(10 * _MINUTE_MS),
)
"""The read side folds the last status of each producer session (``ReadModel.statuses``,
``known_epoch``), and freshness follows the last one of the greatest lease: both are the
latest record of a session's key (`status_key`), which compaction keeps, so a replica
started after compaction answers as one that read every heartbeat. The one thing folded
from older statuses is the batch clock (the emit time of the oldest pending batch, for
``lag_ms``): ``min.compaction.lag.ms`` keeps ten minutes of them, so the lag of a backlog
younger than that is exact and that of an older one is at least ten minutes instead of
its true age. ``segment.ms`` closes a segment every ten minutes (the open one is never
compacted), so a new replica reads at most ~20 minutes of heartbeats per live session
(~240 at the default 5 s) plus one record per other session, instead of every heartbeat
since the first. ``delete`` after 30 days drops the sessions that ended that long ago
(every `up` or `watch` start is a new session): their repository then reads "no producer
has reported" (stale) instead of "the producer stopped" (stale), and its epoch is known
from the state's lease. The lease watch of the producers reads from the end: no history."""

GRAPH_DELTAS_CONFIG = _config(cleanup_policy="delete", retention_ms="-1")
"""Everything, for now. Readers start a repository from its snapshot on the
state-snapshots topic and fold only the deltas after it (the ones before are fetched and
skipped undecoded, `stores.deltas.peek_seq`), so the history costs bytes on the wire, not
folding. A finite retention is safe only once every repository's snapshot on the topic
covers every delta older than the retention, which does not hold yet (docs/ARCHITECTURE.md,
"State snapshots on the broker"): a worker restores every partition it is assigned at once
and publishes each repository whose snapshot on the topic is behind, idle ones included,
one never quiet is published every 300 s, and one above the message limit goes in parts;
but a refused snapshot leaves the log alone to decide (with a retention, a log without its
beginning: a gap reported until a rescan), and a worker group down longer than the
retention after acknowledging deltas it had not published loses them (as file-events).
A compacted topic keyed by repository would keep one delta per repository, never the
state."""

DEAD_LETTERS_CONFIG = _config(cleanup_policy="delete", retention_ms=str(30 * _DAY_MS))
"""Thirty days: a letter is for an operator (it holds the reason and the original key
and value, to replay by hand), and the read side keeps only the last 100, a count, and
whether a repository had an event rejected in the last 5 minutes. A replica started later
counts the letters of the last 30 days."""

NEIGHBORHOODS_CONFIG = _config(cleanup_policy="delete", retention_ms="-1")
"""Everything, for now. The worker's warm start (stores/snapshot_log.py) and the read
side's current neighborhoods need only the latest snapshot of each repository, which
compaction keyed by repository would keep; but the read side's churn ledger attributes
every snapshot to the commit it was built after, and keeps the recent changes, so a
replica started on a compacted topic would serve a poorer churn history. Compaction
waits for the state snapshots that carry the churn ledger (issue 16 §2)."""

RANKING_CONFIG = _config(cleanup_policy="compact", retention_ms="-1")
"""The latest profile of each scope (its key) is all the read side keeps. (It keeps the
one with the greatest ``set_at``, which compaction keeps too unless two operators' clocks
disagree; and a profile naming a weight this version does not know is refused in favour
of the one before, which compaction may have removed: ``ranking set`` checks the names
before it publishes.) Tiny: compaction need not hurry. Kafka refuses a record without a
key on a compacted topic; ``ranking set`` and the sink key every one."""

TOKENS_CONFIG = _config(cleanup_policy="compact", retention_ms="-1")
"""The latest record of each token id (its key) is all a replica keeps, a revocation
included: compaction keeps it, so a revoked token stays revoked (issue 19)."""

STATE_SNAPSHOTS_CONFIG = _config(
    cleanup_policy="compact",
    retention_ms="-1",
    segment_ms=str(10 * _MINUTE_MS),
)
"""The last snapshot of each repository (its key) is all a reader takes: compaction
keeps it, so the topic costs about one snapshot per repository, the size of the code,
whatever the history. ``segment.ms`` closes a segment every ten minutes (the open one is
never compacted), so a reader fetches at most about ten minutes of superseded snapshots
(a repository is published at most every 30 s, `processors.state_keeper.KeepPolicy`) beyond
what the cleaner has not reached yet (``min.cleanable.dirty.ratio``: half the log). The
embedded Tansu neither compacts nor deletes and keeps every message in memory until it
stops: there the worker does not publish unless told to (``GAZETTEER_SNAPSHOTS_ON_BROKER``)
and the query side of ``up`` reads the data dir's files instead; told to, it keeps at most
one snapshot per repository per 30 s of changes (django: 6.5 MB each), until ``up`` stops."""


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    config: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), hash=False, compare=True
    )
    """Broker configs of the topic (``retention.ms``, ``cleanup.policy``, ...), sent when
    it is created and converged on an existing topic (Apache Kafka only)."""


STATUS_KEY_SEPARATOR = b"\x00"
"""Between the repository and the producer session in a `status_key`. Repository ids are
slugs and host names have no NUL, so the repository is the part before the first."""


def status_key(repo: str, producer: str) -> bytes:
    """The key of a SourceStatus on the sources topic: one per producer session, so that
    compaction keeps the last status of every session (the owner's and the fenced ones'),
    not only the last of the repository, which may be a fenced session's."""
    return repo.encode() + STATUS_KEY_SEPARATOR + producer.encode()


def partition_key(key: bytes) -> bytes:
    """The part of a message key that chooses its partition: the repository. A
    `status_key` lands on its repository's partition, as every other topic's key does
    (``query.materializer.partition_of`` looks there); a repository key is its own."""
    return key.split(STATUS_KEY_SEPARATOR, 1)[0]


@dataclass(frozen=True, slots=True)
class Topics:
    namespace: str = DEFAULT_NAMESPACE

    @property
    def file_events(self) -> str:
        return f"{self.namespace}.file-events.v1"

    @property
    def sources(self) -> str:
        return f"{self.namespace}.sources.v1"

    @property
    def graph_deltas(self) -> str:
        return f"{self.namespace}.graph-deltas.v1"

    @property
    def dead_letters(self) -> str:
        return f"{self.namespace}.dead-letters.v1"

    @property
    def neighborhoods(self) -> str:
        return f"{self.namespace}.neighborhoods.v1"

    @property
    def ranking(self) -> str:
        return f"{self.namespace}.ranking.v1"

    @property
    def tokens(self) -> str:
        return f"{self.namespace}.tokens.v1"

    @property
    def state_snapshots(self) -> str:
        return f"{self.namespace}.state-snapshots.v1"

    def specs(self, partitions: int) -> tuple[TopicSpec, ...]:
        """Every topic of the pipeline, with its own config.

        The keyed topics share one partition count so that a repository's file events
        and its graph deltas land on the same partition number: the worker that owns a
        repository's input partition restores it from the same partition of the log.
        """
        return (
            TopicSpec(self.file_events, partitions, FILE_EVENTS_CONFIG),
            TopicSpec(self.sources, partitions, SOURCES_CONFIG),
            TopicSpec(self.graph_deltas, partitions, GRAPH_DELTAS_CONFIG),
            TopicSpec(self.dead_letters, partitions, DEAD_LETTERS_CONFIG),
            TopicSpec(self.neighborhoods, partitions, NEIGHBORHOODS_CONFIG),
            TopicSpec(self.ranking, partitions, RANKING_CONFIG),
            TopicSpec(self.tokens, partitions, TOKENS_CONFIG),
            TopicSpec(self.state_snapshots, partitions, STATE_SNAPSHOTS_CONFIG),
        )


DEFAULT_TOPICS = Topics()


def all_topics(partitions: int, topics: Topics = DEFAULT_TOPICS) -> tuple[TopicSpec, ...]:
    return topics.specs(partitions)
