"""The state's edge table against the dict it replaced: folded through random histories
(removals of present and absent keys, upserts of new and present keys, a key touched
twice in one delta), it holds the same keys and records, a node's edges out are the
dict's order seen from that node, its edges in are the dict's edges into it, and each
owner's edges are exactly those out of its nodes; with the changed nodes merged into
the columns often (the merge keeps every order), or never."""

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
CONFIDENCES = ["import", "same_file", "name_match", "structural"]


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
            edge = EdgeRecord(
                src=src,
                dst=dst,
                kind=kind,
                # 0.1 + 0.2 is 0.30000000000000004; -0.0 equals 0.0 but is another float
                weight=rng.choice([0.5, 1.0, 2.0, 0.1 + 0.2, 0.0, -0.0]),
                confidence=rng.choice(CONFIDENCES),  # type: ignore[arg-type]
                line=rng.choice([None, 1, 70_000]),
            )
            upserted += [edge] * (1 + (rng.random() < 0.2))
            keys.append(edge.key)
        out.append((removed, upserted))
    return out


def same(a: EdgeRecord | None, b: EdgeRecord | None) -> bool:
    """Equal records, the weight bit for bit."""
    if a is None or b is None:
        return a is b
    return a == b and a.weight.hex() == b.weight.hex() and type(a) is type(b)


def assert_equal(table: EdgeTable, reference: dict[tuple[str, str, str], EdgeRecord]) -> None:
    assert len(table) == len(reference)
    assert sorted(table) == sorted(reference)
    assert sorted(k for k, _ in table.items()) == sorted(reference)
    assert sorted(table.values(), key=lambda e: e.key) == sorted(
        reference.values(), key=lambda e: e.key
    )
    for key, edge in reference.items():
        assert same(table[key], edge) and same(table.get(key), edge) and key in table
    for key in [(a, b, k) for a in NODES[::3] for b in NODES[::4] for k in ("CALLS", "USES")]:
        assert same(table.get(key), reference.get(key))
        assert (key in table) == (key in reference)
    assert ("x", "y") not in table and table.get(("x", "y", "z"), 7) == 7
    with pytest.raises(KeyError):
        table[("x", "y", "z")]
    for node in [*NODES, "nowhere"]:
        out = [e for e in reference.values() if e.src == node]
        assert table.edges_out(node) == out, node  # the dict's order seen from the node
        assert all(same(a, b) for a, b in zip(table.edges_out(node), out, strict=True))
        assert table.ends(node, outgoing=True) == [(e.dst, e.kind, e.confidence) for e in out]
        into = sorted((e for e in reference.values() if e.dst == node), key=lambda e: e.key)
        assert sorted(table.edges_into(node), key=lambda e: e.key) == into, node
        assert sorted(table.ends(node, outgoing=False)) == sorted(
            (e.src, e.kind, e.confidence) for e in into
        )
    columns = table.columns()
    assert sorted(columns.records(), key=lambda e: e.key) == sorted(
        reference.values(), key=lambda e: e.key
    )
    owners = {owner_path(k[0]) for k in reference} - {None}
    assert set(table.sources_by_owner) == owners
    for owner in owners:
        mine = sorted(k for k in reference if owner_path(k[0]) == owner)
        assert sorted(table.owned_keys(owner)) == mine
        assert [e.key for e in table.owned(owner)] == mine
        assert len(set(table.sources_by_owner[owner])) == len(table.sources_by_owner[owner])
    looked = table.lookup([*reference, ("ext:os", "file:a0.py", "CALLS")])
    assert all(same(looked[k], e) for k, e in reference.items())


@pytest.mark.parametrize("merge", ["often", "never"])
@pytest.mark.parametrize("seed", range(30))
def test_the_table_holds_what_the_dict_held(
    seed: int, merge: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(edge_table, "INDEX_LIMIT", 24)  # the bounded dicts are dropped often
    if merge == "often":
        monkeypatch.setattr(edge_table, "LIVE_FLOOR", 6)
        monkeypatch.setattr(edge_table, "LIVE_SHARE", 2)
    else:
        monkeypatch.setattr(edge_table, "LIVE_FLOOR", 10**9)
    rng = random.Random(seed)
    table, reference = EdgeTable(), {}
    merges = 0
    for removed, upserted in history(rng, 40):
        before = table.lookup([*removed, *(e.key for e in upserted)])
        assert all(same(v, reference.get(k)) for k, v in before.items())
        base = table.columns()
        table.apply(removed, upserted)
        merges += table.columns() is not base and not table._live
        for key in removed:
            reference.pop(key, None)
        for edge in upserted:
            reference[edge.key] = edge
        assert_equal(table, reference)
        if rng.random() < 0.2:  # a long-lived lookup of the hub, then a change to it
            table.get(("file:a0.py", "ext:os", "IMPORTS"))
        if rng.random() < 0.1:  # merged by hand: the same answers
            table.compact()
            assert_equal(table, reference)
    assert (merges > 3) == (merge == "often")
    assert EdgeTable.of(reference.values()) == table  # a table from the records is equal


def test_a_merge_keeps_only_the_ids_the_edges_name() -> None:
    a, b = (EdgeRecord(src="file:m.py", dst=d, kind="CALLS") for d in "ab")
    table = EdgeTable.of([a, b])
    table.compact()
    assert table.columns().names == ["a", "b", "file:m.py"]
    table.apply([b.key], [EdgeRecord(src="c", dst="a", kind="USES")])
    table.compact()
    assert table.columns().names == ["a", "c", "file:m.py"]  # "b" is named by no edge
    assert table.edges_out("b") == [] and sorted(table.edges_into("a"), key=str) == [
        EdgeRecord(src="c", dst="a", kind="USES"),
        a,
    ]


def test_an_upsert_keeps_its_place_and_a_key_upserted_again_goes_last() -> None:
    a, b, c = (EdgeRecord(src="file:m.py", dst=d, kind="CALLS") for d in "abc")
    table = EdgeTable.of([a, b, c])
    table.compact()
    heavier = b.model_copy(update={"weight": 3.0})
    removed, upserted = [a.key], [a, heavier]
    table.apply(removed, upserted)
    assert [(e.dst, e.weight) for e in table.edges_out("file:m.py")] == [
        ("b", 3.0),
        ("c", 1.0),
        ("a", 1.0),
    ]
    table.compact()
    assert [e.dst for e in table.edges_out("file:m.py")] == ["b", "c", "a"]
    assert table.sources_by_owner == {"m.py": ("file:m.py",)}
    table.apply([a.key, b.key, c.key], [])
    assert len(table) == 0 and table.edges_out("file:m.py") == []
    assert table.sources_by_owner == {}
