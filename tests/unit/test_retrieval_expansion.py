"""Graph walks for retrieval: the adjacency index, ContextOS expansion, BFS/DFS, paths."""

from __future__ import annotations

import itertools
import random
from collections import deque

from processors.indexer import RepoIndex
from query.search.adjacency import Adjacency
from query.search.expansion import Expanded, entity_seeds, expand, seeds_for_names
from query.search.traversal import Visit, bfs, dfs, shortest_path
from stores.edge_table import EdgeTable
from stores.records import EdgeRecord, NodeRecord
from stores.repo_state import RepoState
from tests.factories import Stamp

# Four files: an API calls the service, the service calls the models, a test calls the
# service. `u.save()` resolves by name only (a guess).
FILES = {
    "app/models.py": (
        "class User:\n    def save(self):\n        return 1\n\n"
        "def make_user():\n    return User()\n"
    ),
    "app/service.py": (
        "from app.models import User, make_user\n\ndef register():\n    u = make_user()\n"
        "    u.save()\n    return u\n\ndef helper():\n    return register()\n"
    ),
    "app/api.py": "from app.service import register\n\ndef handle():\n    return register()\n",
    "tests/test_service.py": (
        "from app.service import register\n\ndef test_register():\n    assert register()\n"
    ),
}
REGISTER = "sym:app/service.py:register"


def indexed(files: dict[str, str]) -> RepoState:
    index, stamp = RepoIndex("r"), Stamp(repo="r")
    stamp.claimed(index)
    for path, text in files.items():
        index.handle(stamp.changed(path, text, origin="scan"), 1.0)
    index.handle(stamp.scan_completed("c1"), 2.0)
    return index.state


def graph(*edges: tuple) -> RepoState:
    """A hand-built state: (src, dst[, kind[, weight[, confidence]]]) edges, CALLS of
    weight 1 resolved by import unless said otherwise."""
    state = RepoState("r")
    records = []
    for src, dst, *rest in edges:
        kind, weight, confidence = [*rest, *("CALLS", 1.0, "import")[len(rest) :]][:3]
        for node in (src, dst):
            state.nodes.setdefault(node, NodeRecord(id=node, kind="FUNCTION", name=node))
        records.append(
            EdgeRecord(src=src, dst=dst, kind=kind, weight=weight, confidence=confidence)
        )
    state.edges = EdgeTable.of(records)
    return state


def chain_graph(length: int) -> RepoState:
    return graph(*[(f"n{i:02}", f"n{i + 1:02}") for i in range(length)])


def test_degree_counts_distinct_dependency_neighbours_only() -> None:
    adj = Adjacency.of(indexed(FILES))
    # handle, helper, test_register call it; it calls make_user. Not counted: the guessed
    # call of User.save, the SIBLING helper edge, DEFINED_BY, CONTAINS; TESTS duplicates
    # test_register's CALLS (one neighbour).
    assert adj.degree(REGISTER) == 4
    assert adj.degree("file:app/service.py") == 3
    assert adj.degree("dir:app") == 0
    assert adj.hub_threshold == 50.0
    assert [e.src for e in adj.callers(REGISTER)] == [
        "sym:app/api.py:handle",
        "sym:tests/test_service.py:test_register",
        "sym:app/service.py:helper",
    ]
    assert [(e.dst, e.confidence) for e in adj.callees(REGISTER)] == [
        ("sym:app/models.py:make_user", "import"),
        ("sym:app/models.py:User.save", "name_match"),
    ]
    assert [e.dst for e in adj.imports(REGISTER)] == ["file:app/models.py"]
    assert [e.src for e in adj.imported_by(REGISTER)] == [
        "file:app/api.py",
        "file:tests/test_service.py",
    ]
    assert [e.src for e in adj.tests(REGISTER)] == ["file:tests/test_service.py"]
    assert adj.inbound("app/service.py") == 2
    assert adj.symbols("file:app/models.py") == (
        "sym:app/models.py:User",
        "sym:app/models.py:User.save",
        "sym:app/models.py:make_user",
    )
    assert adj.children("file:app/models.py") == (
        "sym:app/models.py:User",
        "sym:app/models.py:make_user",
    )


def test_linked_files_are_resolved_file_dependencies_either_way() -> None:
    adj = Adjacency.of(indexed(FILES))
    assert adj.linked_files("app/service.py") == [
        "app/api.py",
        "app/models.py",
        "tests/test_service.py",
    ]
    assert adj.linked_files("app/models.py") == ["app/service.py"]
    guessed = Adjacency.of(
        graph(
            ("file:a.py", "file:b.py", "IMPORTS", 1.0, "name_match"),
            ("file:a.py", "file:c.py", "REFERENCES", 2.0, "structural"),
            ("file:a.py", "ext:os", "IMPORTS", 1.0, "structural"),
            ("file:d.py", "file:a.py", "CALLS"),  # not a file-level dependency
        )
    )
    assert guessed.linked_files("a.py") == ["c.py"]
    assert guessed.linked_files("nowhere.py") == []


def test_callers_of_a_file_are_calls_into_its_symbols_from_other_files() -> None:
    adj = Adjacency.of(indexed(FILES))
    assert [e.src for e in adj.callers("file:app/service.py")] == [
        "sym:app/api.py:handle",
        "sym:tests/test_service.py:test_register",
    ]
    assert [e.dst for e in adj.callees("file:app/service.py")] == [
        "sym:app/models.py:make_user",
        "sym:app/models.py:User.save",
    ]


def test_expansion_order_and_scores() -> None:
    adj = Adjacency.of(indexed(FILES))
    assert expand(adj, [REGISTER]) == (
        Expanded(REGISTER, 0, 1.0),
        Expanded("sym:app/api.py:handle", 1, 0.5, REGISTER, "CALLS"),
        Expanded("sym:app/models.py:make_user", 1, 0.5, REGISTER, "CALLS"),
        Expanded("sym:app/service.py:helper", 1, 0.5, REGISTER, "CALLS"),
        Expanded("sym:tests/test_service.py:test_register", 1, 0.5, REGISTER, "CALLS"),
        Expanded("sym:app/models.py:User", 2, 0.25, "sym:app/models.py:make_user", "CALLS"),
    )


def test_expansion_prefers_heavier_edges_and_scores_weight_times_half_per_level() -> None:
    state = graph(("s", "a", "CALLS", 3.0), ("s", "b", "CALLS", 1.0), ("b", "c", "USES", 4.0))
    assert expand(Adjacency.of(state), ["s"]) == (
        Expanded("s", 0, 1.0),
        Expanded("a", 1, 1.5, "s", "CALLS"),
        Expanded("b", 1, 0.5, "s", "CALLS"),
        Expanded("c", 2, 1.0, "b", "USES"),
    )
    # maxNodes cuts a level heaviest first.
    assert [e.node for e in expand(Adjacency.of(state), ["s"], max_nodes=2)] == ["s", "a"]


def test_expansion_traverses_only_weights_of_at_least_0_9_and_no_guesses() -> None:
    state = graph(
        ("s", "pkg1", "IMPORTS", 0.5),  # a package import spread over two files
        ("s", "exact", "IMPORTS", 0.9),
        ("s", "guess", "CALLS", 5.0, "name_match"),
        ("s", "inner", "CONTAINS", 1.0, "structural"),
    )
    assert [e.node for e in expand(Adjacency.of(state), ["s"])] == ["s", "exact"]
    assert [e.node for e in expand(Adjacency.of(state), ["s"], min_weight=0.5)] == [
        "s",
        "exact",
        "pkg1",
    ]


def test_expansion_caps_depth_and_nodes() -> None:
    adj = Adjacency.of(chain_graph(6))
    assert [(e.node, e.depth) for e in expand(adj, ["n00"])] == [
        ("n00", 0),
        ("n01", 1),
        ("n02", 2),
    ]
    star = Adjacency.of(graph(*[("hub", f"leaf{i:02}") for i in range(25)]))
    found = expand(star, ["hub"], hub_degree=100)
    assert len(found) == 20
    assert found[-1] == Expanded("leaf18", 1, 0.5, "hub", "CALLS")


def test_a_hub_is_reached_but_not_passed() -> None:
    files = {f"m{i:02}.py": f"from core import f\ndef g{i:02}():\n    f()\n" for i in range(31)}
    files["core.py"] = "from util import u\ndef f():\n    u()\n    u()\n"
    files["util.py"] = "def u():\n    pass\n"
    adj = Adjacency.of(indexed(files))
    assert adj.degree("sym:core.py:f") == 32
    assert [e.node for e in expand(adj, ["sym:m00.py:g00"])] == [
        "sym:m00.py:g00",
        "sym:core.py:f",
    ]
    # Under a looser hub rule it is passed: util.u first (two calls), then the callers.
    passed = expand(adj, ["sym:m00.py:g00"], hub_degree=40)
    assert passed[:4] == (
        Expanded("sym:m00.py:g00", 0, 1.0),
        Expanded("sym:core.py:f", 1, 0.5, "sym:m00.py:g00", "CALLS"),
        Expanded("sym:util.py:u", 2, 0.5, "sym:core.py:f", "CALLS"),
        Expanded("sym:m01.py:g01", 2, 0.25, "sym:core.py:f", "CALLS"),
    )
    assert len(passed) == 20


def test_seeds_given_as_names_drop_short_numeric_and_stopwords() -> None:
    names = ["db", "42", "the", "User", "User", " register ", "With", "make_user"]
    assert entity_seeds(names) == ("User", "register", "make_user")
    adj = Adjacency.of(indexed(FILES))
    assert seeds_for_names(adj, names) == (
        "sym:app/models.py:User",
        REGISTER,
        "sym:app/models.py:make_user",
    )


def test_unknown_seeds_are_dropped() -> None:
    adj = Adjacency.of(indexed(FILES))
    assert expand(adj, ["sym:nowhere.py:x"]) == ()


def test_shortest_path_found_and_deterministic() -> None:
    adj = Adjacency.of(indexed(FILES))
    assert shortest_path(adj, "sym:app/api.py:handle", "sym:app/models.py:make_user") == (
        "sym:app/api.py:handle",
        REGISTER,
        "sym:app/models.py:make_user",
    )
    diamond = Adjacency.of(graph(("a", "c"), ("a", "b"), ("c", "d"), ("b", "d")))
    assert shortest_path(diamond, "a", "d") == ("a", "b", "d")
    assert shortest_path(diamond, "d", "a") == ("d", "b", "a")
    assert shortest_path(diamond, "a", "a") == ("a",)


def test_shortest_path_gives_up_past_8_hops_and_when_disconnected() -> None:
    adj = Adjacency.of(chain_graph(9))
    assert shortest_path(adj, "n00", "n08") is not None
    assert len(shortest_path(adj, "n00", "n08") or ()) == 9
    assert shortest_path(adj, "n00", "n09") is None
    assert shortest_path(adj, "n00", "n09", max_hops=9) is not None
    apart = Adjacency.of(graph(("a", "b"), ("c", "d")))
    assert shortest_path(apart, "a", "d") is None
    assert shortest_path(apart, "a", "missing") is None


def test_shortest_path_passes_neither_external_modules_nor_guesses() -> None:
    state = graph(
        ("a", "ext:os", "IMPORTS"),
        ("b", "ext:os", "IMPORTS"),
        ("a", "b", "CALLS", 1.0, "name_match"),
    )
    adj = Adjacency.of(state)
    assert shortest_path(adj, "a", "b") is None
    assert shortest_path(adj, "a", "ext:os") == ("a", "ext:os")


def test_shortest_path_lengths_match_a_plain_breadth_first_search() -> None:
    rng = random.Random(7)
    for _ in range(30):
        edges = {(f"v{rng.randrange(40)}", f"v{rng.randrange(40)}") for _ in range(50)}
        state = graph(*[e for e in edges if e[0] != e[1]])
        adj = Adjacency.of(state)
        nodes = sorted(state.nodes)
        for _ in range(10):
            a, b = rng.choice(nodes), rng.choice(nodes)
            path = shortest_path(adj, a, b)
            want = _bfs_length(state, a, b)
            assert (len(path) - 1 if path else None) == (
                want if want is not None and want <= 8 else None
            )
            if path:
                assert all(_linked(state, x, y) for x, y in itertools.pairwise(path))


def _bfs_length(state: RepoState, a: str, b: str) -> int | None:
    seen, queue = {a: 0}, deque([a])
    while queue:
        node = queue.popleft()
        if node == b:
            return seen[node]
        for x, y, _ in state.edges:
            for here, there in ((x, y), (y, x)):
                if here == node and there not in seen:
                    seen[there] = seen[node] + 1
                    queue.append(there)
    return None


def _linked(state: RepoState, x: str, y: str) -> bool:
    return any({x, y} == {s, d} for s, d, _ in state.edges)


def _vortexa_hub_graph() -> Adjacency:
    # h has 60 leaves (degree 61, above max(p99, 50)); start -> x -> h -> beyond.
    edges = [("h", f"leaf{i:02}") for i in range(60)]
    edges += [("start", "x"), ("x", "h"), ("start", "y"), ("y", "z")]
    return Adjacency.of(graph(*edges))


def test_bfs_and_dfs_skip_hubs_above_p99_degree() -> None:
    adj = _vortexa_hub_graph()
    assert adj.is_hub("h") and not adj.is_hub("x")
    assert bfs(adj, "start") == (
        Visit("start", 0),
        Visit("x", 1, "start"),
        Visit("y", 1, "start"),
        Visit("z", 2, "y"),
    )
    assert dfs(adj, "start") == (
        Visit("start", 0),
        Visit("x", 1, "start"),
        Visit("y", 1, "start"),
        Visit("z", 2, "y"),
    )
    # A walk may start at a hub; its neighbours are then visited, bounded.
    assert len(bfs(adj, "h", max_nodes=10)) == 10


def test_dfs_goes_deep_first_and_walks_respect_direction_and_bounds() -> None:
    adj = Adjacency.of(graph(("a", "b"), ("b", "c"), ("a", "d"), ("e", "a")))
    assert [v.node for v in dfs(adj, "a", direction="out")] == ["a", "b", "c", "d"]
    assert [v.node for v in bfs(adj, "a", direction="out")] == ["a", "b", "d", "c"]
    assert [v.node for v in bfs(adj, "a", direction="in")] == ["a", "e"]
    assert [v.node for v in bfs(adj, "a", max_depth=1)] == ["a", "b", "d", "e"]
    assert [v.node for v in dfs(adj, "a", max_nodes=2)] == ["a", "b"]
    assert bfs(adj, "missing") == () and dfs(adj, "missing") == ()
