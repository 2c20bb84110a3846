"""Chunk texts packed by file (query/search/chunk_texts.py), and the read side that keeps
its chunk records without them and quotes them in packs (query/retrieval.py)."""

from __future__ import annotations

import zlib

import pytest

from processors.indexer import RepoIndex
from query.read_model import ReadModel
from query.retrieval import QuotedChunks, lean_record
from query.search.chunk_texts import ChunkTexts, pack, unpack
from query.search.packed_chunks import PackedChunks
from tests.factories import Stamp


@pytest.mark.parametrize(
    "texts",
    [
        ("def f():\n    return 1\n", "", "x = 'é€𝄞'\n", "\x00 inside\n"),
        ("lone surrogate \udc80 kept",),
        (),
    ],
)
def test_a_file_s_texts_come_back_exactly(texts: tuple[str, ...]) -> None:
    block = pack(texts)
    assert unpack(block) == texts
    raw = zlib.decompress(block)
    assert int.from_bytes(raw[:4], "little") == len(texts)


def test_the_store_keeps_the_last_files_read_decoded_and_forgets_a_dropped_one() -> None:
    store = ChunkTexts(recent=2)
    store.put("a.py", ["a1", "a2"])
    store.put("b.py", ["b1"])
    store.put("c.py", ["c1"])
    assert store.of("a.py") == ("a1", "a2") and store.of("a.py") is store.of("a.py")
    assert store.of("b.py") == ("b1",) and store.of("c.py") == ("c1",)
    assert list(store._recent) == ["b.py", "c.py"]  # a.py, least recent, left
    store.put("b.py", ["b2"])  # a changed file is never answered from the decoded copy
    assert store.of("b.py") == ("b2",)
    store.drop("c.py")
    store.put("a.py", [])
    assert store.of("c.py") == () and store.of("a.py") == () and len(store) == 1
    assert 0 < store.packed_bytes() < 100


SOURCE = (
    '"""Module."""\n\n\ndef alpha(x):\n    """Alpha doc."""\n    return x + 1\n\n\n'
    "class Beta:\n    def gamma(self):\n        return alpha(2)\n"
)


def test_the_read_side_keeps_no_chunk_text_and_quotes_every_one_in_packs() -> None:
    index, stamp = RepoIndex("app-1"), Stamp(repo="app-1", producer="p")
    model = ReadModel(clock=lambda: 1.0)
    model.apply_delta(stamp.claimed(index))
    full = index.handle(stamp.changed("m.py", SOURCE, origin="scan"), now=1.0)
    assert len(full.files_upserted[0].chunks) >= 3
    assert all(c.text for c in full.files_upserted[0].chunks)
    assert model.apply_delta(full)
    view = model.repos["app-1"]
    held = view.state.files["m.py"]
    assert held == lean_record(full.files_upserted[0]) and held.references == ()
    assert all(c.text == "" for c in held.chunks)
    # one copy, packed: the retrieval reads the state's own (`query.search.packed_chunks`)
    assert isinstance(held.chunks, PackedChunks)
    assert all(view.retrieval.chunks[c.id] == c for c in held.chunks)
    quoted = QuotedChunks(view.state.files, view.retrieval)
    assert tuple(quoted["m.py"]) == full.files_upserted[0].chunks
    assert list(quoted) == ["m.py"] and len(quoted) == 1 and quoted.get("none.py") is None
    # the text is indexed all the same: BM25 finds the docstring's word
    assert [hit.path for hit in view.retrieval.search("alpha doc", limit=1)] == ["m.py"]
