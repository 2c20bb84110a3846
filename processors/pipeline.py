"""The consumer boundary of the indexer: decode, restore, handle, publish, classify.

Faust agents hand every raw message of the file-events topic to ``process``. Failures
are classified once, here: a malformed message goes to dead letters at once; a failure
to publish (the broker is away) is retried in place with capped backoff, so nothing
is skipped; an unexpected error in the handler is a bug: it is logged with its
traceback, the message is dead-lettered, and the repository's in-memory index is
dropped so that the next event restores it from the delta log. No exception leaves.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog
from pydantic import ValidationError

from processors.indexer import RepoIndex
from processors.parse_pool import ParsePool
from processors.resolution_warmup import WarmUp, warm_up
from producers.events import EventBase, decode_file_event
from producers.refusal import permanent, unknown_server_error
from stores.dead_letters import DeadLetter, FailureKind
from stores.delta_log import DeltaLog, InMemoryDeltaLog
from stores.deltas import GraphDelta
from stores.metrics import DEAD_LETTERS, consumed, stage_timer
from stores.repo_state import RepoState

log = structlog.get_logger(__name__)


class DeltaSink(Protocol):
    async def publish_deltas(self, deltas: Sequence[GraphDelta]) -> None:
        """Send in order, keyed by repository; return once the broker acknowledged all.

        On a failure the pipeline sends the same deltas again, whole: a reader skips a
        delta it already applied and one that arrives before its predecessor. A large
        delta may go out as several messages (stores.deltas.encode_parts)."""
        ...

    async def publish_dead_letter(self, letter: DeadLetter) -> None: ...


class DeltaObserver(Protocol):
    """Follows the deltas of the repositories this worker owns (the reclusterer)."""

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        """A partition was restored from the delta log: its repositories' states."""
        ...

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        """Deltas the broker acknowledged, in order."""
        ...

    def forget(self, repos: Iterable[str]) -> None:
        """Repositories another worker owns now (or that will be restored again)."""
        ...


class DeltaObservers:
    """Several observers following the same deltas, each called in the order given."""

    def __init__(self, *observers: DeltaObserver) -> None:
        self._observers = observers

    async def restored(self, partition: int, states: Sequence[RepoState]) -> None:
        for observer in self._observers:
            await observer.restored(partition, states)

    def observed(self, deltas: Sequence[GraphDelta]) -> None:
        for observer in self._observers:
            observer.observed(deltas)

    def forget(self, repos: Iterable[str]) -> None:
        once = tuple(repos)
        for observer in self._observers:
            observer.forget(once)


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    first_delay_s: float = 0.2
    max_delay_s: float = 10.0
    unknown_attempts: int = 8
    """A broker's UNKNOWN_SERVER_ERROR (-1) is retried this many times before it counts
    as a refusal: Tansu answers it for a while after it restarted with new topics."""
    batch_attempts: int = 3
    """A batch that fails outside any one event's handling is tried again from the log
    this many times, then its events are dead-lettered (`process_batch`)."""


class IndexingPipeline:
    def __init__(
        self,
        delta_log: DeltaLog,
        sink: DeltaSink,
        *,
        clock: Callable[[], float] = time.time,
        retry: RetryPolicy = RetryPolicy(),
        new_index: Callable[[str], RepoIndex] = RepoIndex,
        observer: DeltaObserver | None = None,
        parse_pool: ParsePool | None = None,
        warm: bool = True,
    ) -> None:
        self._delta_log = delta_log
        self._warm = warm  # resolve restored repositories while idle (`_warm_later`)
        self._warming: dict[tuple[int, str], asyncio.Task[WarmUp]] = {}
        self._parse_pool = parse_pool
        self._decoded: dict[int, EventBase] = {}  # id(message) -> its event, in a batch
        self._observer = observer
        self._sink = sink
        self._clock = clock
        self._retry = retry
        self._new_index = new_index
        self._restored: set[int] = set()
        self._restoring: dict[int, asyncio.Lock] = {}  # one restore of a partition at a time
        self._revocations: dict[int, int] = {}  # partition -> times forgotten
        self._indexes: dict[int, dict[str, RepoIndex]] = {}
        self.positions: dict[tuple[str, int], int] = {}  # (topic, partition) -> next offset
        self.processed = 0
        self.dead_lettered = 0
        self._origins: dict[int, Message] = {}  # id(delta) -> its message, in a batch

    def index(self, partition: int, repo: str) -> RepoIndex | None:
        return self._indexes.get(partition, {}).get(repo)

    @property
    def warm_ups(self) -> tuple[asyncio.Task[WarmUp], ...]:
        """The background resolutions of restored repositories under way (`_warm_later`)."""
        return tuple(self._warming.values())

    def revoke(self, partitions: set[int]) -> None:
        """Forget partitions another worker now owns; they are restored if they return."""
        for tp in [tp for tp in self.positions if tp[1] in partitions]:
            del self.positions[tp]
        self._forget_indexes(partitions)

    async def process(self, message: Message) -> None:
        await self.process_batch([message])

    async def restore_assigned(self, partitions: Iterable[int]) -> None:
        """Restore these partitions now, before their first event (issue 16): the
        followers then take over every repository they hold, and the state keeper
        publishes those whose snapshot on the broker is behind, so that every repository
        of an assigned partition has one even if it is never edited again (what a finite
        retention of graph-deltas waits for). A failure is logged, never raised: the
        partition's first event restores it again, as before."""
        for partition in sorted(partitions):
            try:
                await self._with_retry(functools.partial(self._restore, partition, eager=True), log)
            except Exception:
                log.exception("partition_eager_restore_failed", partition=partition)

    async def process_batch(self, messages: Sequence[Message]) -> None:
        """Handle messages in order; their deltas are published together and
        acknowledged before this returns (one round trip per batch, not per event).

        A delta the broker refuses for good (`PermanentPublishError`: larger than the
        topic takes, though parts keep every message within 1 MB) is never retried
        forever: its event is dead-lettered, the batch's partitions are restored from
        the delta log (the deltas after it were computed on top of it), the event is
        consumed without changes and the rest of the batch is handled again.

        A failure outside one event's handling (a partition's restore, a follower of the
        deltas: a broker's hiccup, or a bug) drops what the batch's partitions hold in
        memory and handles the batch again from the log, where nothing of it was
        published (the deltas already there are replays): ``batch_attempts`` times, then
        its events are dead-lettered with the reason, never dropped unseen."""
        rest = list(messages)
        skip: Message | None = None
        failures, delay = 0, self._retry.first_delay_s
        while rest:
            try:
                await self._process(rest, skip)
                break
            except _Refused as refused:
                at = next(i for i, m in enumerate(rest) if m is refused.message)
                await self._dead_letter(refused.message, "rejected", refused.reason)
                log.error("delta_refused", offset=refused.message.offset, reason=refused.reason)
                self._forget_indexes({m.partition for m in rest})
                rest, skip = rest[at:], refused.message
            except Exception as exc:
                failures += 1
                self._forget_indexes({m.partition for m in rest})
                if failures > self._retry.batch_attempts:
                    log.exception("batch_dead_lettered", events=len(rest), attempts=failures)
                    for message in rest:
                        await self._dead_letter(message, "bug", f"its batch failed: {_reason(exc)}")
                    break
                log.warning("batch_retried", error=repr(exc), attempt=failures, delay_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._retry.max_delay_s)
        for message in messages:
            self.positions[(message.topic, message.partition)] = message.offset + 1

    async def _process(self, messages: Sequence[Message], skip: Message | None) -> None:
        pending: list[GraphDelta] = []
        self._origins.clear()
        prepared = await self._prepare(messages)
        try:
            for message in messages:
                delta = await self._handle(message, pending, skip=message is skip)
                if delta is not None:
                    pending.append(delta)
                    self._origins[id(delta)] = message
        finally:
            self._decoded.clear()
            for index in prepared:
                index.unprepare()
        await self._publish(pending)

    async def _prepare(self, messages: Sequence[Message]) -> list[RepoIndex]:
        """With a parse pool (issue 21): decode the batch once, and have each
        repository's index parse ahead, in the pool, the files of a scan the batch brings
        (`RepoIndex.prepare`; the pool takes only the files of a large scan). A message that does
        not decode is left to `_handle`, which dead-letters it."""
        pool = self._parse_pool
        if pool is None:
            return []
        groups: dict[tuple[int, str], list[EventBase]] = {}
        for message in messages:
            try:
                event = _decode(message)
            except (ValidationError, ValueError, UnicodeDecodeError):
                continue
            self._decoded[id(message)] = event
            groups.setdefault((message.partition, event.repo), []).append(event)
        prepared: list[RepoIndex] = []
        for (partition, repo), events in groups.items():
            index = await self._index(partition, repo)
            if index.prepare(events, pool):
                prepared.append(index)
        return prepared

    def _forget_indexes(self, partitions: set[int]) -> None:
        """Drop what these partitions hold in memory; the next event restores them."""
        for partition in partitions:
            self._revocations[partition] = self._revocations.get(partition, 0) + 1
            self._restored.discard(partition)
            dropped = self._indexes.pop(partition, None)
            if dropped and self._observer is not None:
                self._observer.forget(dropped)

    async def _handle(
        self, message: Message, pending: list[GraphDelta], *, skip: bool = False
    ) -> GraphDelta | None:
        consumed(message.topic)
        where = {"topic": message.topic, "partition": message.partition, "offset": message.offset}
        with structlog.contextvars.bound_contextvars(**where):
            try:
                with stage_timer("decode"):
                    event = self._decoded.get(id(message)) or _decode(message)
            except (ValidationError, ValueError, UnicodeDecodeError) as exc:
                await self._dead_letter(message, "malformed", _reason(exc))
                log.warning("event_malformed", reason=_reason(exc))
                return None
            # Every line logged while the event is handled says which event it was.
            with structlog.contextvars.bound_contextvars(**event_context(event)):
                if skip:  # its delta was refused: consume it without changes
                    index = await self._index(message.partition, event.repo)
                    return index.skip(event, self._clock())
                return await self._handle_event(message, event, pending)

    async def _handle_event(
        self, message: Message, event: EventBase, pending: list[GraphDelta]
    ) -> GraphDelta | None:
        """Apply the event if it is next; a replay is skipped silently (expected after a
        restart); any other position (fenced, forged, unclaimed, out of order: see
        processors.indexer.Verdict) is dead-lettered as ``rejected`` and never applied."""
        index = await self._index(message.partition, event.repo)
        verdict = index.judge(event)
        if verdict.position == "replay":
            log.debug("event_replayed")
            return None
        if verdict.position != "next":
            reason = f"{_REJECTED[verdict.position]}: {verdict.reason}"
            log.warning("event_rejected", position=verdict.position, reason=reason)
            await self._dead_letter(message, "rejected", reason)
            return None
        now = self._clock()
        try:
            with stage_timer("handle"):
                delta = index.handle(event, now, verdict=verdict)
        except Exception as exc:  # a bug: keep the partition going, keep the evidence
            log.exception("event_failed")
            await self._dead_letter(message, "bug", _reason(exc))
            # The index may be half-changed: rebuild it from the log (once what this
            # batch produced is in it), then consume the event without changes so that
            # the events after it stay in sequence.
            await self._publish(pending)
            self._indexes.get(message.partition, {}).pop(event.repo, None)
            self._restored.discard(message.partition)
            index = await self._index(message.partition, event.repo)
            delta = index.skip(event, now)
        if delta is not None:
            log.debug("event_indexed", delta_seq=delta.seq, changes=delta.changes)
        return delta

    async def _publish(self, deltas: list[GraphDelta]) -> None:
        if deltas:
            batch = list(deltas)
            with stage_timer("publish"):
                try:
                    await self._with_retry(lambda: self._sink.publish_deltas(batch), log)
                except PermanentPublishError:
                    await self._publish_singly(batch)
            self.processed += len(batch)
            deltas.clear()
            if self._observer is not None:
                self._observer.observed(batch)

    async def _publish_singly(self, batch: list[GraphDelta]) -> None:
        """One delta at a time, to learn which one the broker refuses (`_Refused`)."""
        for at, delta in enumerate(batch):
            try:
                await self._with_retry(functools.partial(self._sink.publish_deltas, [delta]), log)
            except PermanentPublishError as exc:
                if self._observer is not None and at:
                    self._observer.observed(batch[:at])
                origin = self._origins.get(id(delta))
                if origin is None:  # a skip delta refused: nothing smaller to send
                    raise
                raise _Refused(origin, f"refused by the broker: {exc.__cause__!r}") from exc

    async def _index(self, partition: int, repo: str) -> RepoIndex:
        await self._with_retry(lambda: self._restore(partition), log)
        indexes = self._indexes.setdefault(partition, {})
        index = indexes.get(repo)
        if index is None:
            index = indexes[repo] = self._new_index(repo)
            if index.state.seq and self._observer is not None:
                # Issue 16: restored from a state snapshot, not from this log (an embedded
                # broker restarted empty): its followers take it over as after a restore.
                await self._observer.restored(partition, [index.state])
            self._warm_later(partition, repo, index)
        return index

    def _warm_later(self, partition: int, repo: str, index: RepoIndex) -> None:
        """Resolve a repository restored from a resolved snapshot in the background
        (processors/resolution_warmup.py), while it is still this partition's index, so
        that its first change costs what any change costs (sympy: ~10 s otherwise)."""
        if not self._warm or not index.graph.warmable:
            return
        key = (partition, repo)

        def current() -> bool:
            return self._indexes.get(partition, {}).get(repo) is index

        task = asyncio.ensure_future(warm_up(repo, index, current))
        self._warming[key] = task

        def done(finished: asyncio.Task[WarmUp]) -> None:
            if self._warming.get(key) is finished:
                del self._warming[key]
            if not finished.cancelled() and finished.exception() is not None:
                log.error("resolution_warm_failed", repo=repo, exc_info=finished.exception())

        task.add_done_callback(done)

    async def _restore(self, partition: int, *, eager: bool = False) -> None:
        """Restore a partition once. An eager restore (`restore_assigned`) whose
        partition was revoked meanwhile keeps nothing; one an event asked for keeps what
        it folded, as the event needs it (faust revokes once the batch is done)."""
        lock = self._restoring.setdefault(partition, asyncio.Lock())
        async with lock:  # an eager restore and the first event's wait for one another
            if partition in self._restored:
                return
            with stage_timer("restore"):
                await self._restore_partition(partition, eager)

    async def _restore_partition(self, partition: int, eager: bool = False) -> None:
        forgotten = self._revocations.get(partition, 0) if eager else None
        deltas = await self._delta_log.read_partition(partition)
        indexes: dict[str, RepoIndex] = {}
        early = 0
        for delta in deltas:
            index = indexes.get(delta.repo) or indexes.setdefault(
                delta.repo, self._new_index(delta.repo)
            )
            if delta.seq > index.state.seq + 1:
                early += 1  # overtook its predecessor; the resent batch brings it again
                continue
            index.apply(delta)
        if early:
            log.warning("delta_log_out_of_order", partition=partition, deltas=early)

        def revoked() -> bool:
            return forgotten is not None and self._revocations.get(partition, 0) != forgotten

        if not revoked() and self._observer is not None:
            await self._observer.restored(partition, [i.state for i in indexes.values()])
        if revoked():  # another worker's now
            if self._observer is not None:
                self._observer.forget(indexes)
            log.info("partition_restore_dropped", partition=partition, reason="revoked meanwhile")
            return
        self._indexes[partition] = indexes
        self._restored.add(partition)
        log.info("partition_restored", partition=partition, deltas=len(deltas), repos=len(indexes))
        for repo, index in sorted(indexes.items()):
            self._warm_later(partition, repo, index)

    async def _dead_letter(self, message: Message, failure: FailureKind, reason: str) -> None:
        letter = DeadLetter(
            failure=failure,
            reason=reason,
            topic=message.topic,
            partition=message.partition,
            offset=message.offset,
            key=message.key,
            value=message.value,
            failed_at=self._clock(),
        )
        await self._with_retry(lambda: self._sink.publish_dead_letter(letter), log)
        self.dead_lettered += 1
        DEAD_LETTERS.labels(failure).inc()

    async def _with_retry(self, send: Callable[[], object], bound: structlog.BoundLogger) -> None:
        await with_retry(send, bound, self._retry)


class _Refused(Exception):
    """A delta the broker refused for good, and the message it came from."""

    def __init__(self, message: Message, reason: str) -> None:
        super().__init__(reason)
        self.message, self.reason = message, reason


class PermanentPublishError(Exception):
    """The broker refused a publish for a reason no retry changes (a message above the
    topic's limit, a topic that may not be written): raised by ``with_retry`` instead of
    retrying forever; ``__cause__`` is the client's error."""


async def with_retry(
    send: Callable[[], object], bound: structlog.BoundLogger, policy: RetryPolicy
) -> None:
    """Call ``send`` until it succeeds: transient failures (the broker away, the client's
    retriable errors, timeouts) are retried with capped exponential backoff, without end;
    a client error that is not retriable raises `PermanentPublishError` at once; anything
    else is a bug and raises as it is."""
    delay = policy.first_delay_s
    unknown = 0
    while True:
        try:
            await send()  # type: ignore[misc]
            return
        except (TimeoutError, OSError, ConnectionError) as exc:
            bound.warning("publish_retried", error=repr(exc), delay_s=delay)
        except Exception as exc:  # the client's own errors (KafkaError and kin)
            if type(exc).__module__.split(".")[0] not in ("aiokafka", "kafka", "faust"):
                raise
            unknown += unknown_server_error(exc)
            if permanent(exc) and not 0 < unknown <= policy.unknown_attempts:
                bound.error("publish_refused", error=repr(exc))
                raise PermanentPublishError(f"refused by the broker: {exc!r}") from exc
            bound.warning("publish_retried", error=repr(exc), delay_s=delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, policy.max_delay_s)


_REJECTED = {
    "gap": "out of order",
    "fenced": "fenced",
    "forged": "forged",
    "unclaimed": "unclaimed",
}
"""The word a rejected event's dead letter starts with, per position."""


def _decode(message: Message) -> EventBase:
    if message.value is None:
        raise ValueError("empty message value")
    event = decode_file_event(message.value)
    if message.key is not None and message.key.decode(errors="replace") != event.repo:
        raise ValueError(f"key {message.key!r} is not the event's repository {event.repo!r}")
    return event


def event_context(event: EventBase) -> dict[str, object]:
    """What identifies an event in the logs: its repository, path and commit, and its
    id (the producer's session and sequence number)."""
    context: dict[str, object] = {
        "repo": event.repo,
        "producer": event.producer,
        "seq": event.seq,
        "kind": getattr(event, "kind", type(event).__name__),
    }
    path = getattr(event, "path", None)
    if path is not None:
        context["path"] = path
    commit = getattr(event, "commit", None) or getattr(event, "sha", None)
    if commit is not None:
        context["commit"] = commit
    return context


def _reason(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 2000 else text[:2000] + "..."


class InMemoryDeltaSink:
    """A DeltaSink that appends to lists (and optionally to a delta log): the test double."""

    def __init__(
        self,
        log_: InMemoryDeltaLog | None = None,
        partition_of: Callable[[str], int] = lambda repo: 0,
    ) -> None:
        self.deltas: list[GraphDelta] = []
        self.dead_letters: list[DeadLetter] = []
        self._log = log_
        self._partition_of = partition_of

    async def publish_deltas(self, deltas: Sequence[GraphDelta]) -> None:
        for delta in deltas:
            self.deltas.append(delta)
            if self._log is not None:
                self._log.append(self._partition_of(delta.repo), delta)

    async def publish_dead_letter(self, letter: DeadLetter) -> None:
        self.dead_letters.append(letter)
