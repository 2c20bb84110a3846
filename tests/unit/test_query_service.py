"""The query service's answers, called as plain methods: no web framework in between.

The model is fed real deltas (RepoIndex) and a real recluster; the service is built on
it and asked directly, as the HTTP routes and the MCP tools ask it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from processors.indexer import RepoIndex
from processors.neighborhoods.recluster import ReclusterSettings, recluster
from query.read_model import ReadModel
from query.service import (
    BadRequest,
    InvalidArguments,
    NotFound,
    NotReady,
    QueryService,
    Warming,
)
from stores.projections.graph_state import FileGraphState
from tests.factories import Stamp

ROOT = Path(__file__).resolve().parents[2]

FILES = {
    "billing/invoice.py": (
        "from billing.tax import vat_for\n\n"
        "class Invoice:\n"
        "    def total(self, lines):\n"
        '        """The invoice total with VAT."""\n'
        "        return sum(lines) + vat_for(sum(lines))\n"
    ),
    "billing/tax.py": (
        "RATE = 0.2\n\n"
        "def vat_for(amount):\n"
        '    """Value added tax owed on an amount."""\n'
        "    return amount * RATE\n"
    ),
    "tests/test_invoice.py": (
        "from billing.invoice import Invoice\n\n"
        "def test_total():\n"
        "    assert Invoice().total([10]) == 12\n"
    ),
    "README.md": "# Billing\n\nInvoices and tax.\n",
}


def indexed(repo: str, files: dict[str, str], model: ReadModel, *, clustered: bool) -> None:
    index, stamp = RepoIndex(repo), Stamp(repo)
    events = [stamp.changed(p, t, origin="scan") for p, t in files.items()]
    for event in [stamp.claim(), *events, stamp.scan_completed("c1")]:
        delta = index.handle(event, now=1000.0)
        assert delta is not None
        model.apply_delta(delta)
    if clustered:
        snapshot = recluster(FileGraphState.of(index.state), None, ReclusterSettings(), now=1001.0)
        model.apply_snapshot(snapshot)


@pytest.fixture
def service() -> QueryService:
    """``shop`` (FILES) indexed and clustered; ``bare`` indexed, not clustered yet."""
    model = ReadModel(clock=lambda: 1002.0)
    indexed("shop", FILES, model, clustered=True)
    indexed("bare", {"lib/util.py": "def helper():\n    return 1\n"}, model, clustered=False)
    return QueryService(model, ready=lambda: True)


def test_search_ranks_the_files_a_question_is_about(service: QueryService) -> None:
    page = service.search("shop", "vat owed on the invoice total")
    hits = [(h.path, h.read, h.neighborhood_label, h.inbound_degree) for h in page.items]
    assert hits == [
        ("billing/invoice.py", "L4-6", "billing", 1),
        ("billing/tax.py", "L3-5", "billing", 1),
        ("tests/test_invoice.py", "L3-4", "billing", 0),
    ]
    assert [h.score for h in page.items] == sorted((h.score for h in page.items), reverse=True)
    assert (page.total, page.truncated, page.retrievers) == (3, False, ["bm25", "mentions"])
    assert (page.ranking.source, page.freshness.indexed_commit) == ("defaults", "c1")
    # The budget cuts the list, never below one hit, and keeps the true total.
    small = service.search("shop", "vat owed on the invoice total", max_tokens=100)
    assert ([h.path for h in small.items], small.total, small.truncated) == (
        ["billing/invoice.py"],
        3,
        True,
    )


def test_context_packs_a_symbol_a_question_and_a_file(service: QueryService) -> None:
    by_symbol = service.context("shop", symbol="Invoice.total", budget=300)
    assert by_symbol.targets == ["billing/invoice.py#Invoice.total"]
    assert by_symbol.read_first == [
        "billing/invoice.py:L4-6 (inbound 1)",
        "billing/tax.py:L3-5 (inbound 1)",
        "tests/test_invoice.py:L1-4 (inbound 0)",
    ]
    assert by_symbol.tokens <= 300 and "[TARGET]" in by_symbol.text
    by_question = service.context("shop", q="value added tax")
    assert by_question.targets == [
        "billing/tax.py#vat_for",
        "billing/invoice.py#module:1",
        "README.md#doc:1",
    ]
    assert (by_question.title, by_question.question_truncated) == ("value added tax", False)
    assert by_question.read_next == [] and by_symbol.read_next == []  # nothing ranked next
    # One target: the files ranked next that no group shows are the map (invoice.py
    # imports tax.py: its group is there).
    one = service.context("shop", q="value added tax", seeds=1)
    assert one.read_next == ["README.md · L1-3"]
    assert one.text.endswith("read these lines (1 of 1)\nREADME.md · L1-3")
    by_file = service.context("shop", path="/billing/tax.py")
    assert by_file.read_first[0] == "billing/tax.py:L1-5 (inbound 1)"
    assert by_file.question_truncated is None
    # path narrows a symbol's name to a file or folder
    narrowed = service.context("shop", symbol="vat_for", path="billing/")
    assert narrowed.targets == ["billing/tax.py#vat_for"]
    assert service.context("shop", symbol="vat_for", path="tests").targets == []


def test_neighborhoods_and_the_overview(service: QueryService) -> None:
    page = service.neighborhoods("shop")
    assert [(n.label, n.size, n.entry_points) for n in page.items] == [
        ("billing", 3, ["billing/invoice.py", "billing/tax.py"])
    ]
    assert (page.total, page.snapshot.seq, page.snapshot.stale) == (1, 1, False)
    nid = page.items[0].id
    detail = service.neighborhood("shop", nid)
    assert [m.path for m in detail.members] == [
        "billing/invoice.py",
        "billing/tax.py",
        "tests/test_invoice.py",
    ]
    of = service.neighborhood_of("shop", "billing/tax.py")
    assert (of.neighborhood.id, of.standing.in_degree) == (nid, 1)
    overview = service.overview("shop")
    assert (overview.sizes.files, overview.neighborhoods_total) == (4, 1)
    assert service.neighborhoods("bare").items == []


def test_catalogue_answers(service: QueryService) -> None:
    listed = service.repositories()
    assert [(r.repo, r.files, r.symbols) for r in listed.items] == [
        ("bare", 1, 1),
        ("shop", 4, 5),
    ]
    assert [r.repo for r in service.repositories(name="sh*").items] == ["shop"]
    files = service.files("shop", glob="billing/*")
    assert [(f.path, f.symbols, f.imports) for f in files.items] == [
        ("billing/invoice.py", 2, 1),
        ("billing/tax.py", 2, 0),
    ]
    detail = service.file_detail("shop", "billing/tax.py")
    assert (detail.imported_by, detail.depends_on) == (["billing/invoice.py"], [])
    assert [s.name for s in service.symbols("shop", "billing/invoice.py").items] == [
        "Invoice",
        "total",
    ]
    health = service.health()
    assert (health.repositories, health.ready, health.dead_letters) == (2, True, 0)
    graph = service.graph_search("shop", "vat", channels="functions")
    assert [(c.channel, [(h.path, h.text, h.match) for h in c.items]) for c in graph.channels] == [
        ("functions", [("billing/tax.py", "vat_for", "prefix")])
    ]
    churn = service.churn("shop")
    assert [(e.id, e.files_added, e.symbols_added) for e in churn.items] == [("scan:c1", 4, 5)]


UNKNOWN_REPO = "unknown repository 'nope'; see /repositories"


@pytest.mark.parametrize(
    ("method", "arguments", "kind", "message"),
    [
        ("search", {"repo": "nope", "q": "x"}, NotFound, UNKNOWN_REPO),
        ("repository", {"repo": "nope"}, NotFound, UNKNOWN_REPO),
        ("dashboard", {"repo": "nope"}, NotFound, UNKNOWN_REPO),
        (
            "file_detail",
            {"repo": "shop", "path": "missing.py"},
            NotFound,
            "no file 'missing.py' in repository 'shop'",
        ),
        (
            "context",
            {"repo": "shop", "path": "missing.py"},
            NotFound,
            "no file 'missing.py' in repository 'shop'",
        ),
        ("context", {"repo": "shop"}, InvalidArguments, "give exactly one of q, symbol, path"),
        (
            "context",
            {"repo": "shop", "q": "tax", "path": "billing/tax.py"},
            InvalidArguments,
            "give exactly one of q, symbol, path",
        ),
        (
            "hubs",
            {"repo": "bare"},
            NotReady,
            "no neighborhoods for 'bare' yet: the first recluster is due",
        ),
        (
            "neighborhood_of",
            {"repo": "shop", "path": "README.md"},
            NotFound,
            "'README.md' is not in a neighborhood: only parsed source files are clustered",
        ),
        (
            "graph_search",
            {"repo": "shop", "q": "vat", "channels": "paths,bogus"},
            InvalidArguments,
            "unknown channels ['bogus']; known: purpose, classes, functions, imports, keywords, "
            "paths, glob",
        ),
        (
            "structural_diff",
            {"repo": "shop", "base": "c1", "head": "c1"},
            BadRequest,
            "base 'c1' is not before head 'c1'",
        ),
        (
            "churn_entry",
            {"repo": "shop", "entry_id": "working-tree"},
            NotFound,
            "no churn entry 'working-tree' in 'shop'; see /churn",
        ),
    ],
)
def test_refusals_are_domain_errors_with_the_api_messages(
    service: QueryService,
    method: str,
    arguments: dict[str, str],
    kind: type[Exception],
    message: str,
) -> None:
    with pytest.raises(kind) as refused:
        getattr(service, method)(**arguments)
    assert str(refused.value) == message


def test_a_replica_still_loading_refuses_an_unknown_repository_as_warming() -> None:
    loading = QueryService(ReadModel(), ready=lambda: False)
    with pytest.raises(Warming) as refused:
        loading.search("nope", "tax")
    assert str(refused.value) == "repository 'nope': this replica is still loading; retry"
    assert loading.health().ready is False


def test_a_session_lifts_what_it_touched(service: QueryService) -> None:
    question = "vat owed on the invoice total"
    assert all("session" not in h.signals for h in service.search("shop", question).items)
    touched = service.context("shop", symbol="vat_for", session="s1")
    assert touched.targets == ["billing/tax.py#vat_for"]
    lifted = service.search("shop", question, session="s1")
    assert {h.path: h.signals.get("session") for h in lifted.items} == {
        "billing/invoice.py": None,
        "billing/tax.py": 1.0,
        "tests/test_invoice.py": None,
    }
    other = service.search("shop", question, session="s2")
    assert all("session" not in h.signals for h in other.items)


def test_importing_the_service_imports_no_web_framework() -> None:
    probe = (
        "import sys, query.service; "
        "print(sorted(m for m in ('fastapi', 'starlette', 'mcp', 'uvicorn') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_a_questions_map_names_source_files_only() -> None:
    """The map lists the files ranked next that are source: a test file the ranking puts
    second (it names the function) is left out, a source file is kept."""
    model = ReadModel(clock=lambda: 1002.0)
    files = {
        "lib/alpha.py": "def alpha_total(x):\n    return x\n",
        "lib/beta.py": "def beta(x):\n    '''alpha_total of beta'''\n    return x\n",
        "tests/test_beta.py": "def test_alpha_total_twice():\n    assert 'alpha_total'\n",
    }
    indexed("r", files, model, clustered=True)
    service = QueryService(model, ready=lambda: True)
    assert [h.path for h in service.search("r", "alpha_total").items][:1] == ["lib/alpha.py"]
    assert "tests/test_beta.py" in [h.path for h in service.search("r", "alpha_total").items]
    pack = service.context("r", q="alpha_total", seeds=1)
    assert pack.read_next == ["lib/beta.py · L1-3 beta"]
