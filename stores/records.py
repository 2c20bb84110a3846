"""Records of the materialized state: per-file facts and the nodes and edges of the graph.

They travel inside graph deltas (so they are frozen, versioned pydantic contracts) and
they are what the query service serves. Line numbers are 1-based and inclusive.

Two kinds of contract. A `Record` is a pydantic model: the envelopes (deltas, snapshots,
neighborhoods, file records), a few per file. A `Fact` is a frozen, slotted pydantic
dataclass: the records a state holds by the hundred thousand (symbols, imports,
references, sections, keywords, chunks, nodes, edges). Both validate and serialize
alike inside a delta; a fact costs its fields' slots and no more: 80 bytes for an edge
against 272 for the same model (a model keeps a ``__dict__`` and a fields-set), which
was the largest share of a replica's memory (docs/READ_SIDE_MEMORY.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.dataclasses import dataclass

if TYPE_CHECKING:
    from typing import Self

    from pydantic.fields import FieldInfo

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
    """The base of the contracts' models: frozen and strict (an unknown field is an
    error, so a reader never silently drops what a newer writer meant)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


FACT = ConfigDict(extra="forbid")
"""A fact's pydantic configuration (with ``frozen=True, slots=True, kw_only=True`` on the
decorator): strict like a `Record`."""


class Fact:
    """The base of the state's small records, each a frozen, slotted pydantic dataclass
    (``@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)``): a delta
    validates them as it validates its models, and a fact answers the part of a model's
    API the code uses (`model_copy`, `model_dump`, `model_dump_json`, `model_validate`,
    `model_validate_json`), so that a fact and a model read alike."""

    __slots__ = ()

    def values(self) -> dict[str, Any]:
        """The fields and their values, in declaration order."""
        return {name: getattr(self, name) for name in fields_of(type(self))}

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        """A copy with ``update``'s fields replaced, not validated (as a model's copy)."""
        values = self.values()
        if update:
            values.update(update)
        return trusted(type(self), values)

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The fields as a dict (pydantic's ``dump_python`` options: mode, exclude, ...)."""
        dumped: dict[str, Any] = _adapter(type(self)).dump_python(self, **options)
        return dumped

    def model_dump_json(self, **options: Any) -> str:
        """The fact's JSON, as a model's ``model_dump_json`` writes it."""
        return _adapter(type(self)).dump_json(self, **options).decode()

    @classmethod
    def model_validate(cls, value: Any) -> Self:
        validated: Self = _adapter(cls).validate_python(value)
        return validated

    @classmethod
    def model_validate_json(cls, raw: str | bytes) -> Self:
        validated: Self = _adapter(cls).validate_json(raw)
        return validated


_ADAPTERS: dict[type[Fact], TypeAdapter[Any]] = {}


def _adapter(cls: type[Fact]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def fields_of(cls: type[Record] | type[Fact]) -> dict[str, FieldInfo]:
    """A contract's fields in declaration order, a model's or a fact's."""
    if issubclass(cls, Fact):
        found: dict[str, FieldInfo] = cls.__pydantic_fields__  # type: ignore[attr-defined]
        return found
    return cls.model_fields


R = TypeVar("R", bound="Record | Fact")
_new = object.__new__
_set = object.__setattr__


def trusted(cls: type[R], values: dict[str, Any]) -> R:
    """A ``cls`` made of ``values`` without validating them again, for the hot paths
    whose values this process built itself and whose types it guarantees: an
    extractor's references and symbols, the resolver's edges (hundreds of thousands per
    large repository). ``values`` holds every field of ``cls``, defaults included, in
    declaration order; the record then equals, hashes, dumps, copies and pickles as the
    validated one (tests/unit/test_records.py pins it). A fact: 0.6 against 2.9 us
    validated; a reference as a model took 1.7, pydantic's own ``model_construct`` 6.1."""
    record = _new(cls)
    if isinstance(record, Fact):
        for name, value in values.items():
            _set(record, name, value)
        return record
    _set(record, "__dict__", values)
    # One set per class, not per record: a set of six names takes 728 bytes, which were
    # 400 of the 1,411 MB a sympy build holds. Safe to share: pydantic changes a record's
    # set in place only on assignment (frozen records refuse it) and on extra fields
    # (forbidden); ``model_copy`` copies the set before it adds to it.
    model = type(record)
    fields = _FIELDS_SET.get(model)
    if fields is None:
        config = model.model_config
        if not config.get("frozen") or config.get("extra") != "forbid":
            raise TypeError(f"{model.__name__}: only frozen records without extras are trusted")
        fields = _FIELDS_SET[model] = set(model.model_fields)
    _set(record, "__pydantic_fields_set__", fields)
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    return record


_FIELDS_SET: dict[type[Record], set[str]] = {}


def share_fields_set(record: Record) -> None:
    """Give a decoded model its class's one fields-set, as `trusted` builds models:
    pydantic's JSON decoding makes a set per model (728 bytes from 5 names). Only a
    model whose set names every field (what the contracts' encoders write) shares, so
    ``model_dump(exclude_unset=True)`` answers as before."""
    cls = type(record)
    fields = _FIELDS_SET.get(cls)
    if fields is None:
        fields = _FIELDS_SET[cls] = set(cls.model_fields)
    if record.__pydantic_fields_set__ == fields:
        _set(record, "__pydantic_fields_set__", fields)


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class SymbolRecord(Fact):
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


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class ImportRecord(Fact):
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


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class ReferenceRecord(Fact):
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


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class Section(Fact):
    """A labelled stretch of a file's lines (imports, a class, a function): a file's outline."""

    line_start: int = Field(ge=1)
    line_end: int = Field(ge=1)
    label: str = Field(description="'imports', 'class AuthService', 'def main', 'module docstring'")


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class Keyword(Fact):
    """A term that describes a file, weighted (from its name, symbols and docstrings)."""

    term: str
    weight: float = Field(gt=0)


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class Alias(Fact):
    """A module-specifier rewrite declared by a configuration file (tsconfig paths,
    go.mod's module path, Cargo's crate root), paths relative to the repository root."""

    prefix: str = Field(description="'@app/', 'github.com/acme/svc', 'crate'")
    target: str = Field(description="'src/app/', 'svc', 'crates/core/src'")


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class ChunkRecord(Fact):
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


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class NodeRecord(Fact):
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


@dataclass(frozen=True, slots=True, kw_only=True, config=FACT)
class EdgeRecord(Fact):
    """A directed edge of the code graph (imports, calls, defines, contains, ...), with the
    confidence of the evidence it rests on; keyed by ``(src, dst, kind)``."""

    src: str
    dst: str
    kind: str
    weight: float = 1.0
    confidence: Literal["import", "same_file", "same_folder", "name_match", "structural"] = (
        "structural"
    )
    # One int, not the lines of every reference: 8 bytes an edge (issue 20; sympy holds
    # 328 k edges), and the first site is where a reader starts.
    line: int | None = Field(
        default=None,
        ge=1,
        description="the call site: the first line of the source's file where a reference "
        "behind the edge is written (CALLS, USES, REFERENCES from a symbol, and a test "
        "function's TESTS), or a class's line for EXTENDS and IMPLEMENTS; None for edges "
        "no reference makes (structure, imports, file to file)",
    )

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.src, self.dst, self.kind)
