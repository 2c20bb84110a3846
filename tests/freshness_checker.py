"""The freshness checker's rule: which answers said ``fresh`` while serving old content.

Pure logic over a timeline that the load run records from outside the service (issue 15,
"truth under load, checked by a machine"); the machinery that records it is
`tests.bench.load_freshness`. All times are unix seconds (``time.time()``) on one machine.

The timeline:

- ``Save``: the checker wrote a new version of a file (``number`` counts every save of a
  run from 1; the version's bytes are the file's baseline plus `probe_block(number)`, so
  every version's content hash and probe name are unique);
- ``Emitted``: a FileChanged read by the checker's own consumer from the file-events
  topic (path, content hash, the producer's session and sequence number);
- ``StatusReceived``: a SourceStatus read by that consumer from the sources topic (the
  producer's ``last_seq``), with the time the consumer received it;
- ``Answer``: one HTTP answer: when it was requested and received, its freshness status,
  and the file versions it shows (`served_by_file`, `served_by_search`,
  `served_by_context`).

The rule, exactly:

1. A save is *seen* at the earliest ``received_at`` of a SourceStatus of the producer
   that emitted the save's content (the first Emitted with the save's path and hash)
   whose ``last_seq`` covers that event's ``seq``. Before the service has received such
   a status it cannot know the event is pending, so saying ``fresh`` is not yet a lie;
   the checker's own consumer reads the same topic from the same broker, so its receipt
   time includes the broker's propagation. A save never seen is reported, not judged.
2. A save is *due* for an answer when ``seen + allowance_s <= answer.sent_at``: the
   answer was requested after the service could know, plus a stated allowance for its
   own consumer to fetch the status (the request time is the earliest moment the
   service may have computed the answer, so this errs toward fewer violations).
3. An answer VIOLATES when its status is ``fresh`` and, for a file it shows, the version
   shown is older than that file's latest due save (a version is ranked by its save
   number; the baseline is 0; a content hash the checker never wrote ranks -1, older
   than all). Stale or updating answers with old content tell the truth; a version
   newer than the due one (a later save, already indexed) is never old.
4. A save is *visible* at the earliest ``received_at`` of an answer (of any status) that
   shows that file at the save's version or a later one; edit -> visible latency is that
   minus ``written_at``.

Search hits and context packs show a version only when they show its probe
(a hit's chunk named ``gz_probe_<number>``, a pack's text defining it: the pack's header
echoes the question, a probe's name): lines outside the probe are the same in every version, so an
answer without a probe is not judged for that file; file details show their
``content_hash`` and are always judged.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

PROBE = re.compile(r"\bgz_probe_(\d+)\b")
# In a pack's text only a definition is the index's content: the pack's header echoes
# the question, which is itself a probe's name (`probe_query`).
PROBE_DEFINITION = re.compile(r"\bdef gz_probe_(\d+)\(")
UNKNOWN_RANK = -1


def probe_block(number: int) -> str:
    """What save ``number`` appends to its file's baseline: a comment and a function,
    both named with the number (Python syntax; the checker edits .py files)."""
    return (
        f"\n\n# gazetteer freshness probe {number}\n"
        f"def gz_probe_{number}():\n"
        f'    """Freshness probe {number} of the load checker."""\n'
        f"    return {number}\n"
    )


def probe_query(number: int) -> str:
    return f"gz_probe_{number}"


@dataclass(frozen=True, slots=True)
class Save:
    number: int
    path: str
    content_hash: str
    written_at: float


@dataclass(frozen=True, slots=True)
class Emitted:
    path: str
    content_hash: str | None
    producer: str
    seq: int
    emitted_at: float
    received_at: float


@dataclass(frozen=True, slots=True)
class StatusReceived:
    producer: str
    last_seq: int
    sent_at: float
    received_at: float


@dataclass(frozen=True, slots=True)
class Answer:
    """One HTTP answer; ``status`` None when there was none (an error, a timeout)."""

    kind: str
    client: int
    sent_at: float
    received_at: float
    status: str | None
    served: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Violation:
    kind: str
    client: int
    sent_at: float
    path: str
    served_rank: int
    due_number: int
    after_due_s: float


@dataclass(frozen=True, slots=True)
class SaveOutcome:
    number: int
    path: str
    emitted_ms: float
    seen_ms: float
    visible_ms: float


@dataclass(frozen=True, slots=True)
class Verdict:
    answers_by_status: dict[str, int]
    judged_by_status: dict[str, int]
    old_after_due_by_status: dict[str, int]
    violations: tuple[Violation, ...]
    saves: tuple[SaveOutcome, ...]

    @property
    def not_seen(self) -> int:
        return sum(1 for s in self.saves if math.isnan(s.seen_ms))

    @property
    def not_visible(self) -> int:
        return sum(1 for s in self.saves if math.isnan(s.visible_ms))


class Versions:
    """Every version the checker knows of each file: baseline hash rank 0, saves by number."""

    def __init__(self, baselines: Mapping[str, str], saves: Sequence[Save]) -> None:
        self.rank: dict[tuple[str, str], int] = {(p, h): 0 for p, h in baselines.items()}
        self.by_number = {s.number: s for s in saves}
        for save in saves:
            key = (save.path, save.content_hash)
            if key in self.rank:
                raise ValueError(f"save {save.number} repeats a known version of {save.path}")
            self.rank[key] = save.number

    def rank_of(self, path: str, content_hash: str) -> int:
        return self.rank.get((path, content_hash), UNKNOWN_RANK)


def seen_at(
    save: Save, emitted: Sequence[Emitted], statuses: Sequence[StatusReceived]
) -> float | None:
    """Rule 1: when the checker's consumer received a status covering the save's event."""
    events = [e for e in emitted if e.path == save.path and e.content_hash == save.content_hash]
    if not events:
        return None
    first = min(events, key=lambda e: (e.received_at, e.seq))
    covering = [
        s.received_at for s in statuses if s.producer == first.producer and s.last_seq >= first.seq
    ]
    return min(covering, default=None)


def judge(
    baselines: Mapping[str, str],
    saves: Sequence[Save],
    emitted: Sequence[Emitted],
    statuses: Sequence[StatusReceived],
    answers: Iterable[Answer],
    allowance_s: float,
) -> Verdict:
    """Rules 2-4 over a whole timeline."""
    versions = Versions(baselines, saves)
    seen = {s.number: seen_at(s, emitted, statuses) for s in saves}
    due_by_path: dict[str, list[tuple[float, int]]] = {}
    for save in saves:
        when = seen[save.number]
        if when is not None:
            due_by_path.setdefault(save.path, []).append((when + allowance_s, save.number))
    by_status: Counter[str] = Counter()
    judged: Counter[str] = Counter()
    old: Counter[str] = Counter()
    violations: list[Violation] = []
    visible: dict[int, float] = {}
    for answer in sorted(answers, key=lambda a: (a.received_at, a.sent_at, a.client)):
        status = answer.status or "error"
        by_status[status] += 1
        for path, content_hash in answer.served:
            rank = versions.rank_of(path, content_hash)
            for save in saves:
                if save.path == path and rank >= save.number:
                    visible.setdefault(save.number, answer.received_at)
            due = [n for when, n in due_by_path.get(path, []) if when <= answer.sent_at]
            if not due:
                continue
            judged[status] += 1
            if rank >= max(due):
                continue
            old[status] += 1
            if status == "fresh":
                deadline = max(w for w, n in due_by_path[path] if n == max(due))
                violations.append(
                    Violation(
                        answer.kind,
                        answer.client,
                        answer.sent_at,
                        path,
                        rank,
                        max(due),
                        answer.sent_at - deadline,
                    )
                )
    outcomes = tuple(_outcome(s, emitted, seen[s.number], visible.get(s.number)) for s in saves)
    return Verdict(dict(by_status), dict(judged), dict(old), tuple(violations), outcomes)


def _outcome(
    save: Save, emitted: Sequence[Emitted], seen: float | None, visible: float | None
) -> SaveOutcome:
    stamps = [
        e.emitted_at for e in emitted if e.path == save.path and e.content_hash == save.content_hash
    ]

    def since_write(t: float | None) -> float:
        return math.nan if t is None else (t - save.written_at) * 1000

    return SaveOutcome(
        save.number,
        save.path,
        since_write(min(stamps, default=None)),
        since_write(seen),
        since_write(visible),
    )


def served_by_file(body: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A file-details answer shows its file at ``content_hash``."""
    content_hash = body.get("content_hash")
    return ((body["path"], content_hash),) if content_hash else ()


def served_by_search(
    body: Mapping[str, Any], saves: Mapping[int, Save]
) -> tuple[tuple[str, str], ...]:
    """A search hit whose best chunk is a probe shows that probe's version of its file."""
    served = []
    for item in body.get("items", []):
        chunk = item.get("best_chunk") or {}
        for number in PROBE.findall(chunk.get("qualname") or ""):
            save = saves.get(int(number))
            if save is not None and save.path == item["path"]:
                served.append((save.path, save.content_hash))
    return tuple(served)


def served_by_context(
    body: Mapping[str, Any], saves: Mapping[int, Save]
) -> tuple[tuple[str, str], ...]:
    """A context pack whose text holds a probe's definition (its code or signature)
    shows that probe's version of its file."""
    numbers = sorted({int(n) for n in PROBE_DEFINITION.findall(body.get("text", ""))})
    return tuple((saves[n].path, saves[n].content_hash) for n in numbers if n in saves)
