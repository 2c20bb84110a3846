"""A part that outlives its broker: run it in generations, a new one after each reset.

The process's `BrokerWatch` says when the broker lost our topics (deploy/broker_watch.py);
`recover_in_place` then ends the part's current generation (the worker's faust app,
the query service's read loop, the producers' sessions), ensures the topics and starts
the next generation, which knows what it recovers from (`Recovery`).

A generation may also give up by itself: one that raises `GenerationStalled` (a worker
whose consumer never joined its group or never fetched a partition it was given:
`joined_and_fetching`) is followed by a new one, the topics ensured first, instead of
ending the part.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from deploy.broker_watch import BrokerReset, BrokerWatch
from deploy.metrics_server import FetchState

log = structlog.get_logger(__name__)


class GenerationStalled(Exception):
    """Raised by a generation that cannot make progress; the part starts the next one."""


async def joined_and_fetching(
    consumer: FetchState,
    topic: str,
    joined: asyncio.Event,
    stop: asyncio.Event,
    timeout_s: float,
    *,
    every_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return at ``stop``; raise `GenerationStalled` when the consumer has not completed a
    join of its group (``joined``: with partitions or none) within ``timeout_s``, or when
    a partition of ``topic`` has been assigned to it that long with no fetch answered
    (no high watermark: a fetch is answered within a second, messages or none).

    Why: after a broker reset on Apache Kafka, a new worker's consumer asked a coordinator
    that was not ready yet and was never given its partitions' messages, retrying without
    end (about one reset in fifteen); a new consumer is given them at once."""
    started = clock()
    unfetched: dict[Any, float] = {}  # assigned partition -> since when without a fetch
    while not stop.is_set():
        now = clock()
        if not joined.is_set():
            if now - started >= timeout_s:
                raise GenerationStalled(f"no join of the consumer group within {timeout_s:g} s")
        else:
            assigned = {tp for tp in consumer.assignment() if tp.topic == topic}
            for tp in [tp for tp in unfetched if tp not in assigned]:
                del unfetched[tp]
            for tp in assigned:
                if consumer.highwater(tp) is None:
                    unfetched.setdefault(tp, now)
                else:
                    unfetched.pop(tp, None)
            late = sorted(
                tp.partition for tp, since in unfetched.items() if now - since >= timeout_s
            )
            if late:
                raise GenerationStalled(
                    f"partitions {late} of {topic} assigned {timeout_s:g} s ago and never fetched"
                )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)


@dataclass(slots=True)
class Recovery:
    """What a part's generation knows of the reset it recovers from (None: first start)."""

    part: str
    after: BrokerReset | None
    _said: bool = False

    def done(self, **facts: object) -> None:
        """The part serves again: said once, with the seconds since the reset was seen."""
        if self.after is None or self._said:
            return
        self._said = True
        seconds = round(time.time() - self.after.at, 2)
        log.info("broker_reset_recovered", part=self.part, seconds=seconds, **facts)


_NEXT = {
    "worker": "stopping the worker; a new one starts on the recreated topics",
    "query": "dropping the read model; re-reading the new topics from offset 0",
    "sources": "ending the producer sessions; new ones do a full scan",
}


async def recover_in_place(
    part: str,
    watch: BrokerWatch | None,
    stop: asyncio.Event,
    generation: Callable[[asyncio.Event, Recovery], Awaitable[None]],
    *,
    ensure_topics: Callable[[], Awaitable[object]],
    on_detected: Callable[[BrokerReset], None] = lambda reset: None,
    grace_s: float = 10.0,
) -> None:
    """Run ``generation(its_stop, recovery)`` until ``stop``; when the broker resets,
    end it (``on_detected`` first; cancelled after ``grace_s``), ensure the topics
    (``ensure_topics``: recreating empty ones with the wrong count) and run a new one."""
    if watch is None:
        while True:
            try:
                await generation(stop, Recovery(part, None))
                return
            except GenerationStalled as exc:
                _stalled(part, exc)
                if stop.is_set():
                    return
                await ensure_topics()
    async with watch.watching():
        recovery = Recovery(part, None)
        while True:
            epoch, its_stop = watch.epoch, asyncio.Event()
            running = asyncio.ensure_future(generation(its_stop, recovery))
            resetting = asyncio.ensure_future(watch.next_reset(epoch))
            stopping = asyncio.ensure_future(stop.wait())
            try:
                await asyncio.wait(
                    [running, resetting, stopping], return_when=asyncio.FIRST_COMPLETED
                )
            except asyncio.CancelledError:
                running.cancel()  # the part is cancelled: so is its generation
                raise
            finally:
                resetting.cancel()
                stopping.cancel()
            if running.done() and not stop.is_set() and _stalled_on(running):
                _stalled(part, running.exception())
                its_stop.set()
                await ensure_topics()
                continue  # the next generation, recovering from what this one did
            if running.done() or stop.is_set():
                its_stop.set()
                await running  # a generation that ended (or failed) on its own ends the part
                return
            reset = watch.resets[epoch]
            log.warning(
                "broker_reset_detected", part=part, reason=reset.reason, next=_NEXT.get(part)
            )
            on_detected(reset)
            its_stop.set()
            try:
                await asyncio.wait_for(asyncio.shield(running), grace_s)
            except TimeoutError:
                running.cancel()
            except Exception as exc:  # the old generation failing on its way out is expected
                log.info("generation_ended_with_error", part=part, error=repr(exc))
            # A client stuck on the lost broker must not hold the recovery: after the grace
            # once more, the old generation is left to finish (or not) on its own.
            await asyncio.wait([running], timeout=grace_s)
            if not running.done():
                log.warning("generation_abandoned", part=part, after_s=2 * grace_s)
            await ensure_topics()
            recovery = Recovery(part, reset)


def _stalled_on(running: asyncio.Future[None]) -> bool:
    return not running.cancelled() and isinstance(running.exception(), GenerationStalled)


def _stalled(part: str, exc: BaseException | None) -> None:
    log.warning("generation_stalled", part=part, reason=str(exc), next="starting a new one")
