"""Records rebuilt from JSON that this code wrote, without validating them again.

A state snapshot of django holds ~200,000 records (symbols, references, chunks, nodes,
edges); pydantic's ``model_validate_json`` took 4-15 s for its 44 MB on this shared
2-core machine. Trusting is sound only for bytes whose integrity and provenance are
checked first: the snapshot's checksum, and a fingerprint of the contract's JSON schema
(`schema_fingerprint`), so that bytes written by a build with other records are
refused, never misread. The result equals the validated one
(tests/unit/test_state_snapshot.py pins it).

The JSON is decoded by msgspec into a mirror of the contract: the facts
(`stores.records.Fact`, dataclasses) directly, built without their validation, and each
model as a msgspec struct of the same fields, rebuilt as the model by
`stores.records.trusted`. msgspec still checks every value's type as it decodes (a
string where an int belongs is an error) and refuses a model's unknown or missing
field. A django/db snapshot (122 files, 12 MB of JSON) decodes in 82 ms against 574
with ``json.loads`` and a converter per field (best of 5; docs/PERFORMANCE.md).

Supported field types: facts, models, ``tuple[X, ...]``, ``X | None``, and str, int,
float, bool and Literal values; a field of any other type (a union of models) is kept
as raw JSON and validated by pydantic, which stays exact.

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

import msgspec
from pydantic import BaseModel, TypeAdapter

from stores.records import Fact, Record, fields_of, trusted

Convert = Callable[[Any], Any]

Elided = frozenset[tuple[type, str]]
"""(contract, field) pairs `load` does not build."""


def _same(value: Any) -> Any:
    return value


def _placeholders(values: tuple[Any, ...]) -> tuple[None, ...]:
    return (None,) * len(values)


def load(cls: type[Record], raw: bytes | str, elide: Elided = frozenset()) -> Any:
    """``cls`` from its ``model_dump_json``, trusted (see the module), the fields of
    ``elide`` as placeholders; ValueError (msgspec's ValidationError or DecodeError)
    when the JSON is not of this contract."""
    decoder, convert = _loader(cls, elide)
    return convert(decoder.decode(raw))


@cache
def _loader(cls: type[Record], elide: Elided) -> tuple[msgspec.json.Decoder[Any], Convert]:
    mirror, convert = _mirror(cls, elide)
    return msgspec.json.Decoder(mirror), convert


@cache
def _mirror(annotation: Any, elide: Elided) -> tuple[Any, Convert]:
    """The msgspec type that decodes a JSON value of ``annotation``, and how to turn the
    decoded value into the field's value."""
    origin, args = get_origin(annotation), get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Fact):
        return annotation, _same
    if isinstance(annotation, type) and issubclass(annotation, Record):
        return _model(annotation, elide)
    if annotation in (str, int, bool, float) or origin is Literal:
        return annotation, _same
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        item, convert = _mirror(args[0], elide)
        if convert is _same:
            return tuple[item, ...], _same  # type: ignore[valid-type]
        return tuple[item, ...], lambda values: tuple([convert(v) for v in values])  # type: ignore[valid-type]
    if origin in (Union, types.UnionType):
        present = [a for a in args if a is not type(None)]
        if len(present) == 1 and len(args) == 2:
            inner, convert = _mirror(present[0], elide)
            if convert is _same:
                return inner | None, _same
            return inner | None, lambda v: None if v is None else convert(v)
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    return msgspec.Raw, lambda raw: adapter.validate_json(bytes(raw))


def _model(cls: type[Record], elide: Elided) -> tuple[Any, Convert]:
    fields: list[tuple[str, Any]] = []
    converts: list[tuple[str, Convert]] = []
    for name, info in fields_of(cls).items():
        if (cls, name) in elide:
            kind: Any = tuple[msgspec.Raw, ...]
            convert: Convert = _placeholders
        else:
            annotation: Any = Any if info.annotation is None else info.annotation
            kind, convert = _mirror(annotation, elide)
        fields.append((name, kind))
        converts.append((name, convert))
    struct = msgspec.defstruct(f"{cls.__name__}Mirror", fields, forbid_unknown_fields=True)

    def build(value: Any) -> Record:
        return trusted(cls, {name: convert(getattr(value, name)) for name, convert in converts})

    return struct, build


@cache
def schema_fingerprint(cls: type[BaseModel]) -> str:
    """A digest of the contract's JSON schema: any change of a field, a type or a nested
    record changes it."""
    schema = json.dumps(cls.model_json_schema(), sort_keys=True).encode()
    return hashlib.sha256(schema).hexdigest()[:16]
