"""The query's fast paths answer exactly what the plain code answered (issue 15).

Each one replaced a slower form of the same computation: the weighted sum of signals,
a file's best chunk in BM25, the question vectors' cache. These tests hold each to its
plain form, bit for bit, and the cache to the rule that it never outlives a change.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from processors.indexer import RepoIndex
from query.dense import DenseIndex
from query.question_vectors import QuestionVectors
from query.read_model import ReadModel
from query.search.adjacency import Adjacency
from query.search.ranking import SCORED, RankWeights, _score, _weighted
from query.search.sparse import SparseIndex
from stores.records import ChunkRecord
from stores.text.embedders import HashingEmbedder
from stores.text.embedding_cache import InMemoryEmbeddingCache
from stores.vectors import InMemoryVectorStore
from tests.factories import Stamp
from tests.unit.test_retrieval_context_pack import indexed, synthetic


def plain_score(signals: dict[str, float], weights: RankWeights) -> float:
    """The weighted sum as ranking.py wrote it before issue 15."""
    return sum(getattr(weights, name) * signals.get(name, 0.0) for name in SCORED)


def test_the_weighted_sum_is_bit_for_bit_the_plain_sum() -> None:
    rng = random.Random(15)
    values = [0.0, 1.0, 0.5, 1 / 3, 0.1, 0.2, 0.3, 1e-9, 0.7071067811865476]
    checked = 0
    for _ in range(3000):
        weights = RankWeights.from_mapping(
            {n: rng.choice([0.0, -0.0, 0.15, 0.3, 0.6, 1.0, rng.random()]) for n in SCORED}
        )
        signals = {
            n: rng.choice([*values, rng.random()]) for n in (*SCORED, "bm25") if rng.random() < 0.6
        }
        fast, plain = _score(signals, _weighted(weights)), plain_score(signals, weights)
        assert fast.hex() == float(plain).hex(), (signals, weights)
        checked += 1
    assert checked == 3000


def test_zero_weights_and_absent_signals_give_a_float_zero() -> None:
    zero = RankWeights.from_mapping(dict.fromkeys(SCORED, 0.0))
    assert _weighted(zero) == ()
    assert _score({"text": 1.0}, _weighted(zero)) == 0.0
    assert _score({}, _weighted(RankWeights())).hex() == (0.0).hex()


def plain_rank_files(index: SparseIndex, query: str, limit: int) -> list[tuple[str, float, str]]:
    """A file's best chunk by the (-score, id) tuple order, then files by (-score, path)."""
    best: dict[str, tuple[float, str]] = {}
    for chunk_id, score in index.bm25.scores(index._tokenize(query)).items():
        path = index._path_of[chunk_id]
        held = best.get(path)
        if held is None or (-score, chunk_id) < (-held[0], held[1]):
            best[path] = (score, chunk_id)
    ranked = sorted(best.items(), key=lambda item: (-item[1][0], item[0]))[:limit]
    return [(path, score, chunk_id) for path, (score, chunk_id) in ranked]


def chunk(path: str, n: int, text: str) -> ChunkRecord:
    return ChunkRecord(
        id=f"{path}#{n}",
        path=path,
        kind="MODULE",
        line_start=n * 10 + 1,
        line_end=n * 10 + 9,
        text=text,
        content_hash=f"{path}-{n}-{len(text)}",
    )


def test_a_files_best_chunk_ties_by_id_as_before() -> None:
    index = SparseIndex()
    # Equal chunks inside a file (ties broken by id) and equal files (ties by path).
    for path in ("b/same.py", "a/same.py", "c/other.py"):
        index.add_file(path, [chunk(path, n, "parse the request body") for n in (2, 0, 1)])
    index.add_file("d/more.py", [chunk("d/more.py", 0, "parse parse the request request")])
    for query in ("parse request", "body", "same", "the", "nothing here"):
        assert index.rank_files(query, 10) == plain_rank_files(index, query, 10)
    assert index.rank_files("body", 2) == [
        ("a/same.py", index.rank_files("body", 1)[0][1], "a/same.py#0"),
        ("b/same.py", index.rank_files("body", 1)[0][1], "b/same.py#0"),
    ]


class CountingEmbedder(HashingEmbedder):
    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim=dim)
        self.calls: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.extend(texts)
        return super().embed(texts)


def test_a_question_is_embedded_once_and_its_vector_is_the_models() -> None:
    embedder = CountingEmbedder()
    questions = QuestionVectors(embedder, max_entries=2)
    first = questions.vector("parse the body")
    again = questions.vector("parse the body")
    assert again is first and embedder.calls == ["parse the body"]
    assert np.array_equal(first, HashingEmbedder(32).embed(["parse the body"])[0])
    assert first.dtype == np.float32 and first.shape == (32,)
    with pytest.raises(ValueError):
        first[0] = 1.0  # read-only: an answer cannot change a later one's vector
    assert (questions.hits, questions.misses) == (1, 1)


def test_the_least_recently_asked_question_leaves_first() -> None:
    embedder = CountingEmbedder()
    questions = QuestionVectors(embedder, max_entries=2)
    for q in ("a one", "b two", "a one", "c three", "a one", "b two"):
        questions.vector(q)
    # "b two" left when "c three" came (a one was asked more recently), so it is asked
    # of the model again; "a one" never was.
    assert embedder.calls == ["a one", "b two", "c three", "b two"]
    assert len(questions) == 2
    with pytest.raises(ValueError, match="at least one entry"):
        QuestionVectors(embedder, max_entries=0)


FILES = {
    "app/body.py": "def parse_body(request):\n    return request.body\n",
    "app/other.py": "def unrelated():\n    return 1\n",
}
EDITED = "def emit_request():\n    return 2\n"


def folded(files: dict[str, str], embedder: CountingEmbedder) -> tuple[ReadModel, RepoIndex, Stamp]:
    dense = DenseIndex(embedder, InMemoryVectorStore(), InMemoryEmbeddingCache())
    model, index, stamp = ReadModel(clock=lambda: 1.0, dense=dense), RepoIndex("app-1"), Stamp()
    for event in [stamp.claim(), *(stamp.changed(p, t, origin="scan") for p, t in files.items())]:
        delta = index.handle(event, now=1.0)
        assert delta is not None
        model.apply_delta(delta)
    dense.fill()
    return model, index, stamp


def test_a_cached_question_still_sees_every_change_of_the_repository() -> None:
    """The cache holds vectors of questions, never answers: after a file changes, the
    same question (its vector from the cache) is answered exactly as a service that
    never saw the old file answers it."""
    embedder = CountingEmbedder(dim=64)
    model, index, stamp = folded(FILES, embedder)
    retrieval, question = model.repos["app-1"].retrieval, "parse the request body"
    before = retrieval.search(question, limit=2)
    assert before[0].path == "app/body.py" and before[0].best_chunk == "app/body.py#parse_body"
    assert "dense" in before[0].signals
    changed = index.handle(stamp.changed("app/body.py", EDITED), now=2.0)
    assert changed is not None
    model.apply_delta(changed)
    assert model.dense is not None
    model.dense.fill()
    after = retrieval.search(question, limit=2)
    assert embedder.calls.count(question) == 1  # the second search's vector was cached
    never, _, _ = folded({**FILES, "app/body.py": EDITED}, CountingEmbedder(dim=64))
    assert after == never.repos["app-1"].retrieval.search(question, limit=2)
    assert [hit.best_chunk for hit in after] == [
        "app/body.py#emit_request",
        "app/other.py#unrelated",
    ]


def test_a_files_importers_and_inbound_degree_match_a_scan_of_every_edge() -> None:
    state, _ = indexed(synthetic())
    adjacency = Adjacency.of(state)
    importers_seen = 0
    for path in sorted(state.files):
        node = f"file:{path}"
        scanned = sorted(
            key[0].split(":", 1)[1] for key in state.edges if key[1] == node and key[2] == "IMPORTS"
        )
        assert adjacency.importing_paths(path) == scanned
        importers_seen += len(scanned)
        plain = {
            e.src
            for e in state.edges.values()
            if e.dst == node
            and e.kind in ("IMPORTS", "REFERENCES")
            and e.confidence != "name_match"
            and e.src.startswith("file:")
            and e.src != node
        }
        assert adjacency.inbound(path) == len(plain) == adjacency.inbound(path)
    assert importers_seen > 30  # the synthetic modules import each other
    assert adjacency.importing_paths("no/such.py") == [] and adjacency.inbound("no/such.py") == 0
