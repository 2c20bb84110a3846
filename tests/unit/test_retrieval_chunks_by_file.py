"""The retrieval's chunks by id, read through each file's tuple, against the dict by id
they replaced: folded through random histories of real parses (files edited, deleted,
re-reported unchanged by a second scan, one path holding a '#'), the mapping holds the
same ids, in the same order, to records equal to the ones the dict held (the state's
chunks are packed, `query.search.packed_chunks`, and built again as they are read), and
misses alike; and a file is indexed again exactly when the dict's hashes and names said
it changed."""

from __future__ import annotations

import random
from collections.abc import Mapping

import pytest

from processors.indexer import RepoIndex
from query.retrieval import DEFINING_KINDS, RepoRetrieval, lean_record
from stores.deltas import GraphDelta
from stores.records import ChunkRecord, FileRecord
from tests.factories import Stamp

PATHS = ["a.py", "pkg/b.py", "odd#name.py", "pkg/c.py", "notes.md"]


class Oracle:
    """The chunks as `RepoRetrieval` kept them before: a dict by id, each file's ids
    beside its hashes and names."""

    def __init__(self) -> None:
        self.chunks: dict[str, ChunkRecord] = {}
        self.texts: dict[str, list[str]] = {}  # what was indexed of each file
        self.files: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}

    def apply(self, delta: GraphDelta, lean: dict[str, FileRecord]) -> None:
        for path in delta.files_removed:
            self.remove(path)
        for record in delta.files_upserted:
            self.upsert(record, lean[record.path])

    def upsert(self, record: FileRecord, kept: FileRecord) -> None:
        hashes = tuple(c.content_hash for c in record.chunks)
        names = tuple(sorted({s.name for s in record.symbols if s.kind in DEFINING_KINDS}))
        held = self.files.get(record.path)
        if held is not None and held[:2] == (hashes, names):
            for chunk in kept.chunks:
                self.chunks[chunk.id] = chunk
            return
        self.remove(record.path)
        if not record.chunks and not names:
            return
        for chunk in kept.chunks:
            self.chunks[chunk.id] = chunk
        self.texts[record.path] = [c.text for c in record.chunks]
        self.files[record.path] = (hashes, names, tuple(c.id for c in record.chunks))

    def remove(self, path: str) -> None:
        held = self.files.pop(path, None)
        self.texts.pop(path, None)
        for chunk_id in held[2] if held is not None else ():
            self.chunks.pop(chunk_id, None)


def body(rng: random.Random, path: str) -> str:
    if path.endswith(".md"):
        return "".join(
            f"# Part {i}\n\nText {rng.randint(0, 3)}.\n\n" for i in range(rng.randint(1, 3))
        )
    lines = [f"X = {rng.randint(0, 2)}"] * (rng.random() < 0.5)
    for i in rng.sample(range(6), rng.randint(0, 4)):
        lines.append(f'def f{i}(x):\n    """Doc {i}."""\n    return x + {rng.randint(0, 2)}')
    if rng.random() < 0.5:
        lines.append(f"class K{rng.randint(0, 1)}:\n    def m(self):\n        return 1")
    return "\n\n".join(lines) + "\n"


def history(rng: random.Random, steps: int) -> list[GraphDelta]:
    index, stamp = RepoIndex("app"), Stamp(repo="app", producer="p")
    deltas = [stamp.claimed(index)]
    files: dict[str, str] = {}
    for step in range(steps):
        path, roll = rng.choice(PATHS), rng.random()
        if roll < 0.2 and path in files:
            del files[path]
            event = stamp.deleted(path)
        elif roll < 0.4 and path in files:  # re-reported unchanged, as a rescan does
            event = stamp.changed(path, files[path], origin="scan")
        else:
            files[path] = body(rng, path)
            event = stamp.changed(path, files[path])
        delta = index.handle(event, now=1000.0 + step)
        if delta is not None:
            deltas.append(delta)
    return deltas


def assert_alike(chunks: object, oracle: dict[str, ChunkRecord]) -> None:
    assert isinstance(chunks, Mapping)
    assert list(chunks) == list(oracle) and len(chunks) == len(oracle)
    assert list(chunks.values()) == list(oracle.values())
    for chunk_id, chunk in oracle.items():
        assert chunks[chunk_id] == chunk and chunk_id in chunks
    for missing in ["a.py", "a.py#", "a.py#nope", "odd#x", "odd", "#", "", "pkg/b.py#f9"]:
        assert chunks.get(missing) is oracle.get(missing) is None
        assert (missing in chunks) == (missing in oracle)
    with pytest.raises(KeyError):
        chunks["nope#f0"]


@pytest.mark.parametrize("seed", range(25))
def test_the_chunks_by_file_are_the_chunks_by_id(seed: int) -> None:
    rng = random.Random(seed)
    retrieval, oracle = RepoRetrieval("app"), Oracle()
    seen: set[str] = set()
    for delta in history(rng, 40):
        lean = {r.path: lean_record(r) for r in delta.files_upserted}
        retrieval.apply(delta, lean)
        oracle.apply(delta, lean)
        assert_alike(retrieval.chunks, oracle.chunks)
        assert set(retrieval.paths()) == set(oracle.files)
        for path, texts in oracle.texts.items():  # re-indexed exactly when it changed
            assert list(retrieval.texts.of(path)) == texts, path
        seen |= set(oracle.chunks)
    assert any("odd#name.py#" in i for i in seen) and any(i.startswith("notes.md#") for i in seen)
