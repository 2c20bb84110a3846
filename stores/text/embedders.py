"""Embedders: text in, unit-length vectors out, behind one small port.

`Embedder` is the seam between chunking and the vector store. Adapters:

- `OnnxEmbedder` (in `onnx_embedder`): the offline default, all-MiniLM-L6-v2 as int8
  ONNX on onnxruntime, or any ONNX model file + tokenizer.json;
- `SentenceTransformerEmbedder`: a sentence-transformers model by name (optional
  dependency, needs torch);
- `OpenAIEmbedder`: an OpenAI-compatible ``/v1/embeddings`` endpoint over httpx;
- `HashingEmbedder`: a deterministic test double, fast and model-free.

`embedder_from_spec` builds one from a settings string. Every adapter returns a
float32 matrix of shape (len(texts), dim) whose non-empty rows have norm 1, so a dot
product is a cosine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import httpx
import numpy as np
from numpy.typing import NDArray

from stores.text.tokens import tokenize

Matrix = NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors of a fixed dimension, in input order.

    `name` identifies the vector space (model and its settings): vectors of two
    embedders with different names must never be compared or cached together.
    """

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Matrix: ...


class EmbedderUnavailable(RuntimeError):
    """An embedder cannot be built here: a missing package, model file or download."""


def l2_normalize(vectors: NDArray[Any]) -> Matrix:
    """Rows scaled to unit length; all-zero rows stay zero (no NaN)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))


class HashingEmbedder:
    """Signed feature hashing of code-aware tokens (`tokens.tokenize`, the sparse
    index's): deterministic across processes and machines (blake2b, not `hash()`), no
    model, about 2,500 thirty-line chunks per second.

    A test double: texts that share words get similar vectors, which is enough to
    exercise ranking, caching and stores without loading a model. A text without
    tokens (empty, or only stopwords) maps to the zero vector.
    """

    def __init__(self, dim: int = 256) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        self.dim = dim
        self.name = f"hash-{dim}"

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in tokenize(text):
                digest = int.from_bytes(
                    hashlib.blake2b(token.encode(), digest_size=8).digest(), "big"
                )
                out[row, digest % self.dim] += 1.0 if digest >> 63 else -1.0
        return l2_normalize(out)


class SentenceTransformerEmbedder:
    """A sentence-transformers model by name or local path, loaded at construction so
    a bad setting fails at startup. Needs `sentence-transformers` (and torch), which
    Gazetteer does not install; Hugging Face downloads fail on offline machines, so the
    model must already be in the local cache or be a local directory."""

    def __init__(self, model: str, *, batch_size: int = 32, device: str = "cpu") -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"embedder 'st:{model}' needs the sentence-transformers package (and torch):"
                " pip install sentence-transformers; or use the offline default embedder"
            ) from exc
        try:
            self._model = SentenceTransformer(model, device=device)
        except (OSError, ValueError) as exc:  # Hugging Face reports offline misses as OSError
            raise EmbedderUnavailable(
                f"sentence-transformers model {model!r} could not be loaded (not in the local"
                f" cache and not downloadable here?): {exc}"
            ) from exc
        dim = self._model.get_sentence_embedding_dimension()
        if dim is None:
            raise EmbedderUnavailable(f"sentence-transformers model {model!r} has no fixed dim")
        self.dim = int(dim)
        self.name = f"st:{model}"
        self._batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts), batch_size=self._batch_size, convert_to_numpy=True
        )
        return l2_normalize(vectors)


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (OpenAI, vLLM, Ollama, LiteLLM, TEI):
    POST ``{base_url}/embeddings`` with ``{"model", "input": [...]}``.

    Transport and HTTP status errors propagate as `httpx.HTTPError` (transient: the
    consumer retries); a response that does not fit the request raises ValueError.
    `dim` is asked of the server with one probe request unless given.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        batch_size: int = 64,
        timeout_s: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s, transport=transport
        )
        self._model = model
        self._batch_size = batch_size
        self._dim = dim
        self.name = f"openai:{model}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [
            self._request(texts[start : start + self._batch_size])
            for start in range(0, len(texts), self._batch_size)
        ]
        matrix = np.vstack(parts)
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise ValueError(f"{self.name} returned dim {matrix.shape[1]}, expected {self._dim}")
        return matrix

    def _request(self, texts: Sequence[str]) -> Matrix:
        response = self._client.post(
            "/embeddings", json={"model": self._model, "input": list(texts)}
        )
        response.raise_for_status()
        data = response.json().get("data")
        if not isinstance(data, list) or len(data) != len(texts):
            raise ValueError(f"{self.name} answered {len(texts)} inputs with a malformed 'data'")
        # The API may answer out of order; each item carries its input's index.
        rows = sorted(data, key=lambda item: int(item["index"]))
        return l2_normalize(np.array([row["embedding"] for row in rows], dtype=np.float32))

    def close(self) -> None:
        self._client.close()


_OPENAI_SPEC = re.compile(r"^(https?://[^/\s]+/[^:\s]*):(.+)$")


def embedder_from_spec(spec: str, *, api_key: str | None = None) -> Embedder:
    """Build an embedder from a settings string:

    - ``default``: all-MiniLM-L6-v2 int8 ONNX, offline;
    - ``hash:256``: `HashingEmbedder` of that dimension (tests);
    - ``onnx:/path/model.onnx:/path/tokenizer.json``: any BERT-like ONNX model;
    - ``st:model-name``: a sentence-transformers model;
    - ``openai:http://host:port/v1:model``: an OpenAI-compatible endpoint; the URL
      needs a path (``/v1``) so that a model name may contain colons.
    """
    kind, _, rest = spec.partition(":")
    if kind == "default" and not rest:
        # Imported here: onnxruntime and tokenizers load only when an ONNX model is used.
        from stores.text.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder.default()
    if kind == "hash":
        if not rest.isdigit():
            raise ValueError(f"embedder spec {spec!r}: expected hash:<dim>")
        return HashingEmbedder(int(rest))
    if kind == "onnx":
        model_path, sep, tokenizer_path = rest.rpartition(":")
        if not sep or not model_path or not tokenizer_path:
            raise ValueError(f"embedder spec {spec!r}: expected onnx:<model.onnx>:<tokenizer.json>")
        from stores.text.onnx_embedder import OnnxEmbedder

        return OnnxEmbedder(model_path, tokenizer_path)
    if kind == "st" and rest:
        return SentenceTransformerEmbedder(rest)
    if kind == "openai":
        match = _OPENAI_SPEC.match(rest)
        if match is None:
            raise ValueError(
                f"embedder spec {spec!r}: expected openai:<http(s)://host/path>:<model>"
            )
        return OpenAIEmbedder(match.group(1), match.group(2), api_key=api_key)
    raise ValueError(
        f"unknown embedder spec {spec!r}: use default, hash:<dim>, onnx:<model>:<tokenizer>,"
        " st:<model> or openai:<base url>:<model>"
    )
