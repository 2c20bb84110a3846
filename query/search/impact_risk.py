"""How far a change reaches, in neighborhoods and in risk (issue 20, impact analysis):
the neighborhoods holding its changed and dependent files with their entry points, and
a low/medium/high level by `RULE`, which every answer states. Pure: counts in, values
out (query/search/impact.py finds what they count).

The rule: **high** with at least 20 dependents, a deleted or renamed file something
depends on (its importers break), or dependents in other neighborhoods together with a
public change no test reaches; **medium** with at least 5 dependents, a dependent in
another neighborhood, or a public change no test reaches; **low** otherwise.
Dependents are the non-test symbols and files within the depth. The thresholds are a
reviewer's rule of thumb, not calibrated: on django's package (no tests in its wheel)
one-line diffs come out 21 low / 69 medium / 10 high (tests/bench/impact.py)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from stores.neighborhoods import NeighborhoodSnapshot

Level = Literal["low", "medium", "high"]

HIGH_DEPENDENTS = 20
MEDIUM_DEPENDENTS = 5
RULE = (
    f"high: at least {HIGH_DEPENDENTS} dependents, a deleted or renamed file something "
    "depends on, or dependents in other neighborhoods together with a public change no "
    f"test reaches; medium: at least {MEDIUM_DEPENDENTS} dependents, a dependent in "
    "another neighborhood, or a public change no test reaches; low: otherwise "
    "(dependents: non-test symbols and files within the depth)"
)


@dataclass(frozen=True, slots=True)
class Touched:
    """A neighborhood the change touches: how many changed and dependent files it
    holds, its entry points, and those among the changed or dependent files."""

    id: str
    label: str
    changed: int
    dependents: int
    entry_points: tuple[str, ...]
    entry_points_touched: tuple[str, ...]


def neighborhoods_touched(
    snapshot: NeighborhoodSnapshot, changed: Collection[str], reached: Collection[str]
) -> tuple[Touched, ...]:
    """The neighborhoods holding a changed (``changed``) or dependent (``reached``)
    file, those with changed files first, then by dependent files, then by id."""
    membership = snapshot.membership()
    held: dict[str, set[str]] = {}
    for path in {*changed, *reached}:
        if path in membership:
            held.setdefault(membership[path], set()).add(path)
    edited = set(changed)
    found = [
        Touched(
            id=record.id,
            label=record.label,
            changed=len(mine & edited),
            dependents=len(mine - edited),
            entry_points=record.entry_points,
            entry_points_touched=tuple(p for p in record.entry_points if p in mine),
        )
        for record in snapshot.neighborhoods
        if (mine := held.get(record.id))
    ]
    return tuple(sorted(found, key=lambda t: (-t.changed, -t.dependents, t.id)))


@dataclass(frozen=True, slots=True)
class Risk:
    level: Level
    reasons: tuple[str, ...]


def assess(
    *,
    direct: int,
    transitive: int,
    elsewhere: int,
    other_neighborhoods: int,
    untested: Sequence[str],
    broken: Sequence[str],
) -> Risk:
    """`RULE` over the counts: ``direct`` and ``transitive`` non-test dependents,
    ``elsewhere`` of them in ``other_neighborhoods`` neighborhoods holding no changed
    file, the ``untested`` public changes, the ``broken`` (deleted or renamed) files
    something depends on."""
    total = direct + transitive
    reasons = [f"{direct} direct and {transitive} transitive dependents"]
    if elsewhere:
        reasons.append(
            f"{_count(elsewhere, 'dependent')} in"
            f" {_count(other_neighborhoods, 'other neighborhood')}"
        )
    if untested:
        more = f" and {len(untested) - 3} more" if len(untested) > 3 else ""
        shown = ", ".join(untested[:3]) + more
        reasons.append(f"{_count(len(untested), 'public change')} no test reaches: {shown}")
    if broken:
        reasons.append(f"deleted or renamed with dependents: {', '.join(broken)}")
    level: Level = "low"
    if total >= HIGH_DEPENDENTS or broken or (elsewhere and untested):
        level = "high"
    elif total >= MEDIUM_DEPENDENTS or elsewhere or untested:
        level = "medium"
    return Risk(level, tuple(reasons))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
