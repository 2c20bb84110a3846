"""The freshness checker's rule on hand-made timelines (tests/freshness_checker.py)."""

from __future__ import annotations

import math

import pytest

from tests.freshness_checker import (
    Answer,
    Emitted,
    Save,
    StatusReceived,
    Verdict,
    Violation,
    judge,
    probe_block,
    seen_at,
    served_by_context,
    served_by_file,
    served_by_search,
)

PATH = "pkg/mod.py"
BASE, NEW, NEWER = "h0", "h1", "h2"
BASELINES = {PATH: BASE}
SAVE = Save(1, PATH, NEW, written_at=100.0)
# The producer emitted save 1 as seq 7 at 100.2; our consumer got its status at 100.3.
EMITTED = [Emitted(PATH, NEW, "p1", 7, emitted_at=100.2, received_at=100.25)]
STATUSES = [
    StatusReceived("p1", 6, sent_at=99.0, received_at=99.1),
    StatusReceived("p1", 7, sent_at=100.21, received_at=100.3),
]
ALLOWANCE = 0.5  # save 1 is due for answers requested from 100.8 on


def file_answer(sent_at: float, status: str, content_hash: str, client: int = 0) -> Answer:
    return Answer("file", client, sent_at, sent_at + 0.05, status, ((PATH, content_hash),))


def verdict(*answers: Answer, saves: tuple[Save, ...] = (SAVE,)) -> Verdict:
    return judge(BASELINES, saves, EMITTED, STATUSES, answers, ALLOWANCE)


def test_a_save_is_seen_when_a_status_covering_its_event_is_received() -> None:
    assert seen_at(SAVE, EMITTED, STATUSES) == 100.3
    # A status of another producer session, or one behind the event, does not cover it.
    assert seen_at(SAVE, EMITTED, [StatusReceived("p0", 99, 100.2, 100.3)]) is None
    assert seen_at(SAVE, EMITTED, STATUSES[:1]) is None
    assert seen_at(Save(2, PATH, NEWER, 101.0), EMITTED, STATUSES) is None


def test_fresh_with_the_old_hash_before_the_emit_is_not_a_violation() -> None:
    result = verdict(file_answer(100.1, "fresh", BASE), file_answer(100.79, "fresh", BASE))
    assert result.violations == ()
    assert result.judged_by_status == {}
    assert result.answers_by_status == {"fresh": 2}


def test_fresh_with_the_old_hash_after_the_emit_is_a_violation() -> None:
    result = verdict(file_answer(101.0, "fresh", BASE, client=3))
    (violation,) = result.violations
    assert violation == Violation("file", 3, 101.0, PATH, 0, 1, violation.after_due_s)
    assert violation.after_due_s == pytest.approx(0.2)
    assert result.old_after_due_by_status == {"fresh": 1}


def test_stale_or_updating_with_the_old_hash_is_not_a_violation() -> None:
    result = verdict(file_answer(101.0, "updating", BASE), file_answer(101.1, "stale", BASE))
    assert result.violations == ()
    assert result.judged_by_status == {"updating": 1, "stale": 1}
    assert result.old_after_due_by_status == {"updating": 1, "stale": 1}


def test_fresh_with_the_new_hash_is_not_a_violation_and_makes_the_save_visible() -> None:
    result = verdict(file_answer(101.0, "updating", BASE), file_answer(101.5, "fresh", NEW))
    assert result.violations == ()
    assert result.saves[0].visible_ms == pytest.approx(1550.0)
    assert result.saves[0].seen_ms == pytest.approx(300.0)
    assert result.saves[0].emitted_ms == pytest.approx(200.0)


def test_an_unknown_hash_after_the_emit_counts_as_old() -> None:
    result = verdict(file_answer(101.0, "fresh", "never-written"))
    assert [v.served_rank for v in result.violations] == [-1]


def test_a_newer_version_than_the_due_one_is_not_old() -> None:
    later = Save(2, PATH, NEWER, written_at=100.9)  # written, not seen yet
    result = verdict(file_answer(101.0, "fresh", NEWER), saves=(SAVE, later))
    assert result.violations == ()
    assert [s.visible_ms for s in result.saves] == [pytest.approx(1050.0), pytest.approx(150.0)]
    assert math.isnan(result.saves[1].seen_ms)


def test_a_service_that_always_says_fresh_is_caught() -> None:
    """The timeline of a service that never reports pending work: every poll between the
    emit and the index catching up says fresh with the old hash."""
    polls = [file_answer(100.0 + i * 0.1, "fresh", BASE if i < 30 else NEW) for i in range(40)]
    result = verdict(*polls)
    # Requested at 100.8 .. 102.9 with the old hash: 100.8 is due (seen 100.3 + 0.5).
    assert len(result.violations) == 22
    assert result.not_visible == 0 and result.not_seen == 0
    # The same polls from an honest service (updating until it shows the new hash) pass.
    honest = [
        a if a.served[0][1] == NEW else file_answer(a.sent_at, "updating", BASE) for a in polls
    ]
    assert verdict(*honest).violations == ()


def test_a_save_never_emitted_is_reported_not_judged() -> None:
    lost = Save(2, PATH, NEWER, written_at=100.9)
    result = verdict(file_answer(200.0, "fresh", NEW), saves=(SAVE, lost))
    assert result.violations == ()
    assert (result.not_seen, result.not_visible) == (1, 1)


def test_errors_are_counted_apart() -> None:
    result = verdict(Answer("search", 1, 101.0, 131.0, None))
    assert result.answers_by_status == {"error": 1}


def test_a_repeated_version_is_refused() -> None:
    with pytest.raises(ValueError, match="repeats a known version"):
        judge(BASELINES, [Save(1, PATH, BASE, 1.0)], [], [], [], ALLOWANCE)


SAVES = {1: SAVE, 2: Save(2, "other.py", "o2", 100.5)}


def test_versions_shown_by_each_answer_kind() -> None:
    assert served_by_file({"path": PATH, "content_hash": NEW}) == ((PATH, NEW),)
    assert served_by_file({"path": PATH, "content_hash": None}) == ()
    hits = {
        "items": [
            {"path": PATH, "best_chunk": {"qualname": "gz_probe_1"}},
            {"path": PATH, "best_chunk": {"qualname": "gz_probe_2"}},  # save 2 is another file
            {"path": "other.py", "best_chunk": {"qualname": "Engine.start"}},
            {"path": "x.py", "best_chunk": None},
        ]
    }
    assert served_by_search(hits, SAVES) == ((PATH, NEW),)
    text = "pkg/mod.py\n[TARGET] def gz_probe_1():\nother.py\n  def gz_probe_2()\ngz_probe_99"
    assert served_by_context({"text": text}, SAVES) == ((PATH, NEW), ("other.py", "o2"))
    assert served_by_context({"text": "def gz_probe_10(): pass"}, SAVES) == ()
    # The header echoes the question (a probe's name): that shows no version.
    assert served_by_context({"text": "# Context: gz_probe_1\n(nothing found)"}, SAVES) == ()


def test_each_probe_block_names_its_number_only() -> None:
    block = probe_block(12)
    assert "def gz_probe_12():" in block and "gz_probe_1()" not in block
    compile(block, "probe.py", "exec")
