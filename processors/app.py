"""The faust worker: agents are plumbing over IndexingPipeline.

``create_app`` declares everything on a fresh app (no module-global app, no import-time
agents). Topics are raw bytes: decoding and validation happen in the pipeline so that a
malformed message becomes a dead letter with its reason instead of a crashed agent.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import faust
import structlog
from aiokafka.partitioner import DefaultPartitioner
from faust.tables import TableManager

from processors.embedding_stream import EmbeddingStream, PrioritizingSink
from processors.fence import Fence, leave_group, refuse_commits
from processors.indexer import RepoIndex
from processors.neighborhood_stream import NeighborhoodStream, SnapshotSink
from processors.neighborhoods.recluster import ReclusterSettings
from processors.neighborhoods.reclusterer import Debounce, Reclusterer
from processors.pipeline import (
    DeltaObserver,
    DeltaObservers,
    IndexingPipeline,
    Message,
    PermanentPublishError,
    RetryPolicy,
    with_retry,
)
from processors.state_keeper import StateKeeper
from processors.state_restore import CheckedDeltaLog, NeighborhoodsWithState, SnapshotIndexes
from producers.metrics import produced
from producers.topics import Topics
from stores.dead_letters import DeadLetter
from stores.delta_seek import DeltaOffsets
from stores.deltas import GraphDelta, encode_parts
from stores.heap import HeapSettler
from stores.neighborhoods import NeighborhoodSnapshot, encode_snapshot
from stores.repo_state import RepoState
from stores.state_files import StateFiles
from stores.state_topic import StateTopic, part_key, snapshot_messages
from stores.text.dense_fill import DenseFill

log = structlog.get_logger(__name__)


MAX_DELTA_BYTES = 128 * 1024 * 1024
"""The largest message the worker's producer may send (the topics accept as much). Graph
deltas never come near it: every message of one is at most ``DELTA_PART_BYTES`` (1 MB,
stores/deltas.py, records of any size included); a neighborhood snapshot of a very large
repository is the one message that may exceed 1 MB."""


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    app_id: str
    bootstrap: str
    partitions: int
    datadir: str
    session_timeout_s: float = 6.0
    heartbeat_interval_s: float = 1.0
    commit_interval_s: float = 0.5
    batch_max: int = 200
    batch_within_s: float = 0.005
    topics: Topics = Topics()  # noqa: RUF009 (frozen, so one shared default is safe)
    recluster: ReclusterSettings = ReclusterSettings()  # noqa: RUF009 (frozen)
    debounce: Debounce = Debounce()  # noqa: RUF009 (frozen)
    recluster_tick_s: float = 0.1
    state_tick_s: float = 0.5


class TablelessManager(TableManager):
    """faust's table manager, without its start's fixed wait when no table is declared.

    faust sleeps 1 s as its table manager starts, for tables to be declared meanwhile,
    and the consumer subscribes only after it: a second of every worker's start (an
    `up`, a restart, a takeover; on Tansu a worker then waits ~3 s more for its group's
    first join, half its session timeout). The worker declares no table (its state is
    its own, restored from snapshots), so the manager starts at once; with a table, as
    faust does."""

    logger = logging.getLogger("faust.tables.tableless")  # under faust's: as quiet

    async def on_start(self) -> None:
        if self:
            await super().on_start()
            return
        await self._update_channels()
        await self.recovery.start()


class FaustDeltaSink:
    """DeltaSink over the app's producer: waits for the broker's acknowledgement.

    Every message is at most ``DELTA_PART_BYTES``, below any broker's default limit; a
    broker configured lower still refuses a part for good, and ``with_retry`` then raises
    ``PermanentPublishError`` instead of sending it again forever.

    `fence_writes` ends its writes for good: the broker came back empty (processors/fence.py)."""

    def __init__(
        self,
        app: faust.App,
        topics: Topics,
        partition_of: Callable[[str], int] | None = None,
        offsets: DeltaOffsets | None = None,
    ) -> None:
        self._app = app
        self._topics = topics
        self._partition_of = partition_of
        self._parts: dict[str, int] = {}  # repo -> parts of its last snapshot sent in parts
        self.offsets = offsets if offsets is not None else DeltaOffsets()
        self.fence = Fence()

    def fence_writes(self, reason: str) -> asyncio.Task[None] | None:
        """Send nothing more, pending batches included (`Fence.close`), commit no offset
        again (`refuse_commits`) and leave the consumer group (`leave_group`)."""
        if not self.fence.closed:
            refuse_commits(self._app.consumer, reason)
            leave_group(self._app.consumer, reason)
        return self.fence.close(reason, self._app.producer)

    async def publish_deltas(self, deltas: Sequence[GraphDelta]) -> None:
        await self.fence.hold()
        producer = self._app.producer
        topic = self._topics.graph_deltas
        firsts: list[GraphDelta | None] = []  # the delta a message begins, else None
        futures = []
        for d in deltas:
            for index, message in enumerate(encode_parts(d)):
                futures.append(
                    await producer.send(topic, d.repo.encode(), message, None, None, None)
                )
                firsts.append(d if index == 0 else None)
        sent = await asyncio.gather(*futures)
        for delta, metadata in zip(firsts, sent, strict=True):
            if delta is not None:  # issue 16: the offset its snapshot's header will carry
                self.offsets.note(delta.repo, delta.seq, metadata.offset)
        produced(topic, len(futures))

    async def publish_dead_letter(self, letter: DeadLetter) -> None:
        await self.fence.hold()
        await self._app.producer.send_and_wait(
            self._topics.dead_letters,
            letter.key,
            letter.model_dump_json().encode(),
            None,
            None,
            None,
        )
        produced(self._topics.dead_letters)

    async def publish_snapshot(self, snapshot: NeighborhoodSnapshot) -> None:
        await self.fence.hold()
        await self._app.producer.send_and_wait(
            self._topics.neighborhoods,
            snapshot.repo.encode(),
            encode_snapshot(snapshot),
            None,
            None,
            None,
        )
        produced(self._topics.neighborhoods)

    async def publish_state(self, repo: str, raw: bytes) -> None:
        """A repository's encoded state snapshot: one message, or parts on the
        repository's partition in order, then tombstones for the parts of a larger
        snapshot sent before it (stores/state_topic.py)."""
        await self.fence.hold()
        topic = self._topics.state_snapshots
        messages = snapshot_messages(repo, raw)
        parts = len(messages) if len(messages) > 1 else 0
        partition = None
        if parts or self._parts.get(repo, 0):
            assert self._partition_of is not None, "parts need the repository's partition"
            partition = self._partition_of(repo)
        send = self._app.producer.send_and_wait
        for key, value in messages:
            await send(topic, key, value, partition, None, None)
        for index in range(parts, self._parts.get(repo, 0)):
            await send(topic, part_key(repo, index), None, partition, None, None)
        self._parts[repo] = parts
        produced(topic, len(messages))


def create_app(
    config: WorkerConfig, pipeline: IndexingPipeline | None = None, **deps: Any
) -> faust.App:
    """A worker app. ``pipeline`` defaults to one built from ``deps['delta_log']``, with
    a NeighborhoodStream over ``deps['snapshot_log']`` following its deltas, and, given
    ``deps['dense_fill']`` (GAZETTEER_EMBED_IN=worker), an EmbeddingStream filling it,
    and, given ``deps['state_files']``, state snapshots (issue 16): a repository's index
    starts from its snapshot, and a `StateKeeper` writes them as repositories go quiet;
    given ``deps['state_topic']`` too, the snapshots on the broker are offered beside the
    files, and with ``deps['publish_state']`` the keeper publishes there as well. Given
    ``deps['parse_pool']`` (a ParsePool), a large scan's files are parsed in its
    processes (issue 21)."""
    app = faust.App(
        config.app_id,
        broker=f"kafka://{config.bootstrap}",
        datadir=config.datadir,
        store="memory://",
        key_serializer="raw",
        value_serializer="raw",
        web_enabled=False,
        topic_disable_leader=True,
        topic_partitions=config.partitions,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=config.session_timeout_s,
        broker_heartbeat_interval=config.heartbeat_interval_s,
        broker_commit_interval=config.commit_interval_s,
        producer_acks=-1,
        producer_max_request_size=MAX_DELTA_BYTES,
        TableManager=TablelessManager,
    )
    where = partitioner(config.partitions)
    sink = FaustDeltaSink(app, config.topics, where, deps.get("delta_offsets"))
    reclusterer = Reclusterer(config.recluster, config.debounce)
    fill: DenseFill | None = deps.get("dense_fill")
    embedding = None if fill is None else EmbeddingStream(fill, latest=reclusterer.snapshots.get)
    snapshots: SnapshotSink = sink if embedding is None else PrioritizingSink(sink, embedding)
    files: StateFiles | None = deps.get("state_files") if pipeline is None else None
    topic: StateTopic | None = deps.get("state_topic")
    publishing = bool(deps.get("publish_state")) and files is not None
    restoring = None if files is None else SnapshotIndexes(files, topic=topic, partition_of=where)
    snapshot_log = deps["snapshot_log"]
    if restoring is not None:
        snapshot_log = NeighborhoodsWithState(
            snapshot_log, restoring, where, functools.partial(republish, sink)
        )
    neighborhoods = NeighborhoodStream(reclusterer, snapshot_log, snapshots)
    keeper: StateKeeper | None = None
    if pipeline is None:
        # The neighborhoods restore first: the embedding stream reads their snapshots;
        # the heap is settled last, once all of them hold what the delta brought.
        followers: list[DeltaObserver] = [neighborhoods]
        if embedding is not None:
            followers.append(embedding)
        if files is not None:
            keeper = StateKeeper(
                files,
                lambda repo: state_of(repo),
                reclusterer.snapshots.get,
                publish=sink.publish_state if publishing else None,
                held_of=lambda state: held_of(state),
                held_offset_of=lambda state: held_offset_of(state),
                offset_of=sink.offsets.of,
                partition_of=where,
                resolved_of=lambda repo: resolved_of(repo),
            )
            followers.append(keeper)
        followers.append(HeapSettler())
        observer = DeltaObservers(*followers)
        delta_log = deps["delta_log"]
        if restoring is not None:
            delta_log = CheckedDeltaLog(delta_log, restoring)
        pipeline = IndexingPipeline(
            delta_log,
            sink,
            observer=observer,
            new_index=restoring or RepoIndex,
            parse_pool=deps.get("parse_pool"),
        )
    indexing = pipeline

    def held_of(state: RepoState) -> int:
        return state.seq if restoring is None else restoring.held(state, publishing)

    def held_offset_of(state: RepoState) -> int | None:
        return None if restoring is None else restoring.held_offset(state, publishing)

    def state_of(repo: str) -> RepoState | None:
        index = indexing.index(where(repo), repo)
        return index.state if index is not None else None

    def resolved_of(repo: str) -> bool:
        index = indexing.index(where(repo), repo)
        return index is not None and index.graph.state_resolved

    file_events = app.topic(
        config.topics.file_events,
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
    )

    @app.agent(file_events, name="gazetteer.index-file-events")
    async def index_file_events(stream: faust.StreamT) -> None:
        # Batches amortize the acknowledgement of the deltas; their offsets are
        # committed only after the batch is processed and its deltas acknowledged.
        batches = stream.take_events(config.batch_max, within=config.batch_within_s)  # type: ignore[attr-defined]
        async for events in batches:
            messages = [
                Message(
                    e.message.topic,
                    e.message.partition,
                    e.message.offset,
                    e.message.key,
                    e.message.value,
                )
                for e in events
            ]
            try:
                await pipeline.process_batch(messages)
            except Exception:  # last resort: the pipeline classifies; never stop committing
                log.exception("batch_unhandled", first_offset=messages[0].offset)

    @app.timer(config.recluster_tick_s, name="gazetteer.recluster")
    async def recluster_due() -> None:
        try:
            await neighborhoods.tick()
        except Exception:  # last resort: the stream classifies; the timer must go on
            log.exception("recluster_tick_failed")

    @app.timer(config.state_tick_s, name="gazetteer.state-snapshots")
    async def snapshot_due() -> None:
        if keeper is None:
            return
        try:
            await keeper.tick()
        except Exception:  # a full disk, or a bug: the log still holds the state; go on
            log.exception("state_snapshot_failed")

    joined = asyncio.Event()  # a join of the group completed (deploy/recovery.joined_within)
    eager: set[asyncio.Task[None]] = set()  # restores of assigned partitions, held till done

    @app.on_partitions_assigned.connect  # type: ignore[arg-type]
    async def note_joined(app: faust.App, assigned: set[Any], **_: Any) -> None:
        ours = sorted(tp.partition for tp in assigned if tp.topic == config.topics.file_events)
        log.info("worker_joined", partitions=ours)
        joined.set()
        if publishing and ours:
            # Every assigned partition restored now, not at its first event: the keeper
            # then publishes each repository whose snapshot on the broker is behind, so
            # that idle repositories have one too (what a finite retention waits for).
            task = asyncio.ensure_future(pipeline.restore_assigned(ours))
            eager.add(task)
            task.add_done_callback(eager.discard)

    @app.on_partitions_revoked.connect  # type: ignore[arg-type]
    async def forget_revoked(app: faust.App, revoked: set[Any], **_: Any) -> None:
        pipeline.revoke({tp.partition for tp in revoked if tp.topic == config.topics.file_events})

    app.gazetteer_pipeline = pipeline  # type: ignore[attr-defined]
    app.gazetteer_joined = joined  # type: ignore[attr-defined]
    app.gazetteer_neighborhoods = neighborhoods  # type: ignore[attr-defined]
    app.gazetteer_embedding = embedding  # type: ignore[attr-defined]
    app.gazetteer_state = keeper  # type: ignore[attr-defined]
    app.gazetteer_sink = sink  # type: ignore[attr-defined]
    return app


async def republish(sink: FaustDeltaSink, snapshot: NeighborhoodSnapshot) -> None:
    """Publish neighborhoods kept by a state snapshot again, retrying what is transient;
    a refusal is logged and the restore goes on (the next recluster publishes anew)."""
    try:
        await with_retry(functools.partial(sink.publish_snapshot, snapshot), log, RetryPolicy())
    except PermanentPublishError as exc:
        log.warning("neighborhoods_republish_refused", repo=snapshot.repo, error=str(exc))


def partitioner(partitions: int) -> Callable[[str], int]:
    """The partition the producers put a repository's events on (Kafka's default
    partitioner over its id, as producers.kafka_sink.by_repository)."""
    every = list(range(partitions))
    default = DefaultPartitioner()
    return lambda repo: int(default(repo.encode(), every, every))
