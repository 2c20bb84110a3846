"""A query replica's shard: the partitions it names, and the settings and CLI that say it."""

from __future__ import annotations

import pytest

from deploy.cli import VERBS, _parser, _refused, _settings
from query.materializer import partition_of
from query.shard import Shard, parse_partitions, parse_shard, spans


def test_partitions_are_named_by_numbers_and_ranges() -> None:
    assert parse_partitions("0-3,8") == frozenset({0, 1, 2, 3, 8})
    assert parse_partitions(" 5 ") == frozenset({5})
    assert parse_partitions("2-2,1") == frozenset({1, 2})
    for bad in ("", "a", "3-1", "-1", "1-", "1,,2", "1.5"):
        with pytest.raises(ValueError, match="not a partition"):
            parse_partitions(bad)


def test_spans_write_back_what_was_parsed() -> None:
    assert spans(frozenset({0, 1, 2, 3, 8})) == "0-3,8"
    assert spans(frozenset({7})) == "7"
    assert spans(frozenset({1, 3, 4, 9, 10, 11})) == "1,3-4,9-11"


def test_a_shard_by_index_owns_every_count_th_partition() -> None:
    shard = parse_shard("1/4")
    assert shard == Shard(index=1, count=4)
    assert shard.of(10) == [1, 5, 9]
    assert shard.describe() == "1/4" and not shard.whole
    assert [p for p in range(8) if Shard(index=0, count=2).owns(p)] == [0, 2, 4, 6]
    for bad in ("1", "1/", "/4", "a/4", "1/b", "-1/4"):
        with pytest.raises(ValueError, match="not a shard"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="index must be"):
        parse_shard("4/4")
    with pytest.raises(ValueError, match="index must be"):
        parse_shard("0/0")


def test_named_partitions_must_exist_and_the_whole_serves_all() -> None:
    named = Shard(partitions=frozenset({0, 2}))
    assert named.of(4) == [0, 2] and named.describe() == "0,2"
    with pytest.raises(ValueError, match=r"partitions \[9\] named, the topics have 4"):
        Shard(partitions=frozenset({1, 9})).of(4)
    assert Shard().whole and Shard().of(3) == [0, 1, 2] and Shard().describe() == "all"
    with pytest.raises(ValueError, match="serves nothing"):
        Shard(partitions=frozenset())
    with pytest.raises(ValueError, match="not both"):
        Shard(partitions=frozenset({1}), index=0, count=2)


def test_shards_of_a_count_split_the_repositories_without_overlap() -> None:
    repos = [f"repo-{i}" for i in range(200)]
    shards = [Shard(index=i, count=3) for i in range(3)]
    held = [{r for r in repos if s.owns(partition_of(r, 12))} for s in shards]
    assert set().union(*held) == set(repos)
    assert sum(len(h) for h in held) == len(repos)
    assert all(held)


def test_serve_takes_its_shard_from_the_command_line() -> None:
    args = _parser().parse_args(["--broker", "kafka://h:9092", "serve", "--partitions", "0-1"])
    settings = _settings(args)
    assert settings.query_shard == Shard(partitions=frozenset({0, 1}))
    assert _refused(settings, VERBS["serve"]) is None
    args = _parser().parse_args(["--broker", "kafka://h:9092", "serve", "--shard", "1/2"])
    assert _settings(args).query_shard == Shard(index=1, count=2)
    both = ["--broker", "kafka://h:9092", "serve", "--shard", "1/2", "--partitions", "3"]
    assert _refused(_settings(_parser().parse_args(both)), VERBS["serve"]) == (
        "name a query replica's --partitions or its --shard, not both"
    )
    with pytest.raises(ValueError, match="not a shard"):
        _settings(_parser().parse_args(["--broker", "kafka://h:9092", "serve", "--shard", "x"]))
