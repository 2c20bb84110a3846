"""Navigation as plain `QueryService` methods (issue 20): definition, references,
callers, callees, the shortest path and neighbors, on small repositories fed real
deltas (RepoIndex), paged and fresh-stamped; no web framework in between."""

from __future__ import annotations

import pytest

from query.navigation_schemas import EdgePage
from query.read_model import ReadModel
from query.service import NotFound, QueryService
from tests.unit.test_query_service import indexed

MAIL = {
    "mail/parser.py": (
        "from mail.headers import AddressHeader\n\n"
        "class BytesParser:\n"
        "    def parse(self, data):\n"
        "        return AddressHeader.parse(data)\n"
    ),
    "mail/headers.py": (
        "class AddressHeader:\n"
        "    @classmethod\n"
        "    def parse(cls, value):\n"
        "        return value.strip()\n\n\n"
        "class ContentTransferEncodingHeader:\n"
        "    def parse(self, value):\n"
        "        return value\n"
    ),
    "mail/feed.py": (
        "from mail.parser import BytesParser\n\n\n"
        "def feed(data):\n"
        "    return BytesParser().parse(data)\n"
    ),
    "tests/test_parser.py": (
        "from mail.feed import feed\n\n\ndef test_feed():\n    assert feed(b'x')\n"
    ),
}
SITES = {
    "lib/util.py": "def helper():\n    return 1\n",
    "app/main.py": (
        "from lib.util import helper\n\n\n"
        "def run(x):\n"
        "    y = helper()\n"  # line 5: the first call
        "    return helper() + y\n"
    ),
}
"""helper called twice by run, from another file: one edge, its call site line 5."""
SPOKES = 51
"""Files importing one core: its file node has 51 connections, above the hub floor (50)."""
HUB = {
    "h/core.py": "def helper():\n    return 1\n",
    **{
        f"h/m{i:02}.py": f"from h.core import helper\n\n\ndef f{i}():\n    return helper()\n"
        for i in range(SPOKES)
    },
}


@pytest.fixture(scope="module")
def model() -> ReadModel:
    model = ReadModel(clock=lambda: 1002.0)
    indexed("mail", MAIL, model, clustered=False)
    indexed("hub", HUB, model, clustered=False)
    indexed("sites", SITES, model, clustered=False)
    return model


@pytest.fixture
def service(model: ReadModel) -> QueryService:
    return QueryService(model)


def test_definition_ranks_the_exact_qualified_name_first(service: QueryService) -> None:
    page = service.definition("mail", "BytesParser.parse")
    assert [(d.id, d.kind, d.path, d.line_start, d.line_end, d.match) for d in page.items] == [
        ("sym:mail/parser.py:BytesParser.parse", "METHOD", "mail/parser.py", 4, 5, "exact"),
        ("sym:mail/headers.py:AddressHeader.parse", "METHOD", "mail/headers.py", 2, 4, "name"),
        (
            "sym:mail/headers.py:ContentTransferEncodingHeader.parse",
            "METHOD",
            "mail/headers.py",
            8,
            9,
            "name",
        ),
    ]
    assert (page.total, page.offset, page.limit, page.next_offset) == (3, 0, 20, None)
    assert page.freshness == service.model.freshness("mail")
    assert page.freshness.indexed_commit == "c1"


def test_definition_narrowed_by_path_and_paged(service: QueryService) -> None:
    first = service.definition("mail", "parse", path="/mail/headers.py", limit=1)
    assert [(d.qualname, d.match) for d in first.items] == [("AddressHeader.parse", "suffix")]
    assert (first.path, first.total, first.next_offset) == ("mail/headers.py", 2, 1)
    second = service.definition("mail", "parse", path="mail/headers.py", offset=1, limit=1)
    assert [d.qualname for d in second.items] == ["ContentTransferEncodingHeader.parse"]
    assert second.next_offset is None


def test_callers_and_callees_with_each_edges_confidence(service: QueryService) -> None:
    callers = service.callers("mail", "BytesParser.parse")
    assert callers.node.id == "sym:mail/parser.py:BytesParser.parse" and callers.matches == 3
    assert [
        (e.other.id, e.other.path, e.kind, e.confidence, e.weight, e.line_start, e.line_end)
        for e in callers.items
    ] == [("sym:mail/feed.py:feed", "mail/feed.py", "CALLS", "name_match", 1.0, 4, 5)]
    callees = service.callees("mail", "BytesParser.parse")
    assert [(e.other.id, e.kind, e.confidence, e.line_start) for e in callees.items] == [
        ("sym:mail/headers.py:AddressHeader.parse", "CALLS", "import", 4)
    ]
    of_feed = service.callees("mail", "feed", limit=2)
    assert [(e.other.id, e.confidence) for e in of_feed.items] == [
        ("sym:mail/parser.py:BytesParser", "import"),
        ("sym:mail/headers.py:AddressHeader.parse", "name_match"),
    ]
    assert (of_feed.total, of_feed.next_offset) == (4, 2)


def test_an_edge_gives_its_first_call_site_and_the_enclosing_symbols_lines(
    service: QueryService,
) -> None:
    """Callers, callees and references answer where the call is written (app/main.py
    line 5, the first of run's two calls) beside the enclosing symbol's lines (run's)."""

    def seen(page: EdgePage) -> list[tuple[object, ...]]:
        return [
            (e.other.id, e.kind, e.weight, e.site_path, e.site_line, e.line_start, e.line_end)
            for e in page.items
        ]

    run = ("sym:app/main.py:run", "CALLS", 2.0, "app/main.py", 5, 4, 6)
    assert seen(service.callers("sites", "helper")) == [run]
    assert seen(service.references("sites", "helper")) == [run]
    assert seen(service.callees("sites", "run")) == [
        ("sym:lib/util.py:helper", "CALLS", 2.0, "app/main.py", 5, 4, 6)
    ]
    imports = service.references("sites", "lib/util.py")
    assert [(e.other.id, e.kind, e.site_line) for e in imports.items] == [
        ("file:app/main.py", "IMPORTS", None)  # no reference makes it: no call site
    ]


def test_references_are_every_edge_in_but_structure(service: QueryService) -> None:
    page = service.references("mail", "feed", path="mail/feed.py")
    assert [(e.other.id, e.kind, e.confidence) for e in page.items] == [
        ("sym:tests/test_parser.py:test_feed", "CALLS", "import"),
        ("sym:tests/test_parser.py:test_feed", "TESTS", "import"),
    ]
    of_file = service.references("mail", "mail/feed.py")
    assert of_file.node.id == "file:mail/feed.py"
    assert [(e.other.id, e.kind, e.confidence, e.weight) for e in of_file.items] == [
        ("file:tests/test_parser.py", "TESTS", "structural", 2.0),
        ("file:tests/test_parser.py", "IMPORTS", "import", 1.0),
    ]


def test_the_shortest_path_between_files_and_between_symbols(service: QueryService) -> None:
    files = service.shortest_path("mail", "tests/test_parser.py", "mail/headers.py")
    assert files.found and [n.id for n in files.nodes] == [
        "file:tests/test_parser.py",
        "file:mail/feed.py",
        "file:mail/parser.py",
        "file:mail/headers.py",
    ]
    assert [(h.kind, h.confidence, h.weight, h.forward) for h in files.hops] == [
        ("TESTS", "structural", 2.0, True),
        ("IMPORTS", "import", 1.0, True),
        ("IMPORTS", "import", 1.0, True),
    ]
    backwards = service.shortest_path("mail", "BytesParser", "test_feed")
    assert [(h.src, h.dst, h.kind, h.forward) for h in backwards.hops] == [
        ("sym:mail/parser.py:BytesParser", "sym:mail/feed.py:feed", "CALLS", False),
        ("sym:mail/feed.py:feed", "sym:tests/test_parser.py:test_feed", "CALLS", False),
    ]
    # A method is reached from its class by CONTAINS, which no walk follows.
    apart = service.shortest_path("mail", "test_feed", "AddressHeader.parse")
    assert (apart.found, apart.nodes, apart.hops) == (False, [], [])
    short = service.shortest_path("mail", "tests/test_parser.py", "mail/headers.py", max_hops=2)
    assert not short.found


def test_neighbors_skip_hubs_unless_asked_not_to(service: QueryService) -> None:
    skipped = service.neighbors("hub", "h/m00.py")
    assert [(n.id, n.depth, n.via) for n in skipped.items] == [("file:h/m00.py", 0, None)]
    assert (skipped.total, skipped.capped, skipped.next_offset) == (1, False, None)
    walked = service.neighbors("hub", "h/m00.py", skip_hubs=False, limit=3)
    assert [(n.id, n.depth, n.edge_kind, n.confidence, n.hub) for n in walked.items] == [
        ("file:h/m00.py", 0, None, None, False),
        ("file:h/core.py", 1, "IMPORTS", "import", True),
        ("file:h/m01.py", 2, "IMPORTS", "import", False),
    ]
    assert (walked.total, walked.next_offset) == (SPOKES + 1, 3)
    capped = service.neighbors("hub", "h/core.py", max_nodes=10, offset=8, limit=5)
    assert [n.id for n in capped.items] == ["file:h/m07.py", "file:h/m08.py"]
    assert (capped.total, capped.capped, capped.next_offset) == (10, True, None)


def test_neighbors_depth_first_and_by_direction(service: QueryService) -> None:
    out = service.neighbors("mail", "tests/test_parser.py", order="dfs", direction="out", depth=3)
    assert [(n.id, n.depth, n.via) for n in out.items] == [
        ("file:tests/test_parser.py", 0, None),
        ("file:mail/feed.py", 1, "file:tests/test_parser.py"),
        ("file:mail/parser.py", 2, "file:mail/feed.py"),
        ("file:mail/headers.py", 3, "file:mail/parser.py"),
    ]
    into = service.neighbors("mail", "mail/parser.py", direction="in")
    assert [n.id for n in into.items] == [
        "file:mail/parser.py",
        "file:mail/feed.py",
        "file:tests/test_parser.py",
    ]


def test_unknown_repositories_and_symbols_are_refused_alike(service: QueryService) -> None:
    with pytest.raises(NotFound, match=r"unknown repository 'nope'; see /repositories"):
        service.callers("nope", "feed")
    with pytest.raises(NotFound, match=r"^no symbol 'nothing' in repository 'mail'$"):
        service.definition("mail", "nothing")
    with pytest.raises(NotFound, match=r"^no symbol 'parse' in 'mail/feed.py' in repository"):
        service.references("mail", "parse", path="mail/feed.py")
    with pytest.raises(NotFound, match=r"^no symbol 'x.py'"):
        service.shortest_path("mail", "mail/feed.py", "x.py")
