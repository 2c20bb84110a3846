"""Dense vectors of chunks, per repository, behind one small port.

`VectorStore` is what indexing writes and the query service reads. Adapters:
`InMemoryVectorStore` (the embedded mode: numpy, brute force) and `QdrantVectorStore`
(in `stores.qdrant_vectors`, the distributed mode). One contract test suite runs over
both (tests/contract/test_vector_stores.py).

Contract, for every adapter:
- a point is (point_id, vector, payload); the payload must carry ``path`` (the file
  the chunk belongs to) and must not use the reserved keys; ids are unique per
  repository and an upsert of an existing id replaces the point (idempotent replays);
- vectors are normalized on the way in; scores are cosines, higher first, ties broken
  by point id;
- ``path_prefix`` is a folder scope: ``"src/api"`` matches ``src/api`` itself and
  everything under ``src/api/``, not ``src/api_v2.py``;
- an unknown repository is empty: search returns [], count 0, deletes do nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

Vector = Sequence[float] | NDArray[np.floating[Any]]
RESERVED_PAYLOAD_KEYS = frozenset({"repo", "chunk_id", "path_scopes"})


class VectorPoint(NamedTuple):
    """A chunk's vector; a tuple so that ``(id, vector, payload)`` triples work too."""

    point_id: str
    vector: Vector
    payload: Mapping[str, Any]


class VectorHit(NamedTuple):
    """One point a vector search found: its id, similarity score and payload."""

    point_id: str
    score: float
    payload: dict[str, Any]


class VectorStore(Protocol):
    """Chunk vectors per repository: upsert, drop a file's points, search, count."""

    def upsert(self, repo: str, points: Sequence[tuple[str, Vector, Mapping[str, Any]]]) -> None:
        """Insert or replace points by id."""
        ...

    def delete_by_path(self, repo: str, path: str) -> None:
        """Remove every point of a changed or deleted file."""
        ...

    def search(
        self, repo: str, vector: Vector, limit: int, path_prefix: str | None = None
    ) -> list[VectorHit]:
        """The `limit` nearest points by cosine, best first."""
        ...

    def count(self, repo: str) -> int: ...


def checked_points(
    points: Iterable[tuple[str, Vector, Mapping[str, Any]]],
) -> list[VectorPoint]:
    """Points validated at the edge: a string id, a ``path`` payload, no reserved keys.
    Within one call the last point of an id wins, as it would in sequential upserts."""
    by_id: dict[str, VectorPoint] = {}
    for point_id, vector, payload in points:
        if not isinstance(point_id, str) or not point_id:
            raise ValueError(f"point id must be a non-empty string, got {point_id!r}")
        if not isinstance(payload.get("path"), str):
            raise ValueError(f"point {point_id!r}: payload needs a string 'path'")
        reserved = RESERVED_PAYLOAD_KEYS & payload.keys()
        if reserved:
            raise ValueError(f"point {point_id!r}: reserved payload keys {sorted(reserved)}")
        by_id.pop(point_id, None)
        by_id[point_id] = VectorPoint(point_id, vector, payload)
    return list(by_id.values())


def path_scopes(path: str) -> list[str]:
    """Every folder scope a path falls in, itself included: a/b/c.py -> a, a/b, a/b/c.py."""
    parts = path.strip("/").split("/")
    return ["/".join(parts[: end + 1]) for end in range(len(parts))]


def in_scope(path: str, path_prefix: str) -> bool:
    """Whether ``path`` lies under ``path_prefix`` (the whole repository when empty)."""
    scope = path_prefix.strip("/")
    return not scope or path == scope or path.startswith(scope + "/")


def unit_rows(vectors: Sequence[Vector]) -> NDArray[np.float32]:
    """The vectors as the rows of a float32 matrix, each scaled to unit length."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), np.float32(1e-12))


GROWTH = 1.25
"""A full matrix grows by a quarter: at most a fifth of it unused (doubling left 43% of
sympy's 100 MB matrix empty: 65,536 rows for 37,475 chunks), at a copy per growth
(amortized O(1) per row all the same)."""
FIRST_ROWS = 1024


class _RepoVectors:
    """One repository's rows: a growable float32 matrix, row <-> id maps, paths."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.matrix = np.zeros((FIRST_ROWS, dim), dtype=np.float32)
        self.ids: list[str] = []
        self.payloads: list[dict[str, Any]] = []
        self.rows: dict[str, int] = {}
        self.by_path: dict[str, set[str]] = {}

    def put(self, point_id: str, vector: NDArray[np.float32], payload: dict[str, Any]) -> None:
        row = self.rows.get(point_id)
        if row is None:
            row = len(self.ids)
            if row == len(self.matrix):
                grown = np.zeros((int(len(self.matrix) * GROWTH) + 1, self.dim), np.float32)
                grown[:row] = self.matrix
                self.matrix = grown
            self.ids.append(point_id)
            self.payloads.append(payload)
            self.rows[point_id] = row
        else:
            self._unindex(point_id, self.payloads[row]["path"])
            self.payloads[row] = payload
        self.matrix[row] = vector
        self.by_path.setdefault(payload["path"], set()).add(point_id)

    def remove(self, point_id: str) -> None:
        """Swap the last row into the removed one: O(dim), no matrix rebuild."""
        row = self.rows.pop(point_id)
        self._unindex(point_id, self.payloads[row]["path"])
        last = len(self.ids) - 1
        if row != last:
            moved = self.ids[last]
            self.matrix[row] = self.matrix[last]
            self.ids[row] = moved
            self.payloads[row] = self.payloads[last]
            self.rows[moved] = row
        self.ids.pop()
        self.payloads.pop()

    def _unindex(self, point_id: str, path: str) -> None:
        ids = self.by_path[path]
        ids.discard(point_id)
        if not ids:
            del self.by_path[path]


class InMemoryVectorStore:
    """Brute-force cosine over a numpy matrix per repository: exact, and fast enough for
    the embedded mode. At 50k x 384 a top-10 query took p50 1.8 ms / p95 2.0 ms on an
    idle machine (8 / 12 ms with the other core busy), a file's re-index 0.05 ms
    (tests/bench/vectors.py); qdrant-client's local mode took 0.15-3 s (DESIGN.md §5).
    Not thread-safe: one writer, readers on the same thread or behind a lock."""

    def __init__(self) -> None:
        self._repos: dict[str, _RepoVectors] = {}

    def upsert(self, repo: str, points: Sequence[tuple[str, Vector, Mapping[str, Any]]]) -> None:
        checked = checked_points(points)
        if not checked:
            return
        vectors = unit_rows([point.vector for point in checked])
        state = self._repos.get(repo) or _RepoVectors(vectors.shape[1])
        if vectors.shape[1] != state.dim:
            raise ValueError(f"repo {repo!r} holds {state.dim}-d vectors, got {vectors.shape[1]}")
        self._repos[repo] = state
        for point, vector in zip(checked, vectors, strict=True):
            state.put(point.point_id, vector, dict(point.payload))

    def delete_by_path(self, repo: str, path: str) -> None:
        state = self._repos.get(repo)
        if state is None:
            return
        for point_id in sorted(state.by_path.get(path, ())):
            state.remove(point_id)

    def search(
        self, repo: str, vector: Vector, limit: int, path_prefix: str | None = None
    ) -> list[VectorHit]:
        state = self._repos.get(repo)
        if state is None or not state.ids or limit <= 0:
            return []
        query = unit_rows([vector])[0]
        if query.shape[0] != state.dim:
            raise ValueError(f"repo {repo!r} holds {state.dim}-d vectors, got {query.shape[0]}")
        if path_prefix and path_prefix.strip("/"):
            rows = np.fromiter(
                (
                    state.rows[point_id]
                    for path, ids in state.by_path.items()
                    if in_scope(path, path_prefix)
                    for point_id in ids
                ),
                dtype=np.int64,
            )
            scores = state.matrix[rows] @ query
        else:
            rows = np.arange(len(state.ids))
            scores = state.matrix[: len(state.ids)] @ query
        if len(rows) > limit:
            # Everything scoring at least the limit-th best, so ties at the cut are kept
            # and broken by id below rather than by argpartition's arbitrary order.
            kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
            keep = np.flatnonzero(scores >= kth)
            rows, scores = rows[keep], scores[keep]
        ranked = sorted(
            zip(scores.tolist(), rows.tolist(), strict=True),
            key=lambda item: (-item[0], state.ids[item[1]]),
        )[:limit]
        return [
            VectorHit(state.ids[row], score, dict(state.payloads[row])) for score, row in ranked
        ]

    def count(self, repo: str) -> int:
        state = self._repos.get(repo)
        return 0 if state is None else len(state.ids)
