"""The state's edge table against the dict it replaced: folded through random histories
(removals of present and absent keys, upserts of new and present keys, a key touched
twice in one delta), it holds the same keys and records, a node's list is the dict's
order seen from that node, and each owner's edges are exactly those out of its nodes."""

from __future__ import annotations

import random

import pytest

import stores.edge_table as edge_table
from stores.edge_table import EdgeTable, owner_path
from stores.records import EdgeRecord

NODES = [f"sym:a{i % 3}.py:n{i}" for i in range(12)] + [
    "file:a0.py",
    "file:a1.py",
    "dir:pkg",
    "ext:os",
]
KINDS = ["CALLS", "IMPORTS", "CONTAINS", "REFERENCES", "TESTS"]


def history(
    rng: random.Random, count: int
) -> list[tuple[list[tuple[str, str, str]], list[EdgeRecord]]]:
    keys: list[tuple[str, str, str]] = []
    out = []
    for _ in range(count):
        removed = rng.sample(keys, min(len(keys), rng.randint(0, 12)))
        removed += [(rng.choice(NODES), rng.choice(NODES), "USES")] * (rng.random() < 0.3)
        upserted = []
        # "file:a0.py" is a hub: past INDEXED_FROM edges out, its lookups go by a dict.
        for _ in range(rng.randint(0, 14)):
            if (removed or keys) and rng.random() < 0.4:
                src, dst, kind = rng.choice(removed or keys)
            else:
                src = "file:a0.py" if rng.random() < 0.4 else rng.choice(NODES)
                dst, kind = rng.choice(NODES), rng.choice(KINDS)
            edge = EdgeRecord(src=src, dst=dst, kind=kind, weight=rng.choice([0.5, 1.0, 2.0]))
            upserted += [edge] * (1 + (rng.random() < 0.2))
            keys.append(edge.key)
        out.append((removed, upserted))
    return out


def assert_equal(table: EdgeTable, reference: dict[tuple[str, str, str], EdgeRecord]) -> None:
    assert len(table) == len(reference)
    assert sorted(table) == sorted(reference)
    assert sorted(k for k, _ in table.items()) == sorted(reference)
    for key, edge in reference.items():
        assert table[key] is edge and table.get(key) is edge and key in table
    for key in [(a, b, k) for a in NODES[::3] for b in NODES[::4] for k in ("CALLS", "USES")]:
        assert table.get(key) is reference.get(key)
        assert (key in table) == (key in reference)
    assert ("x", "y") not in table and table.get(("x", "y", "z"), 7) == 7
    with pytest.raises(KeyError):
        table[("x", "y", "z")]
    for src in {k[0] for k in reference}:
        assert [id(e) for e in table.out[src]] == [
            id(e) for e in reference.values() if e.src == src
        ], src
    assert set(table.out) == {k[0] for k in reference}  # no node without edges has a list
    owners = {owner_path(k[0]) for k in reference} - {None}
    assert set(table.sources_by_owner) == owners
    for owner in owners:
        mine = sorted(k for k in reference if owner_path(k[0]) == owner)
        assert sorted(table.owned_keys(owner)) == mine
        assert [e.key for e in table.owned(owner)] == mine
        assert len(set(table.sources_by_owner[owner])) == len(table.sources_by_owner[owner])
    looked = table.lookup([*reference, ("ext:os", "file:a0.py", "CALLS")])
    assert all(looked[k] is e for k, e in reference.items())


@pytest.mark.parametrize("seed", range(30))
def test_the_table_holds_what_the_dict_held(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(edge_table, "INDEX_LIMIT", 24)  # the bounded dicts are dropped often
    rng = random.Random(seed)
    table, reference = EdgeTable(), {}
    for removed, upserted in history(rng, 40):
        before = table.lookup([*removed, *(e.key for e in upserted)])
        assert before == {k: reference.get(k) for k in before}
        table.apply(removed, upserted)
        for key in removed:
            reference.pop(key, None)
        for edge in upserted:
            reference[edge.key] = edge
        assert_equal(table, reference)
        if rng.random() < 0.2:  # a long-lived lookup of the hub, then a change to it
            table.get(("file:a0.py", "ext:os", "IMPORTS"))
    assert EdgeTable.of(reference.values()) == table  # a table from the records is equal


def test_an_upsert_keeps_its_place_and_a_key_upserted_again_goes_last() -> None:
    a, b, c = (EdgeRecord(src="file:m.py", dst=d, kind="CALLS") for d in "abc")
    table = EdgeTable.of([a, b, c])
    heavier = b.model_copy(update={"weight": 3.0})
    removed, upserted = [a.key], [a, heavier]
    table.apply(removed, upserted)
    assert [(e.dst, e.weight) for e in table.out["file:m.py"]] == [
        ("b", 3.0),
        ("c", 1.0),
        ("a", 1.0),
    ]
    assert table.sources_by_owner == {"m.py": ("file:m.py",)}
    table.apply([a.key, b.key, c.key], [])
    assert len(table) == 0 and table.out == {} and table.sources_by_owner == {}
