"""Response models of the query service. Every answer carries freshness."""

from __future__ import annotations

from pydantic import BaseModel, Field

from stores.freshness import Freshness
from stores.records import SymbolRecord


class Health(BaseModel):
    status: str
    ready: bool = Field(description="the read side has caught up with the topics as of start")
    repositories: int
    deltas_applied: int
    dead_letters: int
    partitions: str = Field(
        "all",
        description="the partitions this replica serves, so the repositories it holds (its "
        "shard: '0-3,8', 'INDEX/COUNT', or 'all')",
    )


class Producer(BaseModel):
    """A producer session's lease on a repository (issue 15): the greater one owns it."""

    producer: str = Field(description="the session id: host, pid and a random part")
    epoch: int
    host: str | None = None


class Repository(BaseModel):
    repo: str
    name: str | None = Field(
        description="the root directory's name (its path on the producer's machine is not "
        "served); None before the producer's first status"
    )
    branch: str | None
    files: int
    languages: dict[str, int] = Field(
        description="files per language, most first (the first five), lowercase"
    )
    symbols: int
    edges: int
    dead_letters: int
    delta_seq: int
    owner: Producer | None = Field(
        description="the lease the index applies events of; None before any claim"
    )
    fenced: list[Producer] = Field(
        description="older leases seen for this repository, newest first (their events "
        "are dead-lettered, their statuses never count as progress)"
    )
    freshness: Freshness


class RepositoryList(BaseModel):
    total: int = Field(description="repositories matching the filters, before pagination")
    offset: int
    limit: int
    items: list[Repository]
    partial: bool = Field(
        False,
        description="the replica is still loading its partitions: repositories it does not "
        "hold yet are missing from the list and the total",
    )


class FileSummary(BaseModel):
    path: str
    language: str | None
    size: int
    lines: int
    symbols: int
    imports: int
    skipped: str | None
    parse_errors: int


class FilePage(BaseModel):
    repo: str
    total: int = Field(description="files matching the filters, before pagination")
    offset: int
    limit: int
    items: list[FileSummary]
    freshness: Freshness


class ImportOut(BaseModel):
    module: str
    names: list[str]
    level: int
    line: int


class FileDetail(BaseModel):
    repo: str
    path: str
    language: str | None
    size: int
    lines: int
    content_hash: str | None
    skipped: str | None
    parse_errors: int
    problems: list[str]
    origin: str
    commit: str | None
    working_tree: bool
    package: str | None = Field(description="declared package (Go, Java)")
    purpose: str | None = Field(description="the module's docstring or leading comment")
    sections: list[str] = Field(description="'L1-25: imports', 'L26-80: class AuthService'")
    keywords: list[str] = Field(description="identifier parts, strongest first")
    references: int = Field(description="calls, reads and type uses found in the file")
    symbols: list[SymbolRecord] = Field(description="the first `limit`, in source order")
    symbols_total: int
    imports: list[ImportOut] = Field(description="the first `limit`, in source order")
    imports_total: int
    depends_on: list[str] = Field(description="files and external modules this file imports")
    depends_on_total: int
    imported_by: list[str] = Field(description="files of the repository that import this one")
    imported_by_total: int
    freshness: Freshness


class SymbolPage(BaseModel):
    repo: str
    path: str
    total: int = Field(description="symbols of the kind asked, before pagination")
    offset: int
    limit: int
    items: list[SymbolRecord]
    freshness: Freshness


class DeadLetterOut(BaseModel):
    failure: str
    reason: str
    topic: str
    partition: int
    offset: int
    key: str | None
    failed_at: float


class DeadLetterPage(BaseModel):
    total: int
    items: list[DeadLetterOut]
