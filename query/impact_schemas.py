"""The impact question and its answer (issue 20; query/service/impact.py answers it):
what a diff, a list of files or a list of symbols changes, what depends on it, which
tests exercise it, which neighborhoods it touches, and how risky it looks."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from query.navigation_schemas import NodeOut
from stores.freshness import Freshness

MAX_DIFF_CHARS = 4_000_000
MAX_NAMES = 1000
MAX_DEPTH = 4
MAX_LIMIT = 200


class ImpactRequest(BaseModel):
    """Exactly one of ``diff``, ``files`` and ``symbols``."""

    model_config = ConfigDict(extra="forbid")

    diff: str | None = Field(
        None,
        max_length=MAX_DIFF_CHARS,
        description="a unified diff (git diff's output) against the indexed version",
    )
    files: list[str] | None = Field(
        None, max_length=MAX_NAMES, description="changed files, paths in the repository"
    )
    symbols: list[str] | None = Field(
        None,
        max_length=MAX_NAMES,
        description="changed symbols: 'Class.method', or 'path/to/file.py:Class.method'",
    )
    depth: int = Field(2, ge=1, le=MAX_DEPTH, description="hops of dependents at most")
    budget_tokens: int = Field(
        4000, ge=200, le=100_000, description="the answer's size at most, in tokens (chars/4)"
    )
    limit: int = Field(
        50, ge=1, le=MAX_LIMIT, description="dependents and tests listed at most (each)"
    )


class ChangedFileOut(BaseModel):
    path: str = Field(description="the indexed (old) path; the new path for an added file")
    status: str = Field(description="modified, added, deleted or renamed")
    new_path: str | None = Field(description="where a renamed file went")
    lines: list[str] = Field(description="old-side lines changed: 'L4-5'; L0: the file's top")
    whole: bool = Field(description="changed whole: deleted, renamed, binary or listed")
    module_level: bool = Field(description="a change outside every symbol")
    indexed: bool = Field(description="False: a new file; nothing indexed depends on it")
    note: str | None = None


class ChangedSymbolOut(NodeOut):
    qualname: str
    exported: bool = Field(description="visible to other files by the language's rule")


class DependentOut(NodeOut):
    hop: int = Field(description="1: depends on a changed node directly")
    confidence: str = Field(description="the weakest on its path: import > same_file > ...")
    via: str = Field(description="the node it depends on, one hop nearer the change")
    edge_kind: str = Field(description="CALLS, IMPORTS, REFERENCES, EXTENDS, TESTS, ...")
    changed: str = Field(description="the changed node its path starts at")
    hub: bool = Field(description="a hub: listed, not walked through")
    neighborhood: str | None


class TestOut(BaseModel):
    path: str
    link: str = Field(
        description="changed (a changed test), calls (it depends on the change), "
        "graph (TESTS edges to the file) or name (named after the file)"
    )
    hop: int = Field(description="0: exercises a changed file; else the dependent's hop")
    of: str = Field(description="the file it exercises")


class NeighborhoodTouchedOut(BaseModel):
    id: str
    label: str
    changed: int = Field(description="changed files in it")
    dependents: int = Field(description="dependent files in it")
    entry_points: list[str]
    entry_points_touched: list[str] = Field(description="entry points changed or dependent")


class RiskOut(BaseModel):
    level: str = Field(description="low, medium or high, by ``rule``")
    rule: str
    reasons: list[str]
    direct: int = Field(description="non-test dependents one hop away")
    transitive: int = Field(description="non-test dependents further away")
    other_neighborhoods: int = Field(description="dependents in neighborhoods with no change")
    untested: list[str] = Field(description="public changes (symbols, files) no test reaches")


class ImpactAnswer(BaseModel):
    repo: str
    depth: int
    changed_files: list[ChangedFileOut]
    changed_symbols: list[ChangedSymbolOut]
    dependents: list[DependentOut] = Field(description="by hop, then confidence, then id")
    dependents_total: int = Field(description="found within depth (at most the walk's cap)")
    dependents_capped: bool = Field(description="the walk stopped at its cap")
    tests: list[TestOut]
    tests_total: int
    neighborhoods: list[NeighborhoodTouchedOut] = Field(
        description="empty before the first recluster"
    )
    risk: RiskOut
    left_out: dict[str, int] = Field(
        description="items of each list left out, by ``limit`` or by the token budget"
    )
    budget_tokens: int
    tokens: int = Field(description="this answer's size, in tokens (chars/4)")
    freshness: Freshness
