"""Records of the materialized state: per-file facts and the nodes and edges of the graph.

They travel inside graph deltas (so they are frozen, versioned pydantic contracts) and
they are what the query service serves. Line numbers are 1-based and inclusive.
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

SymbolKind = Literal[
    "CLASS",
    "FUNCTION",
    "METHOD",
    "VARIABLE",
    "INTERFACE",
    "STRUCT",
    "ENUM",
    "TRAIT",
    "TYPE",
    "MODULE",
    "NAMESPACE",
]


class Record(BaseModel):
    """The base of every record of the contracts: frozen and strict (an unknown field is an
    error, so a reader never silently drops what a newer writer meant)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


R = TypeVar("R", bound=Record)
_new = object.__new__
_set = object.__setattr__


def trusted(cls: type[R], values: dict[str, Any]) -> R:
    """A ``cls`` made of ``values`` without validating them again, for the hot paths
    whose values this process built itself and whose types it guarantees: an
    extractor's references and symbols, the resolver's edges (hundreds of thousands per
    large repository). ``values`` holds every field of ``cls``, defaults included, in
    declaration order; the record then equals, hashes, dumps, copies and pickles as the
    validated one (tests/unit/test_records.py pins it). 1.7 against 3.8 us for a
    reference record; pydantic's own ``model_construct`` took 6.1."""
    record = _new(cls)
    _set(record, "__dict__", values)
    # One set per class, not per record: a set of six names takes 728 bytes, which were
    # 400 of the 1,411 MB a sympy build holds. Safe to share: pydantic changes a record's
    # set in place only on assignment (frozen records refuse it) and on extra fields
    # (forbidden); ``model_copy`` copies the set before it adds to it.
    fields = _FIELDS_SET.get(cls)
    if fields is None:
        config = cls.model_config
        if not config.get("frozen") or config.get("extra") != "forbid":
            raise TypeError(f"{cls.__name__}: only frozen records without extras are trusted")
        fields = _FIELDS_SET[cls] = set(cls.model_fields)
    _set(record, "__pydantic_fields_set__", fields)
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


_FIELDS_SET: dict[type[Record], set[str]] = {}

_FILE_PARTS = ("symbols", "imports", "references", "sections", "keywords", "aliases", "chunks")


def share_fields_set(record: Record) -> None:
    """Give a decoded record its class's one fields-set, as `trusted` builds records:
    pydantic's JSON decoding makes a set per record (728 bytes from 5 names), which were
    354 of the 762 MB a replica folded for sympy (docs/READ_SIDE_MEMORY.md). Only a
    record whose set names every field (what the contracts' encoders write) shares, so
    ``model_dump(exclude_unset=True)`` answers as before."""
    cls = type(record)
    fields = _FIELDS_SET.get(cls)
    if fields is None:
        fields = _FIELDS_SET[cls] = set(cls.model_fields)
    if record.__pydantic_fields_set__ == fields:
        _set(record, "__pydantic_fields_set__", fields)


def share_file_fields_sets(record: FileRecord) -> None:
    """`share_fields_set` for a file's record and every record it holds."""
    for name in _FILE_PARTS:
        for item in getattr(record, name):
            share_fields_set(item)
    share_fields_set(record)


class SymbolRecord(Record):
    """A symbol one file defines (class, function, method, ...), with its lines, signature
    and doc, as the parser extracted it."""

    name: str
    qualname: str = Field(description="dotted path inside the file: Class.method")
    kind: SymbolKind
    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    signature: str = Field(description="the declaration line(s), without the body")
    parent: str | None = Field(default=None, description="qualname of the enclosing symbol")
    doc: str | None = Field(default=None, description="docstring or leading comment")
    bases: tuple[str, ...] = Field(
        default=(), description="what it extends, as written: 'Base', 'models.Model', 'io.Reader'"
    )
    implements: tuple[str, ...] = Field(
        default=(), description="interfaces it implements (Java, TS) or traits (Rust impl)"
    )
    exported: bool = Field(
        default=True, description="visible to other files by the language's rule"
    )
    value_type: str | None = Field(
        default=None,
        description="the name a module-level variable is assigned a call of, as written: "
        "its class when that names one ('ConnectionRouter' for 'router = "
        "ConnectionRouter()', 'template.Library' for 'register = template.Library()')",
    )


class ImportRecord(Record):
    """One import statement of a file, as written (resolution to files is the graph's)."""

    module: str = Field(description="as written: 'os.path', './util', 'react'")
    names: tuple[str, ...] = Field(default=(), description="imported names; () for the module")
    level: int = Field(default=0, ge=0, description="Python relative-import dots")
    line: int = Field(ge=1)
    alias: str | None = Field(
        default=None,
        description="the local name the module itself is bound to, when it is bound: "
        "'np' for 'import numpy as np', 'os' for 'import os.path', 'ns' for "
        "'import * as ns', 'fmt' for Go's 'import \"fmt\"'",
    )
    local_names: tuple[str, ...] = Field(
        default=(),
        description="the local binding of each of ``names`` (same length) when any differs; "
        "() when every name is bound as itself",
    )

    def bindings(self) -> tuple[tuple[str, str], ...]:
        """(local name, imported name) pairs of ``names``."""
        locals_ = self.local_names or self.names
        return tuple(zip(locals_, self.names, strict=False))


ReferenceKind = Literal["call", "use", "type"]


class ReferenceRecord(Record):
    """A name used in a file: a call, a read, or a type position."""

    name: str = Field(description="the referenced identifier, without its qualifier")
    qualifier: str | None = Field(
        default=None,
        description="what it is reached through, as written: 'np' in np.array(), 'self' in "
        "self.run(), 'a.b' in a.b.c(); None for a bare name",
    )
    kind: ReferenceKind
    line: int = Field(ge=1)
    column: int = Field(ge=0)
    scope: str | None = Field(
        default=None, description="qualname of the enclosing symbol; None at module level"
    )


class Section(Record):
    """A labelled stretch of a file's lines (imports, a class, a function): a file's outline."""

    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    label: str = Field(description="'imports', 'class AuthService', 'def main', 'module docstring'")


class Keyword(Record):
    """A term that describes a file, weighted (from its name, symbols and docstrings)."""

    term: str
    weight: float = Field(gt=0)


class Alias(Record):
    """A module-specifier rewrite declared by a configuration file (tsconfig paths,
    go.mod's module path, Cargo's crate root), paths relative to the repository root."""

    prefix: str = Field(description="'@app/', 'github.com/acme/svc', 'crate'")
    target: str = Field(description="'src/app/', 'svc', 'crates/core/src'")


class ChunkRecord(Record):
    """A piece of a file to retrieve and to read: one symbol (a function, a method, a
    class's own lines) or a stretch of module-level lines, with its text."""

    id: str = Field(description="'path#Qual.name' or 'path#L1-20': stable across edits")
    path: str
    kind: str = Field(
        description="the symbol's kind, 'MODULE' for module-level lines, 'DOC' for a document"
    )
    qualname: str | None = None
    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    signature: str | None = None
    doc: str | None = None
    text: str = Field(description="the lines as in the file (long bodies capped)")
    content_hash: str = Field(description="of what is embedded: the cache key of its vector")


CONFIG_LANGUAGES = frozenset({"go-module", "tsconfig", "cargo"})
"""The ``language`` of a configuration file that steers import resolution (go.mod,
tsconfig/jsconfig, Cargo.toml): a node of no code graph's clusters."""


class FileRecord(Record):
    """What the state knows of one file at one version."""

    path: str
    language: str | None
    size: int = Field(ge=0)
    lines: int = Field(ge=0)
    content_hash: str | None
    skipped: str | None = Field(description="why the file has no parsed facts, if it has none")
    parse_errors: int = Field(ge=0, description="syntax error regions tree-sitter recovered from")
    problems: tuple[str, ...] = ()
    symbols: tuple[SymbolRecord, ...] = ()
    imports: tuple[ImportRecord, ...] = ()
    references: tuple[ReferenceRecord, ...] = ()
    package: str | None = Field(
        default=None, description="the declared package: Go package name, Java package"
    )
    purpose: str | None = Field(
        default=None, description="the module's purpose line: its docstring or leading comment"
    )
    sections: tuple[Section, ...] = ()
    keywords: tuple[Keyword, ...] = ()
    aliases: tuple[Alias, ...] = ()
    chunks: tuple[ChunkRecord, ...] = Field(
        default=(), description="what retrieval indexes and context packs quote"
    )
    origin: Literal["scan", "watch", "commit"]
    commit: str | None
    working_tree: bool
    producer: str = Field(
        description="the producer session that last reported the file; a full scan of a "
        "new session removes the files it did not report"
    )


NodeKind = Literal["REPOSITORY", "FOLDER", "FILE", "EXTERNAL_MODULE"] | SymbolKind
EdgeKind = Literal[
    "IMPORTS",
    "CALLS",
    "USES",
    "EXTENDS",
    "IMPLEMENTS",
    "TESTS",
    "REFERENCES",
    "CONTAINS",
    "DEFINED_BY",
    "SIBLING",
]


class NodeRecord(Record):
    """A node of the code graph: a file, a symbol, a folder or an external module; its id
    says which (``file:``, ``sym:``, ``dir:``, ``ext:``) and what owns it (`owner_path`)."""

    id: str
    kind: str
    name: str
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    level: int | None = Field(
        default=None, description="folders: height counted bottom-up (a folder of files is 1)"
    )


class EdgeRecord(Record):
    """A directed edge of the code graph (imports, calls, defines, contains, ...), with the
    confidence of the evidence it rests on; keyed by ``(src, dst, kind)``."""

    src: str
    dst: str
    kind: str
    weight: float = 1.0
    confidence: Literal["import", "same_file", "same_folder", "name_match", "structural"] = (
        "structural"
    )

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src, self.dst, self.kind)
