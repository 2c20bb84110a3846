"""The ranking profile: the weights search re-ranks with, stored with the index.

Profiles travel on the ranking topic keyed by their scope: a repository id, or ``*``
for every repository without one of its own. Every query replica folds the topic as it
folds the graph deltas, so the weights survive restarts and every replica ranks alike;
the latest profile of a scope wins. Weight names are checked where they are used
(query/search/ranking.py ``RankWeights.from_mapping``); here only that each is a
finite number >= 0.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, TypeAdapter, field_validator

from stores.records import Record

EVERY_REPOSITORY = "*"


class RankingProfile(Record):
    """The weights of the file ranking's signals for one repository (or ``*``, every
    repository), set by an operator or by ``eval tune``; kept on the ranking topic (the
    last per scope wins), which every query replica folds."""

    v: Literal[1] = 1
    kind: Literal["ranking_profile"] = "ranking_profile"
    scope: str = Field(min_length=1, description="a repository id, or '*' for every one")
    weights: dict[str, float] = Field(description="signal name -> weight; others default")
    source: str = Field(default="", description="where the weights come from, for a person")
    scores: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="how they scored when tuned (eval tune)"
    )
    set_at: float

    @field_validator("weights")
    @classmethod
    def _finite(cls, weights: dict[str, float]) -> dict[str, float]:
        for name, value in weights.items():
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"weight {name!r} must be a finite number >= 0, not {value}")
        return weights


_PROFILE = TypeAdapter(RankingProfile)


def decode_profile(raw: bytes) -> RankingProfile:
    """A profile from its message value; raises ``ValidationError``."""
    return _PROFILE.validate_json(raw)


def encode_profile(profile: RankingProfile) -> bytes:
    """The message value of a profile."""
    return profile.model_dump_json().encode()
