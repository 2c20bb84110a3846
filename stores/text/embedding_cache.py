"""Vectors cached by content hash, so an unchanged chunk is never embedded twice.

Embedding is the slow step of indexing (16-28 chunks/s for the default model on 2
cores, DESIGN.md §5), and most events re-send files whose chunks did not change. The
cache key is the embedder's name plus the chunk's content hash (`ChunkRecord.
content_hash`, or sha256 of the text), so two models never share vectors.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from stores.text.embedders import Embedder, Matrix


class EmbeddingCache(Protocol):
    """Vectors by opaque key; a miss is simply absent from the answer."""

    def get_many(self, keys: Sequence[str]) -> dict[str, Matrix]: ...

    def put_many(self, vectors: Mapping[str, Matrix]) -> None: ...


class InMemoryEmbeddingCache:
    """A bounded dict, oldest entries evicted first (the embedded mode and tests)."""

    def __init__(self, max_entries: int = 200_000) -> None:
        self._max_entries = max_entries
        self._vectors: OrderedDict[str, Matrix] = OrderedDict()

    def __len__(self) -> int:
        return len(self._vectors)

    def get_many(self, keys: Sequence[str]) -> dict[str, Matrix]:
        return {key: self._vectors[key] for key in keys if key in self._vectors}

    def put_many(self, vectors: Mapping[str, Matrix]) -> None:
        self._vectors.update(vectors)
        while len(self._vectors) > self._max_entries:
            self._vectors.popitem(last=False)


class SqliteEmbeddingCache:
    """Vectors as float32 blobs in ``<directory>/embeddings.sqlite``: survives restarts,
    so a re-scan after a restart embeds only what changed. Thread-safe; WAL lets
    several processes share the file."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "embeddings.sqlite"
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)"
        )

    def get_many(self, keys: Sequence[str]) -> dict[str, Matrix]:
        found: dict[str, Matrix] = {}
        unique = list(dict.fromkeys(keys))
        with self._lock:
            # 500 per query: under SQLite's default limit of bound variables.
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({marks})", part
                ).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, vectors: Mapping[str, Matrix]) -> None:
        rows = [(key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in vectors.items()]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)", rows)
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


def text_hash(text: str) -> str:
    """The content key of a text that carries no hash of its own."""
    return hashlib.sha256(text.encode()).hexdigest()


class CachedEmbedder:
    """An `Embedder` that asks its cache first and embeds only the misses, each
    distinct text once; it keeps the inner embedder's name and dim."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        self.dim = inner.dim

    def embed(self, texts: Sequence[str]) -> Matrix:
        return self.embed_keyed([text_hash(text) for text in texts], texts)

    def embed_keyed(self, content_hashes: Sequence[str], texts: Sequence[str]) -> Matrix:
        """Embed `texts` whose content hashes the caller already has (ChunkRecord)."""
        if len(content_hashes) != len(texts):
            raise ValueError("one content hash per text")
        keys = [f"{self.name}\0{content_hash}" for content_hash in content_hashes]
        found = self.cache.get_many(keys)
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in found}
        if missing:
            fresh = self.inner.embed(list(missing.values()))
            computed = dict(zip(missing, fresh, strict=True))
            self.cache.put_many(computed)
            found.update(computed)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out
