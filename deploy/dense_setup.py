"""The dense index of a query service, from its settings."""

from __future__ import annotations

import re

from deploy.settings import Settings
from processors.retrieval.embedders import embedder_from_spec
from processors.retrieval.embedding_cache import SqliteEmbeddingCache
from query.dense import DenseIndex
from stores.qdrant_vectors import QdrantVectorStore
from stores.vectors import InMemoryVectorStore, VectorStore


def dense_index(settings: Settings) -> DenseIndex | None:
    """None when dense retrieval is off (``GAZETTEER_EMBEDDER=none``). Vectors live in
    Qdrant when ``GAZETTEER_QDRANT_URL`` is set, else in memory; the embedding cache is
    on disk under the data directory, so a restarted service re-embeds nothing."""
    if settings.embedder == "none":
        return None
    key = settings.embedder_api_key.get_secret_value() if settings.embedder_api_key else None
    embedder = embedder_from_spec(settings.embedder, api_key=key)
    # One Qdrant collection per embedder: vectors of two models never mix.
    collection = "gazetteer_" + re.sub(r"[^A-Za-z0-9_]", "_", embedder.name)
    store: VectorStore = (
        QdrantVectorStore.from_url(settings.qdrant_url, collection=collection)
        if settings.qdrant_url
        else InMemoryVectorStore()
    )
    cache = SqliteEmbeddingCache(settings.data_dir / "embeddings")
    return DenseIndex(embedder, store, cache)
