"""The import rules in ``pyproject.toml`` (``make lint`` runs them) hold for the project
as it is, and each one fails when a scratch copy of the project breaks it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("producers", "processors", "stores", "query", "deploy")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages and the contracts, copied where editing them touches nothing."""
    root = tmp_path_factory.mktemp("layering")
    shutil.copy(ROOT / "pyproject.toml", root)
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    return root


def test_the_project_keeps_every_contract(scratch: Path) -> None:
    run = lint(scratch)
    assert run.returncode == 0, run.stdout
    assert "4 kept, 0 broken" in run.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "query/search/ranking.py",
            "import processors.graph.build",
            "query is not allowed to import processors",
        ),
        (
            "processors/indexer.py",
            "import query.read_model",
            "processors is not allowed to import query",
        ),
        (
            "producers/events.py",
            "import stores.records",
            "producers is not allowed to import stores",
        ),
        (
            "stores/repo_state.py",
            "import processors.indexer",
            "stores is not allowed to import processors",
        ),
        (
            "query/read_model.py",
            "import producers.watcher",
            "query.read_model -> producers.watcher",
        ),
        ("processors/parsing/tree.py", "import sqlite3", "processors.parsing.tree -> sqlite3"),
        ("query/search/ranking.py", "import httpx", "query.search.ranking -> httpx"),
        ("query/service/base.py", "import fastapi", "query.service.base -> fastapi"),
        # Indirect: the pure core reaching a runtime through a module of ours.
        ("stores/projections/page.py", "import stores.qdrant_vectors", "qdrant_client"),
    ],
)
def test_a_forbidden_import_breaks_the_lint(
    scratch: Path, module: str, line: str, broken: str
) -> None:
    path = scratch / module
    original = path.read_text()
    path.write_text(f"{original}\n{line}  # noqa\n")
    try:
        run = lint(scratch)
    finally:
        path.write_text(original)
    assert run.returncode != 0
    assert "1 broken" in run.stdout
    assert broken in run.stdout
