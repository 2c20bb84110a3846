"""``gazetteer ranking set FILE``: store search weights with the index.

FILE is a ranking profile as ``gazetteer eval tune`` writes it (``weights``, and
optionally ``source`` and ``scores``) or a bare ``{"signal": weight}`` object. The
profile is checked (every name a signal search knows, every weight a finite number
>= 0) and published on the ranking topic keyed by its scope: ``--repo`` for one
repository, else ``*`` for every repository without a profile of its own. Every query
replica folds that topic, so the weights hold across restarts and replicas;
``GET /repositories/{repo}/ranking`` shows the weights in effect.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from deploy.parts import run_part
from deploy.runtime import connect, send_record
from deploy.settings import Settings
from query.search.ranking import RankWeights
from stores.ranking import EVERY_REPOSITORY, RankingProfile, encode_profile


def read_profile(path: Path, scope: str, now: float) -> RankingProfile:
    """The profile in ``path`` for ``scope``; ValueError says what is wrong with it."""
    try:
        found: Any = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc
    if not isinstance(found, dict):
        raise ValueError(f"{path}: not a JSON object")
    weights = found.get("weights", found)
    if not isinstance(weights, dict):
        raise ValueError(f"{path}: 'weights' is not an object")
    checked = RankWeights.from_mapping(weights)  # refuses unknown names and bad values
    return RankingProfile(
        scope=scope,
        weights=checked.as_dict(),
        source=str(found.get("source") or f"set from {path.name}"),
        scores=found.get("scores") or {},
        set_at=now,
    )


async def publish(settings: Settings, bootstrap: str, profile: RankingProfile) -> None:
    cluster = await connect(settings, bootstrap)
    await send_record(
        cluster.bootstrap, settings.topics.ranking, profile.scope.encode(), encode_profile(profile)
    )


def run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.bootstrap is None:
        print("gazetteer ranking set: needs --broker kafka://host:port", file=sys.stderr)
        return 2
    try:
        profile = read_profile(args.file, args.repo or EVERY_REPOSITORY, time.time())
    except ValueError as exc:
        print(f"gazetteer ranking set: {exc}", file=sys.stderr)
        return 2
    code = run_part("ranking", publish(settings, settings.bootstrap, profile))
    if code:
        return code
    print(f"ranking for {profile.scope}: {profile.weights}")
    return 0
