"""Tuning the ranking weights (exact ranks, scores, the ascent, cross-validation) and the
profile files that store them."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from deploy.eval_tune import profile, read_cases
from deploy.ranking_cli import read_profile
from query.search.ranking import RankWeights
from query.search.tuning import Case, cross_validate, ranked, score, tune


def case(group: str, gold: set[str], candidates: dict[str, dict[str, float]]) -> Case:
    return Case(group, frozenset(gold), tuple(candidates.items()))


# Text prefers the doc; the fix is in the file the issue names by path.
NAMED = case(
    "a", {"src/fix.py"}, {"docs/guide.md": {"text": 1.0}, "src/fix.py": {"text": 0.5, "path": 1.0}}
)
# A file that both text and path favour.
PLAIN = case(
    "b", {"src/core.py"}, {"src/core.py": {"text": 1.0, "path": 1.0}, "src/util.py": {"text": 0.2}}
)


def test_ranked_orders_by_weighted_sum_then_path() -> None:
    assert ranked(NAMED, RankWeights()) == ["src/fix.py", "docs/guide.md"]  # 0.5 + 0.8 > 1
    assert ranked(NAMED, RankWeights(path=0.0)) == ["docs/guide.md", "src/fix.py"]
    tie = case("t", set(), {"b.py": {"text": 1.0}, "a.py": {"text": 1.0}})
    assert ranked(tie, RankWeights()) == ["a.py", "b.py"]


def test_score_is_the_benchmark_scorers() -> None:
    scores = score([NAMED, PLAIN], RankWeights(path=0.0))
    # NAMED: gold second (MRR 1/2, in top 3 and 5); PLAIN: gold first.
    assert (scores.cases, scores.acc1, scores.acc3, scores.acc5) == (2, 50.0, 100.0, 100.0)
    assert scores.mrr == pytest.approx(75.0)
    both = case("c", {"a", "b"}, {"a": {"text": 1.0}, "c": {"text": 0.9}, "b": {"text": 0.8}})
    all_gold = score([both], RankWeights())
    assert (all_gold.acc1, all_gold.acc3, all_gold.mrr) == (0.0, 100.0, 100.0)


def test_tune_moves_a_weight_only_when_it_ranks_better() -> None:
    start = RankWeights(path=0.0)
    tuned = tune([NAMED, PLAIN], start, grid=(0.0, 0.3, 0.6, 1.0))
    # path 0.6 puts fix.py first (1.1 > 1.0); 0.3 does not (0.8); nothing else moves.
    assert tuned == dataclasses.replace(start, path=0.6)
    assert score([NAMED, PLAIN], tuned).acc1 == 100.0
    assert tune([PLAIN], RankWeights(), grid=(0.0, 0.3, 0.6, 1.0)) == RankWeights()


def test_cross_validation_ranks_each_group_by_weights_tuned_without_it() -> None:
    seen: list[tuple[str, ...]] = []

    def tuner(train: Sequence[Case]) -> RankWeights:
        seen.append(tuple(sorted({c.group for c in train})))
        return RankWeights(path=0.0)

    held_out, folds = cross_validate([NAMED, PLAIN], tuner=tuner)
    assert seen == [("b",), ("a",)]
    assert set(folds) == {"a", "b"}
    assert (held_out.cases, held_out.acc1, held_out.mrr) == (2, 50.0, 75.0)


def test_eval_tune_reads_the_localize_signals_and_writes_a_profile(tmp_path: Path) -> None:
    dataset, signals = tmp_path / "dev.jsonl", tmp_path / "out.signals.jsonl"
    dataset.write_text(
        "\n".join(
            json.dumps({"instance_id": i, "repo": r, "gold_files": g})
            for i, r, g in (("a-1", "o/a", ["src/fix.py"]), ("b-1", "o/b", ["src/core.py"]))
        )
    )
    signals.write_text(
        "\n".join(
            json.dumps({"instance_id": i, "repo": "x", "candidates": [list(c) for c in k]})
            for i, k in (("a-1", NAMED.candidates), ("b-1", PLAIN.candidates))
        )
    )
    assert [c.group for c in read_cases(dataset, signals)] == ["o/a", "o/b"]
    found = profile(dataset, signals)
    assert found["scores"]["default"]["acc1"] == 100.0
    assert set(found["folds"]) == {"o/a", "o/b"}
    assert RankWeights.from_mapping(found["weights"]) == RankWeights()  # nothing to gain
    signals.write_text('{"instance_id": "a-1"}\n')
    with pytest.raises(ValueError, match="not a signals line"):
        read_cases(dataset, signals)


def test_a_profile_file_is_checked_before_it_is_stored(tmp_path: Path) -> None:
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps({"weights": {"path": 0.5}, "source": "tuned on dev", "scores": {}}))
    stored = read_profile(tuned, "app-1", now=7.0)
    assert (stored.scope, stored.source, stored.set_at) == ("app-1", "tuned on dev", 7.0)
    assert stored.weights == {**RankWeights().as_dict(), "path": 0.5}
    bare = tmp_path / "bare.json"
    bare.write_text('{"text": 2}')
    assert read_profile(bare, "*", now=1.0).weights["text"] == 2.0
    assert read_profile(bare, "*", now=1.0).source == "set from bare.json"
    for wrong, says in (
        ('{"txet": 1}', "unknown ranking weights ['txet']"),
        ('{"path": -1}', "finite number >= 0"),
        ('{"path": true}', "not a number"),
        ('{"path": "high"}', "not a number"),
        ("[1, 2]", "not a JSON object"),
        ("{", "cannot read"),
    ):
        bare.write_text(wrong)
        with pytest.raises(ValueError, match=re.escape(says)):
            read_profile(bare, "*", now=1.0)
