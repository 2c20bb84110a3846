"""`gazetteer eval localize` in process: its whole-file BM25 peer ranks a tiny tree as
BM25 says, and one instance's index is gone before the next instance's is built."""

from __future__ import annotations

import asyncio
import json
import weakref
from pathlib import Path

import pytest

from deploy.eval_localize import Indexed, localize
from deploy.eval_memory import release, resident_mb
from deploy.eval_peer import WholeFilePeer, peer_of

SHA = "0123456789abcdef0123456789abcdef01234567"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def test_the_peer_ranks_whole_files_by_code_aware_bm25() -> None:
    peer = WholeFilePeer()
    peer.add("src/JsonParser.java", "class JsonParser { Token nextToken() { return null; } }")
    peer.add("src/JsonWriter.java", "class JsonWriter { void writeString(String s) {} }")
    peer.add("README.md", "A JSON library for Java.")
    # "parser" meets JsonParser only once identifiers are split; "json" is in all three
    assert peer.rank("the json parser returns a wrong next token", 10) == [
        "src/JsonParser.java",
        "src/JsonWriter.java",
        "README.md",
    ]
    assert peer.rank("writeString", 10) == ["src/JsonWriter.java"]
    assert peer.rank("nothing here matches", 10) == []
    assert peer.rank("library", 10) == ["README.md"]
    assert peer.rank("src", 10) == ["src/JsonParser.java", "src/JsonWriter.java"]  # the path
    assert len(peer) == 3


def test_the_peer_replaces_a_file_indexed_again() -> None:
    peer = WholeFilePeer()
    peer.add("a.rs", "fn spawn_blocking() {}")
    peer.add("a.rs", "fn shutdown_timeout() {}")
    assert len(peer) == 1
    assert peer.rank("spawn blocking", 5) == []
    assert peer.rank("shutdown timeout", 5) == ["a.rs"]


def test_peer_names() -> None:
    assert peer_of("none") is None
    assert isinstance(peer_of("bm25"), WholeFilePeer)
    with pytest.raises(ValueError, match="unknown peer 'bm26'"):
        peer_of("bm26")


def _tree(root: Path, marker: str) -> None:
    (root / "lib").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "lib/cart.go").write_text(
        f"package lib\n\nfunc TotalPrice{marker}(items []int) int {{\n\treturn 0\n}}\n"
    )
    (root / "lib/payment.go").write_text("package lib\n\nfunc ChargeCard(amount int) int {\n}\n")
    (root / "tests/cart.go").write_text("package tests\n\nfunc TestTotalPrice() {}\n")


def _dataset(tmp_path: Path) -> Path:
    rows = [
        {"instance_id": "acme__shop-1", "repo": "acme/shop", "base_commit": SHA,
         "problem_statement": "TotalPrice is wrong for an empty cart"},
        {"instance_id": "acme__shop-2", "repo": "acme/shop", "base_commit": OTHER,
         "problem_statement": "ChargeCard charges twice"},
    ]  # fmt: skip
    dataset = tmp_path / "dev.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _tree(tmp_path / "repos" / f"acme__shop__{SHA[:12]}", "A")
    _tree(tmp_path / "repos" / f"acme__shop__{OTHER[:12]}", "B")
    return dataset


def test_an_instance_drops_the_previous_instances_index(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    seen: list[weakref.ref[object]] = []
    alive_when_built: list[int] = []

    def witness(indexed: Indexed) -> None:
        # The index, its state and its retrieval: none of the first instance's may
        # still be alive when the second's is built (the run's peak would hold both).
        alive_when_built.append(sum(ref() is not None for ref in seen))
        seen.extend(weakref.ref(part) for part in (indexed, indexed.state, indexed.retrieval))

    out = tmp_path / "out" / "p.jsonl"
    done = asyncio.run(localize(dataset, tmp_path / "repos", out, witness=witness))
    assert done == 2
    assert alive_when_built == [0, 0]
    assert [ref() for ref in seen] == [None] * 6


def test_the_run_writes_the_peer_beside_the_predictions(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path)
    out = tmp_path / "out" / "p.jsonl"
    assert asyncio.run(localize(dataset, tmp_path / "repos", out)) == 2
    rows = [json.loads(x) for x in (out.parent / "p.peer-bm25.jsonl").read_text().splitlines()]
    assert rows == [
        {"instance_id": "acme__shop-1", "ranked_files": ["lib/cart.go"]},
        {"instance_id": "acme__shop-2", "ranked_files": ["lib/payment.go"]},
    ]  # tests/cart.go matches too, and is left out as a test file
    assert asyncio.run(localize(dataset, tmp_path / "repos", tmp_path / "q.jsonl", peer="none"))
    assert not (tmp_path / "q.peer-bm25.jsonl").exists()


def test_memory_is_measured_and_handed_back() -> None:
    assert resident_mb() > 0
    assert release() > 0
