"""A part that outlives its broker: run it in generations, a new one after each reset.

The process's `BrokerWatch` says when the broker lost our topics (deploy/broker_watch.py);
`recover_in_place` then ends the part's current generation (the worker's faust app,
the query service's read loop, the producers' sessions), ensures the topics and starts
the next generation, which knows what it recovers from (`Recovery`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog

from deploy.broker_watch import BrokerReset, BrokerWatch

log = structlog.get_logger(__name__)


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
        await generation(stop, Recovery(part, None))
        return
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
