"""Embedders: the offline default model, the test double, the HTTP adapter, the spec
factory and the content-hash cache."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from stores.text.embedders import (
    Embedder,
    EmbedderUnavailable,
    HashingEmbedder,
    Matrix,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
    embedder_from_spec,
)
from stores.text.embedding_cache import (
    CachedEmbedder,
    InMemoryEmbeddingCache,
    SqliteEmbeddingCache,
)
from stores.text.onnx_embedder import OnnxEmbedder, default_model_files

QUESTION = "How do I read a file line by line in Python?"
PARAPHRASE = "Reading a text file one line at a time in python"
UNRELATED = "The stock market closed higher on Tuesday after a rally in bank shares."


# -- the offline default ---------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> OnnxEmbedder:
    return OnnxEmbedder.default()


def test_default_embedder_gives_384_dim_unit_vectors(minilm: OnnxEmbedder) -> None:
    vectors = minilm.embed([QUESTION, "def parse_file(path): ...", ""])

    assert minilm.dim == 384
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_default_embedder_ranks_a_paraphrase_above_an_unrelated_sentence(
    minilm: OnnxEmbedder,
) -> None:
    question, paraphrase, unrelated = minilm.embed([QUESTION, PARAPHRASE, UNRELATED])

    assert question @ paraphrase > 0.6
    assert question @ paraphrase > question @ unrelated + 0.4


def test_default_embedder_vector_does_not_depend_on_the_batch(minilm: OnnxEmbedder) -> None:
    together = minilm.embed([QUESTION, UNRELATED])
    alone = np.vstack([minilm.embed([QUESTION]), minilm.embed([UNRELATED])])

    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert minilm.embed([]).shape == (0, 384)


def test_onnx_spec_with_the_default_files_matches_the_default(minilm: OnnxEmbedder) -> None:
    model, tokenizer = default_model_files()

    embedder = embedder_from_spec(f"onnx:{model}:{tokenizer}")

    assert embedder.name == "onnx:model"
    np.testing.assert_allclose(embedder.embed([QUESTION]), minilm.embed([QUESTION]), atol=1e-6)


def test_onnx_embedder_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailable, match="not found"):
        OnnxEmbedder(tmp_path / "model.onnx", tmp_path / "tokenizer.json")


# -- the test double --------------------------------------------------------------------


def test_hashing_embedder_is_deterministic_and_normalized() -> None:
    texts = ["def parse_file(path): return tree", "class GraphDelta: pass", QUESTION]

    first = HashingEmbedder(64).embed(texts)
    second = HashingEmbedder(64).embed(texts)

    np.testing.assert_array_equal(first, second)
    assert first.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-6)
    assert isinstance(HashingEmbedder(), Embedder)


def test_hashing_embedder_makes_shared_words_similar() -> None:
    parse, parse_again, graph = HashingEmbedder(256).embed(
        ["parse_file reads the source", "parseFile: read source", "louvain communities of graph"]
    )

    assert parse @ parse_again > parse @ graph
    assert not HashingEmbedder(8).embed([""]).any()


# -- an OpenAI-compatible endpoint ------------------------------------------------------


def fake_vector(text: str) -> list[float]:
    """What the fake server answers: a function of the text, not yet normalized."""
    return [float(len(text)), 1.0, 2.0, float(text.count("a"))]


class FakeEmbeddingsServer:
    """``POST /v1/embeddings`` on 127.0.0.1, answering in reverse order (as the API may),
    and remembering each request's JSON body and Authorization header."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, Any], str | None]] = []
        self.fail_with: int | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((body, self.headers.get("Authorization")))
                if self.path != "/v1/embeddings" or outer.fail_with:
                    self.send_response(outer.fail_with or 404)
                    self.end_headers()
                    return
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(text)}
                    for i, text in enumerate(body["input"])
                ]
                answer = json.dumps({"object": "list", "data": data[::-1], "model": body["model"]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer.encode())

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeEmbeddingsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def server() -> Iterator[FakeEmbeddingsServer]:
    with FakeEmbeddingsServer() as running:
        yield running


def test_openai_embedder_batches_orders_and_normalizes(server: FakeEmbeddingsServer) -> None:
    texts = ["alpha", "b", "banana split", "", "cat"]
    embedder = OpenAIEmbedder(server.base_url, "text-embed", api_key="sk-test", batch_size=2)

    vectors = embedder.embed(texts)

    expected = np.array([fake_vector(text) for text in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert [body["input"] for body, _ in server.requests] == [texts[0:2], texts[2:4], texts[4:]]
    assert {body["model"] for body, _ in server.requests} == {"text-embed"}
    assert {auth for _, auth in server.requests} == {"Bearer sk-test"}
    embedder.close()


def test_openai_embedder_probes_its_dim_once(server: FakeEmbeddingsServer) -> None:
    embedder = OpenAIEmbedder(server.base_url, "text-embed")

    assert (embedder.dim, embedder.dim) == (4, 4)
    assert len(server.requests) == 1
    assert server.requests[0][1] is None


def test_openai_embedder_raises_http_errors_for_the_consumer_to_retry(
    server: FakeEmbeddingsServer,
) -> None:
    server.fail_with = 503

    with pytest.raises(httpx.HTTPStatusError):
        OpenAIEmbedder(server.base_url, "text-embed", dim=4).embed(["x"])


def test_openai_spec_reaches_the_endpoint(server: FakeEmbeddingsServer) -> None:
    embedder = embedder_from_spec(f"openai:{server.base_url}:nomic-embed-text:latest")

    vectors = embedder.embed(["alpha"])

    assert embedder.name == "openai:nomic-embed-text:latest"
    assert vectors.shape == (1, 4)
    assert server.requests[0][0]["model"] == "nomic-embed-text:latest"


# -- sentence-transformers and the spec factory -----------------------------------------


def test_sentence_transformers_missing_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import fails

    with pytest.raises(EmbedderUnavailable, match="pip install sentence-transformers"):
        SentenceTransformerEmbedder("all-MiniLM-L6-v2")
    with pytest.raises(EmbedderUnavailable, match="st:all-MiniLM-L6-v2"):
        embedder_from_spec("st:all-MiniLM-L6-v2")


class FakeSentenceTransformer:
    """What `SentenceTransformerEmbedder` reads of a sentence-transformers model (a
    code-trained one, e.g. ``st:nomic-ai/CodeRankEmbed``, loads the same way)."""

    loaded: list[tuple[str, str]] = []

    def __init__(self, model: str, device: str = "cpu") -> None:
        if model == "missing/model":
            raise OSError("not in the local cache")
        self.loaded.append((model, device))

    def get_sentence_embedding_dimension(self) -> int:
        return 2

    def encode(self, texts: list[str], batch_size: int, convert_to_numpy: bool) -> Matrix:
        assert convert_to_numpy
        return np.array([[3.0, 4.0] if "a" in t else [0.0, 2.0] for t in texts], np.float32)


def test_st_spec_loads_a_sentence_transformers_model_by_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = type(sys)("sentence_transformers")
    fake.SentenceTransformer = FakeSentenceTransformer  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    FakeSentenceTransformer.loaded.clear()

    embedder = embedder_from_spec("st:nomic-ai/CodeRankEmbed")
    assert (embedder.name, embedder.dim) == ("st:nomic-ai/CodeRankEmbed", 2)
    assert FakeSentenceTransformer.loaded == [("nomic-ai/CodeRankEmbed", "cpu")]
    np.testing.assert_allclose(embedder.embed(["a", "b"]), [[0.6, 0.8], [0.0, 1.0]])
    assert embedder.embed([]).shape == (0, 2)
    with pytest.raises(EmbedderUnavailable, match="could not be loaded"):
        embedder_from_spec("st:missing/model")


def test_spec_builds_the_default_and_the_hashing_embedder() -> None:
    default = embedder_from_spec("default")
    hashing = embedder_from_spec("hash:32")

    assert (default.name, default.dim) == ("all-MiniLM-L6-v2-onnx-int8", 384)
    assert isinstance(hashing, HashingEmbedder)
    assert (hashing.name, hashing.dim) == ("hash-32", 32)


MALFORMED_SPECS = [
    "",
    "defaults",
    "default:x",
    "hash:",
    "hash:abc",
    "onnx:/only/model.onnx",
    "st:",
    "bert",
    "openai:localhost:model",
    "openai:http://host:8080:model",  # no path: where would the model name start?
    "openai:http://host/v1",
]


@pytest.mark.parametrize("spec", MALFORMED_SPECS)
def test_spec_rejects_malformed_strings(spec: str) -> None:
    with pytest.raises(ValueError, match="embedder spec"):
        embedder_from_spec(spec)


# -- the cache by content hash ----------------------------------------------------------


class CountingEmbedder:
    """Wraps an embedder and records every text it is asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.seen.extend(texts)
        return self.inner.embed(texts)


def test_cache_embeds_each_content_once() -> None:
    counting = CountingEmbedder(HashingEmbedder(16))
    cached = CachedEmbedder(counting, InMemoryEmbeddingCache())

    first = cached.embed(["a b", "c d", "a b"])
    second = cached.embed(["c d", "a b"])
    third = cached.embed(["e f", "a b"])

    assert counting.seen == ["a b", "c d", "e f"]
    np.testing.assert_array_equal(first, HashingEmbedder(16).embed(["a b", "c d", "a b"]))
    np.testing.assert_array_equal(second, first[[1, 0]])
    np.testing.assert_array_equal(third[1], first[0])
    assert (cached.name, cached.dim) == ("hash-16", 16)


def test_cache_keys_by_the_callers_content_hash_and_the_model() -> None:
    cache = InMemoryEmbeddingCache()
    small = CountingEmbedder(HashingEmbedder(16))
    other_model = CountingEmbedder(HashingEmbedder(32))

    CachedEmbedder(small, cache).embed_keyed(["h1", "h2"], ["alpha", "beta"])
    CachedEmbedder(small, cache).embed_keyed(["h1"], ["alpha"])
    CachedEmbedder(other_model, cache).embed_keyed(["h1"], ["alpha"])

    assert small.seen == ["alpha", "beta"]
    assert other_model.seen == ["alpha"]
    with pytest.raises(ValueError, match="one content hash per text"):
        CachedEmbedder(small, cache).embed_keyed(["h1"], ["alpha", "beta"])


def test_sqlite_cache_survives_a_restart(tmp_path: Path) -> None:
    before = CountingEmbedder(HashingEmbedder(16))
    cache = SqliteEmbeddingCache(tmp_path / "cache")
    vectors = CachedEmbedder(before, cache).embed(["alpha beta", "gamma"])
    cache.close()

    after = CountingEmbedder(HashingEmbedder(16))
    reopened = SqliteEmbeddingCache(tmp_path / "cache")
    again = CachedEmbedder(after, reopened).embed(["gamma", "alpha beta", "delta"])
    reopened.close()

    assert after.seen == ["delta"]
    np.testing.assert_array_equal(again[:2], vectors[[1, 0]])


def test_in_memory_cache_is_bounded() -> None:
    cache = InMemoryEmbeddingCache(max_entries=2)
    one = np.ones(2, dtype=np.float32)

    cache.put_many({"a": one, "b": one, "c": one})

    assert len(cache) == 2
    assert set(cache.get_many(["a", "b", "c"])) == {"b", "c"}


def test_dense_retrieval_is_off_unless_an_embedder_is_named(tmp_path: Path) -> None:
    # issue 17: the packaged MiniLM did not earn its CPU (docs/RETRIEVAL_MULTILANG.md)
    from deploy.dense_setup import dense_index
    from deploy.settings import Settings

    assert Settings().embedder == "none"
    assert dense_index(Settings()) is None
    assert dense_index(Settings(embedder="hash:8", data_dir=tmp_path)) is not None
