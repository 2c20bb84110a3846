"""The state's node table against the dict it replaced: random histories of upserts (new
ids, ids present in the columns or beside them, records the columns cannot hold),
deletions (present and absent ids, one removed and put back), merges after most steps
and after none; the same keys, records equal field for field and of the same types, the
same answers to every read; and a `RepoState` folding random deltas keeps its nodes and
their owner index as a dict of them would."""

from __future__ import annotations

import pickle
import random

import pytest

import stores.node_table as node_table
from stores.deltas import GraphDelta
from stores.node_table import NodeTable, fits, path_in
from stores.owners import owner_path
from stores.records import NodeRecord, fields_of, trusted
from stores.repo_state import RepoState
from tests.factories import graph_delta

IDS = [f"sym:a{i % 3}.py:n{i}" for i in range(14)] + [
    "file:a0.py",
    "file:a1.py",
    "dir:",
    "dir:pkg",
    "ext:os",
    "ext:numpy.linalg",
]
KINDS = ["FUNCTION", "CLASS", "FILE", "FOLDER", "EXTERNAL_MODULE", "METHOD"]


def node(rng: random.Random, node_id: str) -> NodeRecord:
    return NodeRecord(
        id=node_id,
        kind=rng.choice(KINDS),
        name=rng.choice(["n", "a0.py", "", "ünï"]),
        path=rng.choice([None, "a0.py", "pkg", "", path_in(node_id), path_in(node_id)]),
        line_start=rng.choice([None, 1, 300, 70_000, 0, -5]),
        line_end=rng.choice([None, 2, 2**31 - 1]),
        level=rng.choice([None, 0, 1, 3]),
    )


def odd(rng: random.Random, node_id: str) -> NodeRecord:
    """A record the columns cannot give back: a line past int32 (or the sentinel
    itself), a bool for an int, an id other than its key."""
    values = {f: getattr(node(rng, node_id), f) for f in fields_of(NodeRecord)}
    change = rng.choice(["big", "sentinel", "bool", "id"])
    if change == "big":
        values["line_end"] = 2**31
    elif change == "sentinel":
        values["line_start"] = node_table.NONE
    elif change == "bool":
        values["level"] = True
    else:
        values["id"] = node_id + "x"
    return trusted(NodeRecord, values)


def same(a: object, b: object) -> bool:
    """Equal records, each field of the same type (True is not 1)."""
    if a is None or b is None:
        return a is b
    return all(
        getattr(a, f) == getattr(b, f) and type(getattr(a, f)) is type(getattr(b, f))
        for f in fields_of(NodeRecord)
    )


def check(table: NodeTable, oracle: dict[str, NodeRecord], rng: random.Random) -> None:
    assert len(table) == len(oracle)
    assert sorted(table) == sorted(oracle)
    assert len(list(table)) == len(oracle)  # each key once
    values = list(table.values())
    assert len(values) == len(oracle)
    by_id = {}
    for key, value in table.items():
        by_id[key] = value
    assert by_id.keys() == oracle.keys()
    assert all(same(by_id[k], oracle[k]) for k in oracle)
    # values() in the order of iteration (the items above are built from it)
    assert [v.id for v in values] == [v.id for v in by_id.values()]
    for key in [*IDS, "file:none", "sym:zz"]:
        assert (key in table) == (key in oracle)
        assert same(table.get(key), oracle.get(key))
        if key in oracle:
            assert same(table[key], oracle[key])
        else:
            with pytest.raises(KeyError):
                table[key]
    assert table == oracle  # the Mapping's equality: the same keys to equal records


@pytest.mark.parametrize("seed", range(30))
def test_the_table_is_the_dict(seed: int) -> None:
    rng = random.Random(seed)
    merge_often = seed % 3 != 2
    table, oracle = NodeTable(), {}
    for _step in range(120):
        for _ in range(rng.randint(1, 8)):
            key = rng.choice(IDS)
            roll = rng.random()
            if roll < 0.55:
                record = odd(rng, key) if rng.random() < 0.1 else node(rng, key)
                table[key] = oracle[key] = record
            elif roll < 0.75:
                assert same(table.pop(key, None), oracle.pop(key, None))
            elif roll < 0.85:
                if key in oracle:
                    del table[key], oracle[key]
                else:
                    with pytest.raises(KeyError):
                        del table[key]
            else:
                got = table.setdefault(key, record := node(rng, key))
                assert same(got, oracle.setdefault(key, record))
        if merge_often and rng.random() < 0.5:
            table.compact()
        else:
            table.settle()
        check(table, oracle, rng)
    table.compact()
    check(table, oracle, rng)
    copied = pickle.loads(pickle.dumps(table))
    check(copied, oracle, rng)


def test_settle_merges_past_a_share(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(node_table, "LIVE_FLOOR", 4)
    rng = random.Random(1)
    table = NodeTable(node(rng, i) for i in IDS)  # built: one merge, nothing beside
    assert table._live == {} and len(table._ids) == len(IDS)
    for key in IDS[:4]:
        table[key] = node(rng, key)
    table.settle()
    assert len(table._live) == 4  # not past the floor
    table[IDS[4]] = odd(rng, IDS[4])
    del table[IDS[5]]
    table.settle()
    # merged: the odd one stays beside, the removed row is gone
    assert list(table._live) == [IDS[4]] and IDS[5] not in table._ids
    assert len(table._ids) == len(IDS) - 2


def test_a_path_is_read_from_the_id_when_it_says_it() -> None:
    assert [path_in(i) for i in ("file:a.py", "sym:a.py:K.f", "dir:pkg", "dir:", "ext:os")] == [
        "a.py",
        "a.py",
        "pkg",
        "",
        None,
    ]
    said = NodeRecord(id="sym:a.py:f", kind="FUNCTION", name="f", path="a.py")
    other = NodeRecord(id="sym:b:c.py:f", kind="FUNCTION", name="f", path="b:c.py")
    table = NodeTable([said, other])
    assert table._odd_paths == {1: "b:c.py"}  # rows in id order; only the odd one kept
    assert table["sym:a.py:f"] == said and table["sym:b:c.py:f"] == other


def test_the_columns_hold_every_field() -> None:
    assert tuple(fields_of(NodeRecord)) == node_table.FIELDS
    record = NodeRecord(id="sym:a.py:f", kind="FUNCTION", name="f", path="a.py")
    assert fits("sym:a.py:f", record) and not fits("sym:a.py:g", record)
    table = NodeTable([record])
    assert table._live == {} and table["sym:a.py:f"] == record


def deltas(rng: random.Random, count: int) -> list[GraphDelta]:
    out = []
    for seq in range(1, count + 1):
        upserted = {i: node(rng, i) for i in rng.sample(IDS, rng.randint(0, 6))}
        removed = rng.sample(IDS, rng.randint(0, 4))
        out.append(
            graph_delta(
                "r", seq, nodes_removed=tuple(removed), nodes_upserted=tuple(upserted.values())
            )
        )
    return out


@pytest.mark.parametrize("seed", range(12))
def test_a_state_folds_its_nodes_as_a_dict(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    monkeypatch.setattr(node_table, "LIVE_FLOOR", seed % 4)
    rng = random.Random(seed)
    state = RepoState("r")
    oracle: dict[str, NodeRecord] = {}
    for delta in deltas(rng, 60):
        assert state.apply(delta)
        for node_id in delta.nodes_removed:
            oracle.pop(node_id, None)
        for record in delta.nodes_upserted:
            oracle[record.id] = record
        check(state.nodes, oracle, rng)
        owners: dict[str, list[str]] = {}
        for node_id in oracle:
            owner = owner_path(node_id)
            if owner is not None:
                owners.setdefault(owner, []).append(node_id)
        assert {o: sorted(i) for o, i in owners.items()} == {
            o: sorted(i) for o, i in state.nodes_by_owner.items()
        }
        for owner, ids in owners.items():
            assert [n.id for n in state.owned_nodes(owner)] == sorted(ids)


def test_a_state_built_from_a_dict_holds_a_table() -> None:
    record = NodeRecord(id="file:a.py", kind="FILE", name="a.py", path="a.py")
    state = RepoState("r", nodes={"file:a.py": record})  # type: ignore[arg-type]
    assert isinstance(state.nodes, NodeTable) and state.nodes == {"file:a.py": record}
