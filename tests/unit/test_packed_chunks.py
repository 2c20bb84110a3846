"""The read side's packed chunk records and sections (query/search/packed_chunks.py,
packed_sections.py) against the records they stand for.

Pinned: a file's chunks (and sections) packed read back equal, field by field, by index,
slice and iteration; compare and hash as their tuple; pickle; and what cannot be packed
exactly stays as it was. Folded: a `ReadModel` (which packs its state's chunks) against an
oracle folded from the same random histories of real parses with the records kept as
tuples, as the read side held them before: the same state (its fingerprint), the same
chunks by id, the same search hits, context packs (question, file and symbol), churn
images before each delta and churn ledger."""

from __future__ import annotations

import pickle
import random

import pytest

from processors.indexer import RepoIndex
from query.churn.images import capture, symbol_prints
from query.churn.ledger import ChurnLedger
from query.overview.folder_summary import file_counts
from query.overview.overview import repo_sizes
from query.read_model import ReadModel
from query.retrieval import QuotedChunks, RepoRetrieval, lean_record, question_pack
from query.search import packed_sections
from query.search.context_pack import file_context, symbol_context
from query.search.graph_search import graph_search
from query.search.packed_chunks import PackedChunks, ids_and_hashes, pack, spans
from query.search.packed_facts import PackedFacts
from query.search.packed_sections import PackedSections
from stores.deltas import GraphDelta
from stores.projections.graph_state import FileGraphState
from stores.records import ChunkRecord, FileRecord, Section, trusted
from stores.repo_state import RepoState
from tests.factories import Stamp

H1, H2 = "0" * 63 + "1", "ab" * 32


def chunk(id_: str, path: str = "a.py", **fields: object) -> ChunkRecord:
    values: dict[str, object] = {
        "id": id_,
        "path": path,
        "kind": "FUNCTION",
        "qualname": None,
        "line_start": 1,
        "line_end": 2,
        "signature": None,
        "doc": None,
        "text": "",
        "content_hash": H1,
    }
    values.update(fields)
    return ChunkRecord(**values)  # type: ignore[arg-type]


PINNED = (
    chunk("a.py#f", qualname="f", signature="def f(x):", doc="Doc.", line_end=9),
    chunk("a.py#K.m", kind="METHOD", qualname="K.m", line_start=300, line_end=70000),
    chunk("a.py#f~2", qualname="f", content_hash=H2, line_start=2**32 - 1, line_end=2**32 - 1),
    chunk("a.py#module:1", kind="MODULE", line_start=11, line_end=12),
)


def test_packed_chunks_read_back_as_the_records() -> None:
    packed = pack("a.py", PINNED)
    assert isinstance(packed, PackedChunks) and len(packed) == 4 and packed
    assert tuple(packed) == PINNED and list(packed) == list(PINNED)
    assert [packed[i] for i in range(4)] == list(PINNED) and packed[-1] == PINNED[-1]
    assert packed[1:3] == PINNED[1:3] and packed[::-2] == PINNED[::-2] and packed[9:] == ()
    with pytest.raises(IndexError):
        packed[4]
    with pytest.raises(IndexError):
        packed[-5]
    assert [(c.line_start, c.line_end, c.content_hash) for c in packed] == [
        (1, 9, H1),
        (300, 70000, H1),
        (2**32 - 1, 2**32 - 1, H2),
        (11, 12, H1),
    ]
    assert all(c.text == "" and c.path == "a.py" for c in packed)
    assert list(ids_and_hashes(packed)) == [(c.id, c.content_hash) for c in PINNED]
    assert list(ids_and_hashes(PINNED)) == list(ids_and_hashes(packed))
    assert (
        list(spans(packed))
        == list(spans(PINNED))
        == [
            ("a.py#f", "FUNCTION", "f", 1, 9),
            ("a.py#K.m", "METHOD", "K.m", 300, 70000),
            ("a.py#f~2", "FUNCTION", "f", 2**32 - 1, 2**32 - 1),
            ("a.py#module:1", "MODULE", None, 11, 12),
        ]
    )
    # as their tuple: equal both ways, same hash, and so is a file record holding it
    assert packed == PINNED and PINNED == packed and hash(packed) == hash(PINNED)
    assert packed == list(PINNED) and packed != PINNED[:3] and packed != "a.py"
    assert packed != tuple(replace_hash(c, H2) for c in PINNED)
    assert pickle.loads(pickle.dumps(packed)) == packed == pack("a.py", PINNED)
    assert pack("a.py", packed) is packed and pack("a.py", ()) == ()
    # the strings a chunk shares are the very ones packed, not copies
    assert all(
        a.id is b.id and a.signature is b.signature for a, b in zip(packed, PINNED, strict=True)
    )
    assert packed.packed_bytes() == 4 * 40
    assert [packed.by_id(c.id) for c in PINNED] == list(PINNED)
    assert packed.by_id("a.py#nope") is None and packed.by_id("a.py") is None


def replace_hash(c: ChunkRecord, digest: str) -> ChunkRecord:
    return c.model_copy(update={"content_hash": digest})


@pytest.mark.parametrize(
    "odd",
    [
        chunk("a.py#t", text="x = 1"),  # a text: not lean
        chunk("b.py#f", path="b.py"),  # another file's
        chunk("a.py#f", content_hash="AB" * 32),  # upper case: hex() would not give it back
        chunk("a.py#f", content_hash="0" * 62),
        chunk("a.py#f", content_hash="zz" * 32),
        chunk("a.py#f", content_hash=""),
        chunk("a.py#f", line_end=2**32),
    ],
)
def test_what_cannot_be_packed_exactly_stays_as_it_was(odd: ChunkRecord) -> None:
    chunks = (PINNED[0], odd)
    assert pack("a.py", chunks) is chunks


SECTIONS = (
    Section(line_start=1, line_end=3, label="imports"),
    Section(line_start=5, line_end=400, label="class Ünïcode"),
    Section(line_start=401, line_end=2**32 - 1, label=""),
    Section(line_start=7, line_end=9, label="def main"),
)


def test_packed_sections_read_back_as_the_records() -> None:
    packed = packed_sections.pack(SECTIONS)
    assert isinstance(packed, PackedSections) and len(packed) == 4 and packed
    assert tuple(packed) == SECTIONS and [packed[i] for i in range(4)] == list(SECTIONS)
    assert packed[-1] == SECTIONS[-1] and packed[1:3] == SECTIONS[1:3]
    assert [s.label for s in packed] == ["imports", "class Ünïcode", "", "def main"]
    with pytest.raises(IndexError):
        packed[4]
    assert packed == SECTIONS and SECTIONS == packed and hash(packed) == hash(SECTIONS)
    assert packed != SECTIONS[:3] and packed != SECTIONS[::-1] and packed != "imports"
    assert pickle.loads(pickle.dumps(packed)) == packed == packed_sections.pack(SECTIONS)
    assert packed_sections.pack(packed) is packed and packed_sections.pack(()) == ()
    far = (Section(line_start=1, line_end=2**32, label="x"),)
    assert packed_sections.pack(far) is far


def test_a_state_of_packed_records_prints_as_the_tuples() -> None:
    record = FileRecord(
        path="a.py",
        language="python",
        size=1,
        lines=1,
        content_hash="h",
        skipped=None,
        parse_errors=0,
        chunks=PINNED,
        sections=SECTIONS,
        origin="scan",
        commit=None,
        working_tree=True,
        producer="p",
    )
    lean = lean_record(record)
    assert isinstance(lean.chunks, PackedChunks) and isinstance(lean.sections, PackedSections)
    assert lean == record and lean_record(lean) is lean
    plain, packed = RepoState("app", files={"a.py": record}), RepoState("app", files={"a.py": lean})
    assert packed.fingerprint() == plain.fingerprint()
    assert symbol_prints(lean) == symbol_prints(record)


# ---- folded: a ReadModel against the records kept as tuples

PATHS = ["a.py", "pkg/b.py", "odd#name.py", "pkg/c.py", "notes.md", "pkg/__init__.py"]
QUESTIONS = ["doc two", "return x", "class method", "part text", "import helper", "value"]


def body(rng: random.Random, path: str) -> str:
    if path.endswith(".md"):
        return "".join(
            f"# Part {i}\n\nText {rng.randint(0, 3)}.\n\n" for i in range(rng.randint(1, 3))
        )
    lines = [f"from pkg.c import f{rng.randint(0, 5)}"] * (rng.random() < 0.5)
    lines += [f"X = {rng.randint(0, 2)}"] * (rng.random() < 0.5)
    for i in rng.sample(range(6), rng.randint(0, 4)):
        doc = ["one", "two", "three"][i % 3]
        lines.append(f'def f{i}(x):\n    """Doc {doc}."""\n    return x + {rng.randint(0, 2)}')
    if rng.random() < 0.5:
        lines.append(f"class K{rng.randint(0, 1)}:\n    def m(self):\n        return f1(1)")
    if rng.random() < 0.3:  # a repeated qualname: ids f0, f0~2
        lines.append("def f0(y):\n    return y")
    return "\n\n".join(lines) + "\n"


def history(rng: random.Random, steps: int) -> list[GraphDelta]:
    index, stamp = RepoIndex("app"), Stamp(repo="app", producer="p")
    deltas = [stamp.claimed(index)]
    files: dict[str, str] = {}
    for step in range(steps):
        path, roll = rng.choice(PATHS), rng.random()
        if roll < 0.15 and path in files:
            del files[path]
            event = stamp.deleted(path)
        elif roll < 0.35 and path in files:  # re-reported unchanged, as a rescan does
            event = stamp.changed(path, files[path], origin="scan")
        else:
            files[path] = body(rng, path)
            event = stamp.changed(path, files[path])
        delta = index.handle(event, now=1000.0 + step)
        if delta is not None:
            deltas.append(delta)
    return deltas


def as_tuples(record: FileRecord) -> FileRecord:
    """The record as the read side held it before: lean, its chunks a tuple."""
    chunks = tuple(c.model_copy(update={"text": ""}) for c in record.chunks)
    return trusted(FileRecord, {**record.__dict__, "references": (), "chunks": chunks})


class Oracle:
    """The read side's fold (state, file graph, retrieval, churn) over tuple records."""

    def __init__(self) -> None:
        self.state = RepoState("app")
        self.graph = FileGraphState("app")
        self.retrieval = RepoRetrieval("app")
        self.churn = ChurnLedger()

    def apply(self, full: GraphDelta) -> None:
        lean = full.model_copy(
            update={"files_upserted": tuple(map(as_tuples, full.files_upserted))}
        )
        prior = self.churn.before(self.state, self.graph, lean)
        assert self.state.apply(lean)
        self.graph.apply(lean)
        self.retrieval.apply(full, {r.path: r for r in lean.files_upserted})
        self.churn.apply(lean, prior, self.state, self.graph)


@pytest.mark.parametrize("seed", range(12))
def test_a_read_model_of_packed_chunks_answers_as_the_tuples_did(seed: int) -> None:
    rng = random.Random(seed)
    model, oracle = ReadModel(clock=lambda: 5000.0), Oracle()
    packed = {"chunks": 0, "sections": 0, "symbols": 0, "imports": 0, "keywords": 0}
    for delta in history(rng, 30):
        view = model.view("app")
        if view.state.seq:  # the churn's images before the delta, read from each state
            assert capture(view.state, view.file_graph, delta) == capture(
                oracle.state, oracle.graph, delta
            )
        assert model.apply_delta(delta)
        oracle.apply(delta)
        state = view.state
        assert state.fingerprint() == oracle.state.fingerprint()
        for path, record in state.files.items():
            assert record == oracle.state.files[path]
            assert record.sections == oracle.state.files[path].sections
            assert record.chunks == oracle.state.files[path].chunks
            packed["chunks"] += isinstance(record.chunks, PackedChunks)
            packed["sections"] += isinstance(record.sections, PackedSections)
            assert symbol_prints(record) == symbol_prints(oracle.state.files[path])
        assert dict(view.retrieval.chunks) == dict(oracle.retrieval.chunks)
        assert view.churn.parts() == oracle.churn.parts()
        quoted = QuotedChunks(state.files, view.retrieval)
        oracle_quoted = QuotedChunks(oracle.state.files, oracle.retrieval)
        assert {p: tuple(quoted[p]) for p in quoted} == {
            p: tuple(oracle_quoted[p]) for p in oracle_quoted
        }
        for question in rng.sample(QUESTIONS, 2):
            assert view.retrieval.search(question) == oracle.retrieval.search(question)
            pack_of = question_pack(state, view.retrieval, question, quoted, budget=2000)
            expected = question_pack(
                oracle.state, oracle.retrieval, question, oracle_quoted, budget=2000
            )
            assert pack_of == expected
        for path in sorted(state.files)[:2]:
            assert file_context(state, quoted, path, budget=1500) == file_context(
                oracle.state, oracle_quoted, path, budget=1500
            )
        assert symbol_context(state, quoted, "f1", budget=1500) == symbol_context(
            oracle.state, oracle_quoted, "f1", budget=1500
        )
        # what reads every file's symbols and imports by column (packed: no record)
        files, oracle_files = list(state.files.values()), list(oracle.state.files.values())
        for q in ("f1", "k0", "pkg", "m", "x"):
            found = graph_search(files, q, importance={}, limit=50)
            assert found == graph_search(oracle_files, q, importance={}, limit=50)
        assert file_counts(state.files, state.edges) == file_counts(
            oracle.state.files, oracle.state.edges
        )
        assert repo_sizes(state.files, state.edges, 0) == repo_sizes(
            oracle.state.files, oracle.state.edges, 0
        )
        for path, record in state.files.items():
            assert record.symbols == oracle.state.files[path].symbols
            assert record.imports == oracle.state.files[path].imports
            assert record.keywords == oracle.state.files[path].keywords
            packed["symbols"] += isinstance(record.symbols, PackedFacts)
            packed["imports"] += isinstance(record.imports, PackedFacts)
            packed["keywords"] += isinstance(record.keywords, PackedFacts)
    assert all(packed.values())


def test_the_oracle_tells_a_changed_chunk() -> None:
    """The fold's comparisons can fail: a chunk whose hash differs breaks them."""
    rng = random.Random(3)
    model, oracle = ReadModel(clock=lambda: 5000.0), Oracle()
    for delta in history(rng, 10):
        model.apply_delta(delta)
        oracle.apply(delta)
    path, record = next(
        (p, r) for p, r in oracle.state.files.items() if r.chunks and r.chunks[0].qualname
    )
    first = record.chunks[0]
    bent = (replace_hash(first, H2), *record.chunks[1:])
    oracle.state.files[path] = trusted(FileRecord, {**record.__dict__, "chunks": bent})
    packed = model.view("app").state.files[path]
    assert packed.chunks != bent and packed != oracle.state.files[path]
    assert model.view("app").state.fingerprint() != oracle.state.fingerprint()
    assert symbol_prints(packed) != symbol_prints(oracle.state.files[path])
