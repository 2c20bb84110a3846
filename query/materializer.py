"""Feeds the read model from the topics: graph deltas, producer statuses, dead letters,
neighborhood snapshots, ranking profiles, access tokens.

Each query replica reads every partition from the beginning without a consumer group
(replicas do not share work: each holds the whole read side), so a restarted replica
rebuilds exactly the state it served before. It reports ``ready`` once it has read up
to the end offsets it saw at start. After a broker reset (`reset`, issue 15) the next
``run`` reads the new topics from the start into an emptied model.

Sharing the worker's data dir (``gazetteer up``, issue 16), it also loads the worker's
state snapshots, and keeps each repository's churn ledger beside them (written by a
`ChurnKeeper` when the repository is quiet and at the end of a run, loaded with the
state snapshot it covers): a restart serves the churn history it served before.

Given the state-snapshots topic (``state_topic``, issue 16 §2), every replica, wherever
it runs, starts each repository from the latest snapshot published there before it
reads the graph deltas, and folds only the deltas after it (query/topic_snapshots.py); a
snapshot the log does not continue is refused, and the refused repository's partition
read again from its start: the log alone decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from typing import TYPE_CHECKING, Any

import structlog
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.partitioner import DefaultPartitioner
from pydantic import ValidationError

from producers.events import decode_source_status
from producers.topics import DEFAULT_TOPICS, Topics
from query.read_model import ReadModel
from query.shard import Shard
from stores.dead_letters import decode_dead_letter
from stores.delta_log import EndOffsets
from stores.deltas import DeltaAssembler, GraphDelta, decode_delta
from stores.heap import SETTLE_AFTER_CHANGES, settle
from stores.metrics import CONSUMER_LAG, consumed
from stores.neighborhoods import decode_snapshot
from stores.ranking import decode_profile
from stores.state_files import StateFiles
from stores.state_snapshot import ReaderSnapshot
from stores.state_topic import StateTopic
from stores.tokens import decode_token

if TYPE_CHECKING:
    from query.churn.durable import SavedLedger
    from query.churn_files import ChurnFiles, ChurnKeeper
    from query.topic_snapshots import TopicSnapshots

log = structlog.get_logger(__name__)

_PARTITIONER = DefaultPartitioner()
PROBE_TTL_S = 0.05
"""How long a look at the end of a sources partition serves the answers after it."""
PROBE_TIMEOUT_S = 0.25
"""How long an answer waits for that look; past it the answer says ``updating``."""
UNANSWERED_HOLD_S = 1.0
"""How long a look the broker did not answer in time keeps its repository ``updating``
in answers that do not look themselves (the list of repositories); the next answer
about the repository looks again."""

if TYPE_CHECKING:
    Restorable = tuple[ReaderSnapshot | None, SavedLedger | None]
    """A repository's state snapshot and the churn ledger saved beside it, as read."""


WHOLE = Shard()


def partition_of(repo: str, partitions: int) -> int:
    """The partition the producers' default partitioner puts ``repo``'s key on."""
    return int(_PARTITIONER(repo.encode(), list(range(partitions)), list(range(partitions))))


class Materializer:
    def __init__(
        self,
        model: ReadModel,
        bootstrap: str,
        end_offsets: EndOffsets,
        *,
        topics: Topics = DEFAULT_TOPICS,
        ready: asyncio.Event | None = None,
        state_files: StateFiles | None = None,
        state_topic: StateTopic | None = None,
        shard: Shard = WHOLE,
    ) -> None:
        self.model = model
        # Issue 18: the partitions this replica serves, so the repositories it holds.
        self.shard = shard
        model.serves = shard.describe()
        # Issue 16 §2: every repository started from its snapshot on the broker.
        # (The snapshots' and the churn ledgers' machinery is imported only where it is
        # used: the producers' materializer reads neither, issue 21.)
        self._snapshots: TopicSnapshots | None = None
        if state_topic is not None:
            from query.topic_snapshots import TopicSnapshots

            self._snapshots = TopicSnapshots(state_topic, model)
        # Issue 16: the worker's state snapshots, when this replica shares its data dir
        # (``gazetteer up``); a replica elsewhere reads the topics from their start.
        self._state_files = state_files
        self._churn_files: ChurnFiles | None = None
        self.churn_keeper: ChurnKeeper | None = None
        if state_files is not None:
            from query.churn_files import ChurnFiles, ChurnKeeper

            self._churn_files = ChurnFiles(state_files)
            self.churn_keeper = ChurnKeeper(self._churn_files, model)
        self._loading: dict[str, asyncio.Future[Restorable]] = {}
        # Loaded before any delta of theirs was read: the first one says if the log
        # continues the snapshot (repo -> the delta it covers); set aside: the log decides.
        self._unconfirmed: dict[str, int] = {}
        self._set_aside: set[str] = set()
        self._topics = topics
        self._bootstrap = bootstrap
        self._end_offsets = end_offsets
        self._targets: dict[TopicPartition, int] = {}
        self.ready = ready or asyncio.Event()
        self._parts = DeltaAssembler()
        self._unsettled = 0  # records applied since the heap was last settled
        self._settle_due = False
        self.messages = 0
        self.delta_messages = 0  # graph-delta messages fetched (issue 16: not the covered)
        self.lag: dict[str, int] = {}
        self._consumer: AIOKafkaConsumer | None = None
        self._prober: AIOKafkaConsumer | None = None  # the looks' own connection: see run
        self._probed: dict[TopicPartition, tuple[float, int]] = {}  # tp -> (when, end)
        # repo -> (its sources partition, the end a look found past the position, or None
        # when the look was not answered in time; when): `unread_statuses` until read.
        self._unread: dict[str, tuple[TopicPartition, int | None, float]] = {}
        self._asking: dict[TopicPartition, asyncio.Future[dict[TopicPartition, int]]] = {}

    async def probe_sources(self, repo: str) -> None:
        """Before an answer about ``repo``: does the broker hold producer statuses of it
        that this replica has not read? (``ReadModel.unread_statuses``)

        What the fetches reported can be old by the time a busy loop reads it (issue 15:
        under 20 clients, answers said `fresh` a second after a status was on the
        broker), so this asks the broker for the end of the repository's partition of
        the sources topic, at most every ``PROBE_TTL_S`` per partition. A status is one
        record per batch (sent and awaited one by one), so ListOffsets' answer is its
        end on Tansu too (whose quirk is to answer the last batch's base offset + 1)."""
        consumer = self._consumer
        if consumer is None or not self.ready.is_set():
            return
        partitions = consumer.partitions_for_topic(self._topics.sources)
        if not partitions:
            return
        tp = TopicPartition(self._topics.sources, partition_of(repo, len(partitions)))
        if not self.shard.owns(tp.partition):
            return  # another shard's repository: this replica does not answer for it
        now = time.monotonic()
        probed = self._probed.get(tp)
        if probed is None or now - probed[0] > PROBE_TTL_S:
            asking = self._asking.get(tp)
            if asking is None:  # one question in flight per partition, shared
                asker = self._prober or consumer
                asking = self._asking[tp] = asyncio.ensure_future(asker.end_offsets([tp]))
                asking.add_done_callback(functools.partial(self._asked, self._asking, tp))
            try:
                end = (await asyncio.wait_for(asyncio.shield(asking), PROBE_TIMEOUT_S))[tp]
            except (KafkaError, TimeoutError) as exc:
                # The broker does not answer in time: whether the producer reported since
                # cannot be told, so the answer cannot vouch either.
                log.debug("sources_probe_failed", error=repr(exc))
                self._mark_unread(repo, tp, None, now)
                return
            probed = self._probed[tp] = (now, end)
        if probed[1] > await consumer.position(tp):
            self._mark_unread(repo, tp, probed[1], now)
        else:
            self._unread.pop(repo, None)
            self.model.unread_statuses.discard(repo)

    def _mark_unread(self, repo: str, tp: TopicPartition, end: int | None, now: float) -> None:
        self._unread[repo] = (tp, end, now)
        self.model.unread_statuses.add(repo)

    async def settle_unread(self, consumer: AIOKafkaConsumer | None = None) -> None:
        """Clear the repositories whose statuses a look found unread once the read side
        has read up to the end it found, and those whose look went unanswered after
        ``UNANSWERED_HOLD_S``: without this, an answer that does not look (the list of
        repositories) said ``updating`` until an answer about the repository looked
        again, and a client polling only the list waited for ever."""
        consumer = consumer or self._consumer
        if consumer is None or not self._unread:
            return
        now = time.monotonic()
        for repo, (tp, end, when) in list(self._unread.items()):
            if end is None:
                done = now - when >= UNANSWERED_HOLD_S
            else:
                done = await consumer.position(tp) >= end
            if done:
                del self._unread[repo]
                self.model.unread_statuses.discard(repo)

    @staticmethod
    def _asked(
        held: dict[TopicPartition, asyncio.Future[dict[TopicPartition, int]]],
        tp: TopicPartition,
        asking: asyncio.Future[dict[TopicPartition, int]],
    ) -> None:
        """A look at a partition's end is over (its error, if any, was logged)."""
        if held.get(tp) is asking:
            del held[tp]
        if not asking.cancelled() and asking.exception() is not None:
            log.debug("sources_probe_ended", error=repr(asking.exception()))

    async def run(self, stop: asyncio.Event) -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self._bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        # The looks before answers (`probe_sources`) on a connection of their own: Apache
        # Kafka answers a connection's requests in order, so on the fetching consumer's a
        # look waited for the fetch in flight (up to its 500 ms wait for records), past the
        # look's 250 ms, and answers about quiet repositories said `updating` (issue 18:
        # 25 of 60, each a quarter second late, tests/e2e/test_sources_probe.py).
        prober = AIOKafkaConsumer(bootstrap_servers=self._bootstrap, enable_auto_commit=False)
        try:
            await prober.start()
        except BaseException:
            await consumer.stop()
            raise
        # Looks of a consumer of an earlier run (a broker since lost) are not this one's.
        self._consumer, self._prober = consumer, prober
        self._asking, self._probed, self._unread = {}, {}, {}
        self.model.unread_statuses.clear()
        try:
            partitions = await self._partitions(consumer)
            await self._load_topic(consumer)
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            self._targets = dict(await self._end_offsets(consumer, partitions))
            sought = self._seek(consumer)
            log.info(
                "materializer_started",
                partitions=len(partitions),
                shard=self.shard.describe(),
                backlog=sum(self._targets.values()) - sum(sought.values()),
                sought=sought,
            )
            wait_ms = 0  # the first look: topics empty at start are read at once (issue 21)
            while not stop.is_set():
                # 100 ms: an idle replica finds itself at the end of its topics ten times
                # a second, well within what it needs to say `fresh` (CAUGHT_UP_WITHIN_S).
                batches = await consumer.getmany(timeout_ms=wait_ms, max_records=2000)
                wait_ms = 100
                for tp, messages in batches.items():
                    deltas = tp.topic == self._topics.graph_deltas
                    if deltas:
                        self.delta_messages += len(messages)
                        await self._preload({m.key for m in messages if m.key})
                    for message in messages:
                        if deltas and not self._anchored(tp.partition, message):
                            await self._read_again(consumer)
                            break
                        self._apply(tp.topic, message.key, message.value)
                        if self._snapshots is not None and self._snapshots.rewind:
                            await self._read_again(consumer)
                            break
                    consumed(tp.topic, len(messages))
                await self._report_lag(consumer)
                await self.settle_unread(consumer)
                if not any(self.lag.values()):
                    self.model.caught_up()
                if not self.ready.is_set() and await self._caught_up(consumer):
                    if self._snapshots is not None and self._snapshots.ended():
                        await self._read_again(consumer)
                        continue
                    self.ready.set()
                    self.model.rebuilding = False
                    log.info(
                        "materializer_ready",
                        messages=self.messages,
                        delta_messages=self.delta_messages,
                        skipped=self.skipped,
                    )
                    self._settle_due = self._unsettled >= SETTLE_AFTER_CHANGES
                if self._settle_due:
                    self._settle()
                if self.churn_keeper is not None:
                    await self.churn_keeper.tick()
        finally:
            self._consumer = self._prober = None
            if self.churn_keeper is not None:
                await self.churn_keeper.flush()  # a clean stop: the ledgers as served
            try:
                await prober.stop()
            finally:
                await consumer.stop()

    async def _load_topic(self, consumer: AIOKafkaConsumer) -> None:
        """Each repository's latest snapshot on the state-snapshots topic, loaded before
        any delta is read (`TopicSnapshots.load`)."""
        snapshots = self._snapshots
        if snapshots is None:
            return
        count = len(consumer.partitions_for_topic(self._topics.graph_deltas) or ())
        partitions = self.shard.of(count)
        churn = self._churn_files
        await snapshots.load(partitions, churn.load if churn is not None else lambda repo: None)

    def _seek(self, consumer: AIOKafkaConsumer) -> dict[int, int]:
        """Each graph-delta partition the snapshots say where to start (`TopicSnapshots`:
        the covered deltas are not fetched), moved there; partition -> its start."""
        snapshots = self._snapshots
        if snapshots is None:
            return {}
        sought = {}
        for partition, seek in sorted(snapshots.seeks.items()):
            tp = TopicPartition(self._topics.graph_deltas, partition)
            if seek.start >= self._targets.get(tp, 0):  # a shorter log: another history
                snapshots.from_start([partition])
                continue
            consumer.seek(tp, seek.start)
            sought[partition] = seek.start
        return sought

    def _anchored(self, partition: int, message: Any) -> bool:
        snapshots = self._snapshots
        return snapshots is None or snapshots.anchored(
            partition, message.offset, message.key, message.value
        )

    async def _read_again(self, consumer: AIOKafkaConsumer) -> None:
        """The graph-delta partitions of the refused repositories, and those whose seek
        was refused, from their start."""
        assert self._snapshots is not None
        count = len(consumer.partitions_for_topic(self._topics.graph_deltas) or ())
        rewind, unseek = self._snapshots.rewind, self._snapshots.unseek
        numbers = {partition_of(r, count) for r in rewind} | unseek
        tps = sorted(TopicPartition(self._topics.graph_deltas, p) for p in numbers)
        rewind.clear()
        unseek.clear()
        self._snapshots.from_start(sorted(numbers))
        await consumer.seek_to_beginning(*tps)
        log.info("graph_deltas_read_again", partitions=[tp.partition for tp in tps])

    def _prefetch(self, repo: str) -> None:
        """Start decoding the snapshot of a repository this replica holds nothing of, off
        the loop: a producer's status comes before the worker's deltas, so the decoding
        overlaps the worker's own restore."""
        files = self._state_files
        if files is None or repo in self._loading:
            return
        view = self.model.repos.get(repo)
        if view is None or view.state.seq == 0:
            loading = asyncio.ensure_future(asyncio.to_thread(self._read, repo))
            loading.add_done_callback(functools.partial(self._decoded, repo))
            self._loading[repo] = loading

    def _read(self, repo: str) -> Restorable:
        """The repository's state snapshot and, with one, its saved churn ledger."""
        files = self._state_files
        snapshot = files.load_reader(repo) if files is not None else None
        churn = self._churn_files
        return snapshot, churn.load(repo) if churn is not None and snapshot is not None else None

    def _decoded(self, repo: str, loading: asyncio.Future[Restorable]) -> None:
        """A prefetched snapshot, decoded: loaded at once (on the loop) while the
        repository is still held empty, so that it is served before the worker's first
        delta arrives (a restarted worker takes longer to start than this)."""
        if self._loading.get(repo) is not loading or loading.cancelled():
            return  # a reset since: the next run looks again
        if self._aside(repo):
            return
        if (error := loading.exception()) is not None:
            log.error("state_snapshot_load_failed", repo=repo, error=repr(error))
            return
        decoded, ledger = loading.result()
        held = self.model.repos.get(repo)
        if decoded is not None and (held is None or held.state.seq == 0):
            from query.state_restore import load_snapshot

            snapshot = decoded.snapshot
            if load_snapshot(self.model, snapshot, ledger, decoded.postings):
                self._unconfirmed[repo] = snapshot.seq

    async def _preload(self, keys: set[bytes]) -> None:
        """Before the graph deltas of repositories this replica holds nothing of: their
        snapshots, loaded (once per repository and run) when ahead of what is held."""
        for key in sorted(keys):
            repo = key.decode(errors="replace")
            self._prefetch(repo)
            loading = self._loading.get(repo)
            if loading is None:
                continue
            with contextlib.suppress(Exception):  # logged by `_decoded`
                await asyncio.shield(loading)
            if not loading.cancelled() and loading.exception() is None:
                self._decoded(repo, loading)  # a no-op once loaded: only an empty view is

    def _confirm(self, first: GraphDelta) -> None:
        """The first delta read of a repository loaded from its snapshot: one after the
        snapshot's continues it (the worker restored the same file); one the snapshot
        covers means the log holds that range itself (a durable broker, or topics of
        another history): the snapshot is set aside and the log alone decides."""
        covered = self._unconfirmed.pop(first.repo)
        if first.seq <= covered:
            from query.state_restore import empty_view

            empty_view(self.model, first.repo)
            self._set_aside.add(first.repo)
            log.info(
                "state_snapshot_set_aside", repo=first.repo, seq=covered, first_delta=first.seq
            )

    def _ahead(self, delta: GraphDelta) -> None:
        """A delta past the next one of its repository: the log begins after what this
        replica holds (an embedded broker restarted empty; the worker continued from its
        state snapshot). The snapshot on disk that covers the delta before it, if any,
        is loaded first (issue 16); without one, the read model reports the gap.

        Loaded when a repository's deltas arrive rather than all at start: only the
        repositories this deployment's producers claim are held (the snapshots of other
        ``up`` runs on the same data dir stay on disk)."""
        if self._state_files is None or self._aside(delta.repo):
            return
        decoded = self._state_files.load_reader(delta.repo)
        if decoded is not None and decoded.snapshot.seq >= delta.seq - 1:
            churn = self._churn_files
            ledger = churn.load(delta.repo) if churn else None
            from query.state_restore import load_snapshot

            load_snapshot(self.model, decoded.snapshot, ledger, decoded.postings)

    def _aside(self, repo: str) -> bool:
        """Whether the log alone decides the repository: a snapshot of it was set aside
        (the file's) or refused (the topic's)."""
        snapshots = self._snapshots
        return repo in self._set_aside or (snapshots is not None and repo in snapshots.refused)

    @property
    def skipped(self) -> int:
        """Graph-delta messages a snapshot from the topic covered, left undecoded."""
        return self._snapshots.skipped if self._snapshots is not None else 0

    def reset(self, reason: str) -> None:
        """The topics were lost (a broker that came back empty): forget what was read.

        Call between two ``run``s: the next one reads the new topics from offset 0 into
        a model whose repositories are listed and empty, and reports ``ready`` again
        once it has caught up; until then the model answers ``reason``.
        """
        self.ready.clear()
        self.model.reset(reason)
        if self.churn_keeper is not None:
            self.churn_keeper.forget()  # the emptied views must not replace the files
        self._targets = {}
        self._parts = DeltaAssembler()
        self._loading = {}  # the next run looks at the snapshots again
        self._unconfirmed, self._set_aside = {}, set()
        if self._snapshots is not None:
            self._snapshots.reset()
        self._unsettled, self._settle_due = 0, False
        self.messages = self.delta_messages = 0
        self.lag = {}

    @property
    def _names(self) -> tuple[str, ...]:
        topics = self._topics
        return (
            topics.graph_deltas,
            topics.sources,
            topics.dead_letters,
            topics.neighborhoods,
            topics.ranking,
            topics.tokens,
        )

    async def _partitions(self, consumer: AIOKafkaConsumer) -> list[TopicPartition]:
        """Every partition of the topics read, the shard's only of those keyed by
        repository (the ranking profiles and the tokens are every replica's)."""
        for attempt in range(100):
            found = [
                TopicPartition(topic, p)
                for topic in self._names
                for p in sorted(consumer.partitions_for_topic(topic) or ())
            ]
            if {tp.topic for tp in found} == set(self._names):
                counts = {t: len(consumer.partitions_for_topic(t) or ()) for t in self._names}
                served = set(self.shard.of(counts[self._topics.graph_deltas]))
                everyones = {self._topics.ranking, self._topics.tokens}
                return [tp for tp in found if tp.topic in everyones or tp.partition in served]
            if attempt > 0:  # the first update usually finds them: looked at at once
                await asyncio.sleep(0.1)
            # A consumer without a subscription tracks no topics' metadata: ask for ours.
            client = consumer._client  # aiokafka offers no public way to do this
            client.set_topics(self._names)
            await client.force_metadata_update()
        raise RuntimeError(f"topics missing on the broker: {self._names}")

    async def _report_lag(self, consumer: AIOKafkaConsumer) -> None:
        """Per topic, the messages between the position and the high watermark the last
        fetches reported (or the end offsets seen at start, before any fetch)."""
        lag = dict.fromkeys(self._names, 0)
        for tp, target in self._targets.items():
            end = max(consumer.highwater(tp) or 0, target)
            lag[tp.topic] += max(0, end - await consumer.position(tp))
        for topic, behind in lag.items():
            CONSUMER_LAG.labels(topic).set(behind)
        self.lag = lag

    async def _caught_up(self, consumer: AIOKafkaConsumer) -> bool:
        for tp, end in self._targets.items():
            if await consumer.position(tp) < end:
                return False
        return True

    def _settle(self) -> None:
        """The read side after a large scan: out of the collector's way (stores.heap)."""
        seconds, frozen = settle("query")
        log.info("heap_settled", records=self._unsettled, seconds=seconds, frozen=frozen)
        self._unsettled, self._settle_due = 0, False

    def _apply(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        self.messages += 1
        if value is None:
            return
        try:
            if topic == self._topics.graph_deltas:
                snapshots = self._snapshots
                if snapshots is not None and snapshots.covers(key, value):
                    return
                whole = self._parts.add(decode_delta(value))
                if whole is not None and snapshots is not None and not snapshots.admits(whole):
                    return
                if whole is not None and whole.repo in self._unconfirmed:
                    self._confirm(whole)
                held = None if whole is None else self.model.repos.get(whole.repo)
                if whole is not None and held is not None and whole.seq <= held.state.seq:
                    whole = None  # covered by the state snapshot it was loaded from
                elif whole is not None and whole.seq > (held.state.seq if held else 0) + 1:
                    self._ahead(whole)
                if whole is not None:
                    if self.model.apply_delta(whole) and self.churn_keeper is not None:
                        self.churn_keeper.changed(whole.repo)
                    self._unsettled += whole.changes
                    if whole.barrier == "scan_completed" and self.ready.is_set():
                        self._settle_due = self._unsettled >= SETTLE_AFTER_CHANGES
            elif topic == self._topics.sources:
                status = decode_source_status(value)
                self.model.apply_status(status)
                self._prefetch(status.repo)
            elif topic == self._topics.neighborhoods:
                hoods = decode_snapshot(value)
                if self.model.apply_snapshot(hoods) and self.churn_keeper is not None:
                    self.churn_keeper.changed(hoods.repo)
            elif topic == self._topics.ranking:
                self.model.apply_ranking(decode_profile(value))
            elif topic == self._topics.tokens:
                self.model.tokens.apply(decode_token(value))
            elif topic == self._topics.dead_letters:
                repo = key.decode(errors="replace") if key else None
                self.model.apply_dead_letter(decode_dead_letter(value), repo)
        except (ValidationError, ValueError) as exc:
            log.error("read_side_message_rejected", topic=topic, error=str(exc)[:500])
