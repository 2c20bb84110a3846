"""Dense retrieval's parts, from the settings: who embeds (GAZETTEER_EMBED_IN), where
the vectors live, which model.

``query`` (the default): each query service fills its own `DenseIndex`. ``worker``: each
indexing worker fills the shared Qdrant collection with the chunks of the repositories
it owns (`worker_fill`), and query services only read it (`DenseReader`); vectors in a
process's own memory would then help nobody, so both refuse to start without
``GAZETTEER_QDRANT_URL`` (a test may hand both sides one store object instead).
"""

from __future__ import annotations

import re

from deploy.dense_check import check_dense_settings
from deploy.settings import Settings
from query.dense import DenseIndex, DenseReader
from stores.text.dense_fill import DenseFill
from stores.text.embedders import Embedder, embedder_from_spec
from stores.text.embedding_cache import SqliteEmbeddingCache
from stores.vectors import InMemoryVectorStore, VectorStore


def dense_index(settings: Settings, store: VectorStore | None = None) -> DenseIndex | None:
    """A query service's dense index; None when dense retrieval is off
    (``GAZETTEER_EMBEDDER=none``). Vectors live in ``store`` if given, else in Qdrant
    when ``GAZETTEER_QDRANT_URL`` is set, else in memory; the embedding cache is on disk
    under the data directory, so a restarted service re-embeds nothing."""
    if settings.embedder == "none":
        return None
    if store is None:
        check_dense_settings(settings)
    embedder = _embedder(settings)
    store = store or _store(settings, embedder)
    if settings.embed_in == "worker":
        return DenseReader(embedder, store)
    return DenseIndex(embedder, store, SqliteEmbeddingCache(settings.data_dir / "embeddings"))


def worker_fill(settings: Settings, store: VectorStore | None = None) -> DenseFill | None:
    """What a worker embeds into with ``GAZETTEER_EMBED_IN=worker``; None otherwise.
    Deletes wait in the filling loop, retried while the store is away."""
    if settings.embed_in != "worker" or settings.embedder == "none":
        return None
    if store is None:
        check_dense_settings(settings)
    embedder = _embedder(settings)
    return DenseFill(
        embedder,
        store or _store(settings, embedder),
        SqliteEmbeddingCache(settings.data_dir / "embeddings"),
        deferred_deletes=True,
    )


def _embedder(settings: Settings) -> Embedder:
    key = settings.embedder_api_key.get_secret_value() if settings.embedder_api_key else None
    return embedder_from_spec(settings.embedder, api_key=key)


def _store(settings: Settings, embedder: Embedder) -> VectorStore:
    # One Qdrant collection per embedder: vectors of two models never mix.
    collection = "gazetteer_" + re.sub(r"[^A-Za-z0-9_]", "_", embedder.name)
    if settings.qdrant_url:
        # Imported here: qdrant-client takes 0.8 s to import, and only a deployment with a
        # Qdrant server needs it (issue 20: the worker and `serve` start without it).
        from stores.qdrant_vectors import QdrantVectorStore

        return QdrantVectorStore.from_url(settings.qdrant_url, collection=collection)
    return InMemoryVectorStore()
