"""The first-index benchmark's pure parts: the schedule, medians, the growth fits and
the parsing of the peers' outputs (tests/bench/bench_schedule.py, tests/bench/peers.py,
`growth` in tests/bench/first_index.py)."""

from __future__ import annotations

import math

import pytest

from tests.bench.bench_schedule import growth_exponent, interleaved, medians, ratio
from tests.bench.first_index import growth
from tests.bench.peers import driver_report, repo_map_files


def test_each_round_starts_one_contender_further() -> None:
    assert interleaved(["up", "vortexa", "aider"], 3) == [
        (0, "up"),
        (0, "vortexa"),
        (0, "aider"),
        (1, "vortexa"),
        (1, "aider"),
        (1, "up"),
        (2, "aider"),
        (2, "up"),
        (2, "vortexa"),
    ]


def test_a_schedule_of_nothing() -> None:
    assert interleaved([], 3) == []
    assert interleaved(["a", "b"], 0) == []


def test_every_contender_runs_once_a_round() -> None:
    schedule = interleaved(["a", "b", "c", "d"], 5)
    for round_ in range(5):
        assert sorted(name for r, name in schedule if r == round_) == ["a", "b", "c", "d"]


def test_medians_per_contender_in_order_of_first_run() -> None:
    runs = [
        {"contender": "b", "s": 3.0, "rss": 10, "corpus": "sympy", "scans": [[True, 5]]},
        {"contender": "a", "s": 9.0, "rss": 1},
        {"contender": "b", "s": 1.0, "rss": 30, "corpus": "sympy", "scans": [[True, 5]]},
        {"contender": "a", "s": 5.0, "rss": 3},
        {"contender": "b", "s": 2.0, "rss": 20, "corpus": "sympy", "scans": [[True, 6]]},
    ]
    assert medians(runs) == {
        # scans differ between b's runs: dropped; the corpus agrees: kept.
        "b": {"runs": 3, "s": 2.0, "rss": 20, "corpus": "sympy"},
        "a": {"runs": 2, "s": 7.0, "rss": 2.0},
    }


def test_medians_keep_only_fields_every_run_has_and_no_booleans_averaged() -> None:
    runs = [
        {"contender": "x", "s": 1.0, "ok": True, "extra": 4},
        {"contender": "x", "s": 2.0, "ok": False},
    ]
    assert medians(runs) == {"x": {"runs": 2, "s": 1.5}}


def test_linear_growth_has_exponent_one() -> None:
    assert growth_exponent([1.0, 2.0, 4.0], [3.0, 6.0, 12.0]) == pytest.approx(1.0)


def test_issue_21s_two_sympys_are_size_to_the_1_2() -> None:
    # sympy -> two copies of sympy: time x 2.30 for twice the size.
    assert growth_exponent([30.0, 60.0], [23.0, 23.0 * 2.30]) == pytest.approx(math.log(2.30, 2))
    assert round(growth_exponent([30.0, 60.0], [23.0, 52.9]), 2) == 1.20


def test_the_fit_is_least_squares_over_every_point() -> None:
    # log2 sizes 0, 1, 2 (mean 1), log2 times 0, 1, 3 (mean 4/3): (4/3 + 5/3) / 2 = 1.5.
    assert growth_exponent([1.0, 2.0, 4.0], [1.0, 2.0, 8.0]) == pytest.approx(1.5)


def test_the_fit_refuses_what_it_cannot_fit() -> None:
    with pytest.raises(ValueError, match="two distinct sizes"):
        growth_exponent([5.0, 5.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="positive"):
        growth_exponent([1.0, 2.0], [0.0, 1.0])
    with pytest.raises(ValueError, match="2 sizes against 1 times"):
        growth_exponent([1.0, 2.0], [1.0])


def test_ratio() -> None:
    assert ratio(9.0, 4.5) == 2.0
    assert ratio(None, 1.0) is None
    assert ratio(1.0, 0.0) is None


def test_a_drivers_report_is_its_last_json_line() -> None:
    stdout = 'Initial repo scan can be slow\n{"s": 1}\n{"import_s": 0.4, "indexed_files": 841}\n\n'
    assert driver_report(stdout) == {"import_s": 0.4, "indexed_files": 841}


def test_a_driver_that_printed_no_report() -> None:
    with pytest.raises(ValueError, match="printed nothing"):
        driver_report("\n  \n")
    with pytest.raises(ValueError, match="not a JSON object"):
        driver_report("[1, 2]\n")


AIDER_MAP = """
django/apps/config.py:
⋮
│class AppConfig:
│    \"\"\"Class representing a Django application and its configuration.\"\"\"
⋮
│    def get_model(self, model_name, require_ready=True):
⋮

django/conf/locale/__init__.py

django/db/models/base.py:
⋮
│class Model(AltersData, metaclass=ModelBase):
⋮
"""


def test_the_files_an_aider_map_shows() -> None:
    assert repo_map_files(AIDER_MAP) == [
        "django/apps/config.py",
        "django/conf/locale/__init__.py",
        "django/db/models/base.py",
    ]
    assert repo_map_files("") == []


def test_growth_is_fitted_on_the_parsed_source() -> None:
    # Parsed MB 1, 2, 3, 4; the build linear in wall, CPU as size^2, the raw parse constant.
    summary: dict[str, dict[str, float]] = {}
    trees = ("django", "sympy", "django+sympy", "sympy-x2")
    for mb, tree in zip((1.0, 2.0, 3.0, 4.0), trees, strict=True):
        summary[f"{tree}/build"] = {"s": 10.0 * mb, "cpu_s": mb * mb, "mb": 99.0}
        summary[f"{tree}/raw parse x1"] = {"s": 5.0, "mb": mb}
    got = growth(summary, 1)
    assert got["parsed_mb"] == {"django": 1.0, "sympy": 2.0, "django+sympy": 3.0, "sympy-x2": 4.0}
    assert {k: round(v, 6) for k, v in got.items() if k != "parsed_mb"} == {
        "build_k_four_trees": 1.0,
        "build_cpu_k_four_trees": 2.0,
        "raw_parse_k_four_trees": 0.0,
        # sympy (2 MB) -> two sympys (4 MB): wall x2, CPU x4.
        "build_k_sympy_doubled": 1.0,
        "build_cpu_k_sympy_doubled": 2.0,
        "raw_parse_k_sympy_doubled": 0.0,
    }
