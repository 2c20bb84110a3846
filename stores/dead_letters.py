"""Dead letters: events the processors could not apply, kept with the reason.

A dead letter keeps the original key and value (base64 in JSON) and where the message
came from, so that an operator can read why, fix the cause and replay it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from stores.records import Record

FailureKind = Literal["malformed", "bug", "rejected"]  # rejected: fenced, forged, ...


class DeadLetter(Record):
    """A message that could not be processed, with why: ``malformed`` (not a valid event),
    ``bug`` (handling raised), ``rejected`` (valid but refused: fenced, forged, unclaimed,
    out of order, too large for the broker). Keeps the original topic, partition, offset,
    key and value, so an operator can inspect or replay it; published on the dead-letters
    topic and served by the query service."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

    v: Literal[1] = 1
    kind: Literal["dead_letter"] = "dead_letter"
    failure: FailureKind
    reason: str = Field(description="what was wrong, for a person")
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    failed_at: float


def decode_dead_letter(raw: bytes) -> DeadLetter:
    """A dead letter from its message value; raises ``ValidationError``."""
    return DeadLetter.model_validate_json(raw)
