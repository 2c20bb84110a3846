"""The CLI imports only what the verb it runs needs (issue 20).

``import deploy.cli`` used to import every verb's machinery (faust, aiokafka, Qdrant,
FastAPI, MCP, tree-sitter: 2.6 s), so ``gazetteer --help``, every ``search`` and every
process ``up`` starts paid for all of it. Each check runs in a fresh interpreter and
reads its ``sys.modules``: no timing, so the machine's load cannot make it flaky.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

HEAVY = frozenset(
    {
        "faust",
        "aiokafka",
        "qdrant_client",
        "fastapi",
        "starlette",
        "uvicorn",
        "mcp",
        "onnxruntime",
        "numpy",
        "networkx",
        "igraph",
        "tree_sitter",
        "watchfiles",
        "httpx",
        "pydantic",
        "structlog",
    }
)
"""What the parser and ``--help`` need none of."""

WEB = {"fastapi", "starlette", "uvicorn", "mcp"}
INDEXING = {"faust", "tree_sitter", "networkx", "igraph"}

NOT_IMPORTED: dict[str, set[str]] = {
    # The supervisor and the broker alone: a broker client, no part's machinery (and
    # no dense machinery for the settings check: issue 21, its start-up).
    "up": WEB | INDEXING | {"qdrant_client", "onnxruntime", "watchfiles", "numpy"},
    "broker": WEB | INDEXING | {"qdrant_client", "onnxruntime", "watchfiles", "numpy"},
    # The worker: faust and the indexer, no web framework, no Qdrant (it embeds into
    # Qdrant only with GAZETTEER_EMBED_IN=worker, and imports the client then).
    "worker": WEB | {"qdrant_client", "onnxruntime", "watchfiles"},
    # The producers: no faust, no parser, no web framework; no search machinery for the
    # read model they learn the indexed commits from (issue 21: `READ_SIDE_ONLY`).
    "watch": WEB | INDEXING | {"qdrant_client", "onnxruntime", "numpy"},
    # The query service: its web framework, no worker.
    "serve": {"faust", "tree_sitter", "qdrant_client", "onnxruntime"},
    # The router: HTTP in front of the replicas, no read side of its own.
    "route": {"faust", "tree_sitter", "qdrant_client", "onnxruntime"},
    "ranking": WEB | INDEXING | {"qdrant_client", "onnxruntime"},
    "token": WEB | INDEXING | {"qdrant_client", "onnxruntime", "numpy"},
    "eval": WEB | {"faust", "aiokafka", "qdrant_client", "onnxruntime"},
    # The stdio MCP server: the SDK (which brings starlette and uvicorn); httpx only at
    # its first tool call.
    "mcp": INDEXING
    | {"fastapi", "aiokafka", "qdrant_client", "onnxruntime", "numpy", "httpx", "httpcore"},
    # The query verbs print an answer: httpx, nothing else heavy.
    "search": HEAVY - {"httpx"},
    "context": HEAVY - {"httpx"},
    **{
        verb: HEAVY - {"httpx"}
        for verb in (
            "definition",
            "references",
            "callers",
            "callees",
            "path",
            "neighbors",
            "impact",
            "session-start",
            "graph-search",
        )
    },
}


def imported_after(code: str, stdin: str | None = None) -> set[str]:
    """The top-level names of the modules a fresh interpreter holds after ``code``
    (this worktree's modules first on the path, as ``python -m deploy.cli`` has them)."""
    return {name.split(".")[0] for name in modules_after(code, stdin)[0]}


def modules_after(code: str, stdin: str | None = None) -> tuple[set[str], str]:
    """Every module a fresh interpreter holds once ``code`` has run, and its stdout."""
    dump = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.stderr))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", dump + code],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    last = done.stderr.strip().splitlines()[-1]
    return set(json.loads(last)), done.stdout


def test_the_parser_and_help_import_nothing_heavy() -> None:
    found = imported_after(
        "import deploy.cli\n"
        "deploy.cli._parser()\n"
        "try:\n"
        "    deploy.cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
    )
    assert found & HEAVY == set()
    assert "deploy" in found


@pytest.mark.parametrize("verb", ["up", "search", "context", "eval", "mcp", "serve"])
def test_a_verbs_help_imports_nothing_heavy(verb: str) -> None:
    found = imported_after(
        f"import deploy.cli\ntry:\n    deploy.cli.main([{verb!r}, '--help'])\n"
        "except SystemExit:\n    pass\n"
    )
    assert found & HEAVY == set()


def test_every_verb_is_checked() -> None:
    import deploy.cli

    assert set(deploy.cli.VERBS) == set(NOT_IMPORTED)


@pytest.mark.parametrize("verb", sorted(NOT_IMPORTED))
def test_a_verb_imports_only_its_own_machinery(verb: str) -> None:
    found = imported_after(
        "import deploy.cli\n"
        f"verb = deploy.cli.VERBS[{verb!r}]\n"
        "if verb.dense:\n"
        "    import deploy.dense_check  # the settings check main() makes first\n"
        "verb.load()\n"
    )
    assert found & NOT_IMPORTED[verb] == set()


READ_SIDE_ONLY = (
    "query.dense",
    "query.retrieval",
    "query.search",
    "query.churn",
    "query.churn_files",
    "query.state_restore",
    "query.topic_snapshots",
)
"""What the query service's read model needs to answer, and the producers' does not to
learn each repository's indexed commit: imported when a repository is first held
(query/read_model.py) or when snapshots are read (query/materializer.py)."""


def test_the_producers_read_model_imports_no_search_machinery() -> None:
    """``gazetteer watch`` folds the topics into a `ReadModel` before it scans (issue 16);
    on a fresh start there is nothing to fold, and its start-up (issue 21) pays for no
    search, dense or churn module: 0.1 s of CPU before the scan starts."""
    modules, _ = modules_after(
        "import deploy.cli\n"
        "deploy.cli.VERBS['watch'].load()\n"
        "from query.materializer import Materializer\n"
        "from query.read_model import ReadModel\n"
        "model = ReadModel()\n"
        "Materializer(model, '127.0.0.1:9', None)\n"
    )
    assert "query.read_model" in modules
    held = sorted(m for m in modules if m.startswith(READ_SIDE_ONLY))
    assert held == []


def test_a_query_verb_runs_without_settings_logging_or_an_event_loop() -> None:
    """``gazetteer search`` end to end (an unreachable service: it says so, exit 2)."""
    found = imported_after(
        "import sys, deploy.cli\n"
        "code = deploy.cli.main(['search', 'app-1', 'q', '--url', 'http://127.0.0.1:9'])\n"
        "assert code == 2, code\n"
    )
    assert found & (NOT_IMPORTED["search"] | {"asyncio"}) == set()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


def test_mcp_answers_initialize_before_it_imports_the_query_service() -> None:
    """The stdio server's handshake needs the SDK, not the API document the tools come
    from (made at the first tools/list or call: query/mcp_tools.py `Tools`) nor an HTTP
    client (made at the first call: query/mcp_answers.py `OverHttp`)."""
    modules, out = modules_after(
        "import deploy.cli\ndeploy.cli.main(['mcp', '--url', 'http://127.0.0.1:9'])\n",
        stdin=json.dumps(INITIALIZE) + "\n",  # then end of input: the server stops
    )
    answer = json.loads(out.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"] == "gazetteer"
    assert {"query.api", "query.service", "query.read_model"} & modules == set()
    assert {name.split(".")[0] for name in modules} & NOT_IMPORTED["mcp"] == set()
    assert {"httpx", "httpcore", "h11", "h2", "certifi"} & modules == set()


def test_the_constants_written_out_for_the_parser_match_their_sources() -> None:
    """`deploy.cli.PEERS` and `deploy.runtime.MAX_MESSAGE_BYTES` are copies, so that
    the parser and the producers need not import the modules they come from."""
    from deploy.cli import PEERS
    from deploy.eval_peer import PEERS as peers
    from deploy.runtime import MAX_MESSAGE_BYTES
    from processors.app import MAX_DELTA_BYTES

    assert PEERS == peers
    assert MAX_MESSAGE_BYTES == MAX_DELTA_BYTES
