"""The distributed mode's vector store: one Qdrant collection for all repositories.

One collection with a ``repo`` tenant field, not one collection per repository: an
organization has hundreds to thousands of repositories, and Qdrant advises against
that many collections (each has its own segments, WAL and HNSW graph, and a fixed
memory overhead) and recommends payload-based multitenancy instead, with a
``keyword`` index marked ``is_tenant`` so storage is grouped by repository. One
collection also keeps cross-repository search open, and a repository's points are
removable by a filter just as well. The collection is per embedder (vector space).

Qdrant ids must be UUIDs or integers: a point's id is uuid5 of (repo, chunk id), and
the chunk id travels in the payload. Folder scopes (``path_prefix``) are matched on a
keyword array of the path's scopes (`path_scopes`), since Qdrant has no prefix match.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from stores.vectors import (
    RESERVED_PAYLOAD_KEYS,
    Vector,
    VectorHit,
    checked_points,
    path_scopes,
    unit_rows,
)

CHUNK_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://gazetteer.dev/chunk")
UPSERT_BATCH = 256


def qdrant_point_id(repo: str, point_id: str) -> str:
    """Deterministic (uuid5) so a replayed upsert replaces the same point."""
    return str(uuid.uuid5(CHUNK_NAMESPACE, f"{repo}\n{point_id}"))


def _match(key: str, value: str) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


class QdrantVectorStore:
    """`VectorStore` over a qdrant-client `QdrantClient` (a server by URL; tests inject
    the client's ``:memory:`` local mode). The collection is created on first upsert
    with the dimension of its vectors, cosine distance and payload indexes on repo
    (tenant), path and path_scopes."""

    def __init__(self, client: QdrantClient, collection: str = "gazetteer_chunks") -> None:
        self._client = client
        self._collection = collection
        self._ready = False
        self._dim: int | None = None

    @classmethod
    def from_url(
        cls, url: str, *, api_key: str | None = None, collection: str = "gazetteer_chunks"
    ) -> QdrantVectorStore:
        return cls(QdrantClient(url=url, api_key=api_key), collection)

    def upsert(self, repo: str, points: Sequence[tuple[str, Vector, Mapping[str, Any]]]) -> None:
        checked = checked_points(points)
        if not checked:
            return
        vectors = unit_rows([point.vector for point in checked])
        self._ensure_collection(vectors.shape[1])
        structs = [
            models.PointStruct(
                id=qdrant_point_id(repo, point.point_id),
                vector=vector.tolist(),
                payload={
                    **point.payload,
                    "repo": repo,
                    "chunk_id": point.point_id,
                    "path_scopes": path_scopes(point.payload["path"]),
                },
            )
            for point, vector in zip(checked, vectors, strict=True)
        ]
        for start in range(0, len(structs), UPSERT_BATCH):
            self._client.upsert(
                self._collection, points=structs[start : start + UPSERT_BATCH], wait=True
            )

    def delete_by_path(self, repo: str, path: str) -> None:
        if not self._exists():
            return
        selector = models.FilterSelector(
            filter=models.Filter(must=[_match("repo", repo), _match("path", path)])
        )
        self._client.delete(self._collection, points_selector=selector, wait=True)

    def search(
        self, repo: str, vector: Vector, limit: int, path_prefix: str | None = None
    ) -> list[VectorHit]:
        if limit <= 0 or not self._exists():
            return []
        must: list[models.Condition] = [_match("repo", repo)]
        scope = (path_prefix or "").strip("/")
        if scope:
            must.append(_match("path_scopes", scope))
        response = self._client.query_points(
            self._collection,
            query=unit_rows([vector])[0].tolist(),
            query_filter=models.Filter(must=must),
            limit=limit,
            with_payload=True,
        )
        hits = []
        for point in response.points:
            payload = dict(point.payload or {})
            chunk_id = str(payload["chunk_id"])
            for key in RESERVED_PAYLOAD_KEYS:
                payload.pop(key, None)
            hits.append(VectorHit(chunk_id, float(point.score), payload))
        hits.sort(key=lambda hit: (-hit.score, hit.point_id))
        return hits

    def count(self, repo: str) -> int:
        if not self._exists():
            return 0
        result = self._client.count(
            self._collection, count_filter=models.Filter(must=[_match("repo", repo)]), exact=True
        )
        return result.count

    def _exists(self) -> bool:
        if not self._ready:
            self._ready = self._client.collection_exists(self._collection)
        return self._ready

    def _ensure_collection(self, dim: int) -> None:
        if self._dim is None:
            if not self._exists():
                self._create(dim)
            params = self._client.get_collection(self._collection).config.params.vectors
            self._dim = params.size if isinstance(params, models.VectorParams) else None
        if self._dim != dim:
            raise ValueError(
                f"collection {self._collection!r} holds {self._dim}-d vectors, got {dim}"
            )

    def _create(self, dim: int) -> None:
        try:
            self._client.create_collection(
                self._collection,
                vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
            )
        except (UnexpectedResponse, ValueError):
            # Another worker created it first (409 from a server, ValueError locally).
            if not self._client.collection_exists(self._collection):
                raise
            self._ready = True
            return
        tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
        self._client.create_payload_index(self._collection, "repo", field_schema=tenant)
        for field in ("path", "path_scopes"):
            self._client.create_payload_index(
                self._collection, field, field_schema=models.PayloadSchemaType.KEYWORD
            )
        self._ready = True
