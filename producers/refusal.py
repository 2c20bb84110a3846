"""What the producers do with an event the broker refuses for good.

A broker refuses some messages for a reason no retry changes: a message above the topic's
``max.message.bytes`` (a file read with GAZETTEER_MAX_FILE_BYTES raised past it), a topic
that does not exist or may not be written. Retrying those forever stalls the repository's
partition behind them (issue 15). Instead the sink sends, under the same sequence number
so that the sequence stays gap-free, a content-free ``substitute`` (the file recorded as
``too_large``), and a ``RefusedLetter`` on the dead-letters topic keyed by repository, so
that the read side counts it against the repository and shows the reason.

The letter's JSON is that of stores.dead_letters.DeadLetter (producers import nothing
of ours outside producers/: the contract is restated here, and a unit test decodes one
with the stores' decoder). ``partition`` and ``offset`` are -1: the event never had any.
"""

from __future__ import annotations

from typing import Literal

from aiokafka.errors import (
    KafkaError,
    KafkaTimeoutError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
    UnknownError,
)
from pydantic import Field

from producers.events import CommitObserved, Contract, EventBase, FileChanged, encode

_SIZE = (MessageSizeTooLargeError, RecordTooLargeError, RecordListTooLargeError)
LETTER_VALUE_BYTES = 64 * 1024
"""A refused event goes into its letter only when it is this small (or content-free)."""


def permanent(exc: BaseException) -> bool:
    """Whether the broker (or the client) refused for good: an aiokafka error that is
    not retriable. A timeout is not: aiokafka marks it so, but it is the broker away."""
    error = _kafka_error(exc)
    return error is not None and not error.retriable and not isinstance(error, KafkaTimeoutError)


def unknown_server_error(exc: BaseException) -> bool:
    """Whether the broker answered UNKNOWN_SERVER_ERROR (-1): not retriable by the book,
    yet what Tansu answers for a while after a restart (callers retry it a few times)."""
    return isinstance(_kafka_error(exc), UnknownError)


def too_large(exc: BaseException) -> bool:
    """Whether the refusal is about the message's size (a smaller one would go)."""
    return isinstance(_kafka_error(exc), _SIZE)


def _kafka_error(exc: BaseException) -> KafkaError | None:
    """The client error behind ``exc`` (faust wraps aiokafka's in its own)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaError):
            return seen
        seen = seen.__cause__
    return None


def substitute(event: EventBase) -> EventBase | None:
    """The same event (same producer, seq, lease) without what made it too large, still
    to be signed; None when there is nothing to drop."""
    if isinstance(event, FileChanged) and event.content is not None:
        return event.model_copy(
            update={"content": None, "content_hash": None, "skipped": "too_large", "sig": ""}
        )
    if isinstance(event, CommitObserved) and event.changed_paths:
        return event.model_copy(update={"changed_paths": (), "sig": ""})
    return None


class RefusedLetter(Contract):
    """A dead letter for an event the broker refused (DeadLetter's JSON)."""

    v: Literal[1] = 1
    kind: Literal["dead_letter"] = "dead_letter"
    failure: Literal["rejected"] = "rejected"
    reason: str = Field(description="what was wrong, for a person")
    topic: str
    partition: int = -1
    offset: int = -1
    key: bytes | None
    value: bytes | None
    failed_at: float


def refused_letter(
    event: EventBase, topic: str, exc: BaseException, failed_at: float, *, sent: EventBase | None
) -> RefusedLetter:
    """The letter for ``event`` refused on ``topic``; ``sent`` is what went in its place."""
    kind = getattr(event, "kind", type(event).__name__)
    what = f"{kind} {getattr(event, 'path', '')}".strip()
    instead = f"; sent instead without its content ({sent.kind})" if sent is not None else ""  # type: ignore[attr-defined]
    text = f"refused by the broker: {what} (seq {event.seq}): {type(exc).__name__}: {exc}"
    value = encode(sent) if sent is not None else encode(event)
    return RefusedLetter(
        reason=(text + instead)[:2000],
        topic=topic,
        key=event.repo.encode(),
        value=value if len(value) <= LETTER_VALUE_BYTES else None,
        failed_at=failed_at,
    )
