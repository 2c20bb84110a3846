"""Records rebuilt from JSON that this code wrote, without validating them again.

A state snapshot of django holds ~200,000 records (symbols, references, chunks, nodes,
edges); pydantic's ``model_validate_json`` took 4-15 s for its 44 MB on this shared
2-core machine, ``json.loads`` plus `stores.records.trusted` construction a fraction of
that (tests/bench/up_restart.py). Trusting is sound only for bytes whose integrity and
provenance are checked first: the snapshot's checksum, and a fingerprint of the
contract's JSON schema (`schema_fingerprint`), so that bytes written by a build with
other records are refused, never misread. The result equals the validated one
(tests/unit/test_state_snapshot.py pins it).

Supported field types: records, ``tuple[X, ...]``, fixed tuples, ``X | None``, and
str, int, float, bool and Literal values; a field of any other type (a union of
records) is validated by pydantic, which stays exact.

A reader may elide fields it only counts (`load`'s ``elide``): such a tuple comes back
as that many ``None`` placeholders, its records never built (a replica counts a file's
references and drops them: most of a snapshot's records).
"""

from __future__ import annotations

import hashlib
import json
import types
from collections.abc import Callable
from functools import cache
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, TypeAdapter

from stores.records import Fact, Record, fields_of, trusted

Convert = Callable[[Any], Any]


def _same(value: Any) -> Any:
    return value


Elided = frozenset[tuple[type, str]]
"""(contract, field) pairs `load` does not build."""


def converter(annotation: Any) -> Convert:
    """How to turn a JSON value of a field of type ``annotation`` into the field's value."""
    return _converter(annotation, frozenset())


def _placeholders(values: list[Any]) -> tuple[None, ...]:
    return (None,) * len(values)


@cache
def _converter(annotation: Any, elide: Elided) -> Convert:
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, (Record, Fact)):
        return _record(annotation, elide)
    if annotation in (str, int, bool) or origin is Literal:
        return _same
    if annotation is float:
        return float
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            item = _converter(args[0], elide)
            if item is _same:
                return tuple
            return lambda values: tuple([item(v) for v in values])
        items = tuple(_converter(a, elide) for a in args)
        return lambda values: tuple(c(v) for c, v in zip(items, values, strict=True))
    if origin in (Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        if len(present) == 1:
            inner = _converter(present[0], elide)
            if inner is _same:
                return _same
            return lambda value: None if value is None else inner(value)
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    return adapter.validate_python


def _record(cls: type[Record] | type[Fact], elide: Elided) -> Convert:
    fields = [
        (
            name,
            _placeholders
            if (cls, name) in elide
            else _converter(_hashable(info.annotation), elide),
        )
        for name, info in fields_of(cls).items()
    ]
    count = len(fields)

    def build(value: dict[str, Any]) -> Record | Fact:
        if len(value) != count:
            raise ValueError(f"{cls.__name__}: {len(value)} fields, the contract has {count}")
        return trusted(cls, {name: convert(value[name]) for name, convert in fields})

    return build


def load(cls: type[Record], raw: bytes | str, elide: Elided = frozenset()) -> Any:
    """``cls`` from its ``model_dump_json``, trusted (see the module), the fields of
    ``elide`` as placeholders; KeyError, TypeError or ValueError when the JSON is not of
    this contract."""
    return _converter(cls, elide)(json.loads(raw))


@cache
def schema_fingerprint(cls: type[BaseModel]) -> str:
    """A digest of the contract's JSON schema: any change of a field, a type or a nested
    record changes it."""
    schema = json.dumps(cls.model_json_schema(), sort_keys=True).encode()
    return hashlib.sha256(schema).hexdigest()[:16]


def _hashable(annotation: Any) -> Any:
    """A field's annotation as the converters' cache key (None: the field is untyped)."""
    return Any if annotation is None else annotation
