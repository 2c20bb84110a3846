"""One contract for every VectorStore: the embedded mode's numpy store and the Qdrant
adapter over the real qdrant-client (its ``:memory:`` local mode, no server needed)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from qdrant_client import QdrantClient

from stores.qdrant_vectors import QdrantVectorStore, qdrant_point_id
from stores.vectors import InMemoryVectorStore, VectorStore

# Local mode warns that payload indexes only matter on a server; the adapter still
# creates them for the server it is meant for.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


@pytest.fixture(params=["in_memory", "qdrant"])
def store(request: pytest.FixtureRequest) -> Iterator[VectorStore]:
    if request.param == "in_memory":
        yield InMemoryVectorStore()
        return
    client = QdrantClient(":memory:")
    yield QdrantVectorStore(client, collection="chunks_test")
    client.close()


def unit(*values: float) -> list[float]:
    vector = np.array(values, dtype=np.float64)
    return (vector / np.linalg.norm(vector)).tolist()


def point(point_id: str, path: str, *values: float, **extra: object):
    return (point_id, unit(*values), {"path": path, "kind": "FUNCTION", **extra})


def ids(hits) -> list[str]:
    return [hit.point_id for hit in hits]


def test_an_unknown_repository_is_empty(store: VectorStore) -> None:
    store.delete_by_path("nowhere", "a.py")

    assert store.search("nowhere", unit(1, 0, 0, 0), limit=5) == []
    assert store.count("nowhere") == 0


def test_search_ranks_by_cosine_and_returns_payloads(store: VectorStore) -> None:
    store.upsert(
        "app",
        [
            point("a.py#f", "a.py", 1, 0, 0, 0, line_start=3),
            point("a.py#g", "a.py", 1, 1, 0, 0),
            point("b.py#h", "b.py", 0, 1, 0, 0),
            point("c.py#k", "c.py", 0, 0, 0, 1),
        ],
    )

    hits = store.search("app", [2.0, 0.2, 0.0, 0.0], limit=3)  # not normalized on purpose

    assert ids(hits) == ["a.py#f", "a.py#g", "b.py#h"]
    query = unit(2.0, 0.2, 0.0, 0.0)
    assert hits[0].score == pytest.approx(query[0], abs=1e-5)
    assert hits[1].score == pytest.approx(np.dot(query, unit(1, 1, 0, 0)), abs=1e-5)
    assert hits[0].payload == {"path": "a.py", "kind": "FUNCTION", "line_start": 3}
    assert store.count("app") == 4
    assert len(store.search("app", query, limit=10)) == 4
    assert store.search("app", query, limit=0) == []


def test_equal_scores_are_ordered_by_id(store: VectorStore) -> None:
    store.upsert("app", [point(name, "x.py", 0, 1, 0) for name in ("x#c", "x#a", "x#b")])

    assert ids(store.search("app", unit(0, 1, 0), limit=3)) == ["x#a", "x#b", "x#c"]


def test_upsert_of_an_existing_id_replaces_the_point(store: VectorStore) -> None:
    store.upsert("app", [point("a.py#f", "a.py", 1, 0, 0), point("a.py#g", "a.py", 0, 1, 0)])

    store.upsert("app", [point("a.py#f", "moved.py", 0, 0, 1, version=2)])
    store.upsert("app", [point("a.py#f", "moved.py", 0, 0, 1, version=2)])  # a replay

    assert store.count("app") == 2
    (hit,) = store.search("app", unit(0, 0, 1), limit=1)
    assert (hit.point_id, hit.payload["path"], hit.payload["version"]) == (
        "a.py#f",
        "moved.py",
        2,
    )
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    store.delete_by_path("app", "a.py")  # its old path no longer owns it
    assert ids(store.search("app", unit(1, 1, 1), limit=5)) == ["a.py#f"]


def test_within_one_upsert_the_last_point_of_an_id_wins(store: VectorStore) -> None:
    store.upsert("app", [point("a#f", "a.py", 1, 0), point("a#f", "b.py", 0, 1)])

    assert store.count("app") == 1
    assert store.search("app", unit(0, 1), limit=1)[0].payload["path"] == "b.py"


def test_delete_by_path_removes_only_that_files_points(store: VectorStore) -> None:
    store.upsert(
        "app",
        [
            point("a.py#f", "a.py", 1, 0, 0),
            point("a.py#g", "a.py", 1, 1, 0),
            point("a.py.bak#f", "a.py.bak", 1, 0, 0),
            point("b.py#h", "b.py", 0, 1, 0),
        ],
    )

    store.delete_by_path("app", "a.py")
    store.delete_by_path("app", "never.py")

    assert store.count("app") == 2
    assert ids(store.search("app", unit(1, 0, 0), limit=5)) == ["a.py.bak#f", "b.py#h"]


def test_path_prefix_is_a_folder_scope(store: VectorStore) -> None:
    store.upsert(
        "app",
        [
            point("api/routes.py#get", "src/api/routes.py", 1, 0),
            point("api/deep#f", "src/api/v1/deep.py", 1, 0.2),
            point("api_v2#f", "src/api_v2.py", 1, 0.1),
            point("top#f", "setup.py", 1, 0.3),
        ],
    )
    query = unit(1, 0)

    assert ids(store.search("app", query, 5, path_prefix="src/api")) == [
        "api/routes.py#get",
        "api/deep#f",
    ]
    assert ids(store.search("app", query, 5, path_prefix="src/api/")) == ids(
        store.search("app", query, 5, path_prefix="src/api")
    )
    assert ids(store.search("app", query, 5, path_prefix="src/api/v1/deep.py")) == ["api/deep#f"]
    assert ids(store.search("app", query, 1, path_prefix="src")) == ["api/routes.py#get"]
    assert store.search("app", query, 5, path_prefix="lib") == []
    assert len(store.search("app", query, 5, path_prefix="")) == 4


def test_repositories_are_isolated(store: VectorStore) -> None:
    store.upsert("app", [point("a.py#f", "a.py", 1, 0)])
    store.upsert("lib", [point("a.py#f", "a.py", 0, 1), point("b.py#g", "b.py", 1, 1)])

    store.delete_by_path("lib", "a.py")

    assert (store.count("app"), store.count("lib")) == (1, 1)
    assert store.search("app", unit(0, 1), limit=5)[0].payload == {
        "path": "a.py",
        "kind": "FUNCTION",
    }
    assert ids(store.search("lib", unit(1, 0), limit=5)) == ["b.py#g"]


def test_points_are_validated_at_the_edge(store: VectorStore) -> None:
    store.upsert("app", [])
    with pytest.raises(ValueError, match="'path'"):
        store.upsert("app", [("a#f", unit(1, 0), {"kind": "FUNCTION"})])
    with pytest.raises(ValueError, match="reserved"):
        store.upsert("app", [("a#f", unit(1, 0), {"path": "a.py", "repo": "other"})])
    store.upsert("app", [point("a#f", "a.py", 1, 0)])
    with pytest.raises(ValueError, match="2-d vectors"):
        store.upsert("app", [point("b#f", "b.py", 1, 0, 0)])
    assert store.count("app") == 1


def test_matches_exact_search_after_many_upserts_and_deletes(store: VectorStore) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(600, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    paths = [f"pkg/m{row % 60}.py" for row in range(600)]
    store.upsert("app", [(f"c{row}", vectors[row], {"path": paths[row]}) for row in range(600)])
    for gone in range(0, 60, 3):
        store.delete_by_path("app", f"pkg/m{gone}.py")
    alive = [row for row in range(600) if int(paths[row][5:-3]) % 3 != 0]
    query = rng.normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)

    hits = store.search("app", query, limit=10)

    expected = sorted(alive, key=lambda row: -float(vectors[row] @ query))[:10]
    assert store.count("app") == len(alive) == 400
    assert ids(hits) == [f"c{row}" for row in expected]
    np.testing.assert_allclose(
        [hit.score for hit in hits], [vectors[row] @ query for row in expected], atol=1e-5
    )


def test_qdrant_point_ids_are_uuid5_of_repo_and_chunk() -> None:
    first = qdrant_point_id("app", "a.py#f")

    assert first == qdrant_point_id("app", "a.py#f")
    assert first != qdrant_point_id("lib", "a.py#f")
    assert first[14] == "5"  # the UUID version digit


def test_the_in_memory_matrix_grows_by_a_quarter_and_keeps_every_row() -> None:
    from stores.vectors import FIRST_ROWS, GROWTH, InMemoryVectorStore

    rng = np.random.default_rng(11)
    vectors = rng.normal(size=(3_000, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = InMemoryVectorStore()
    for start in range(0, 3_000, 250):  # batches, as the fill stores them
        batch = range(start, start + 250)
        store.upsert("app", [(f"c{r:04d}", vectors[r], {"path": f"m{r % 97}.py"}) for r in batch])
    capacity = len(store._repos["app"].matrix)
    grown = FIRST_ROWS
    while grown < 3_000:
        grown = int(grown * GROWTH) + 1
    assert capacity == grown == 3_131  # 1024, 1281, 1602, 2003, 2504, 3131: within 1.25x
    query = vectors[1234]
    hits = store.search("app", query, limit=5)
    expected = sorted(range(3_000), key=lambda r: (-float(vectors[r] @ query), r))[:5]
    assert [h.point_id for h in hits] == [f"c{r:04d}" for r in expected]
    assert hits[0].point_id == "c1234"
