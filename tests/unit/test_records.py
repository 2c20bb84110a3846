"""`trusted` records are the validated ones, and every record an extractor or the
resolver builds that way would pass validation, strictly."""

from __future__ import annotations

import pickle

import pytest

from processors.indexer import RepoIndex
from processors.parsing import parse_file
from stores.deltas import GraphDelta, assemble, decode_delta, encode_delta, encode_parts
from stores.records import (
    EdgeRecord,
    NodeRecord,
    Record,
    ReferenceRecord,
    SymbolRecord,
    share_fields_set,
    trusted,
)
from tests.factories import Stamp
from tests.unit.test_graph_patch import FILES, scanned

SAMPLES: list[tuple[type[Record], dict[str, object]]] = [
    (
        ReferenceRecord,
        {"name": "f", "qualifier": "a.b", "kind": "call", "line": 3, "column": 4, "scope": "C.m"},
    ),
    (
        SymbolRecord,
        {
            "name": "C",
            "qualname": "C",
            "kind": "CLASS",
            "line_start": 1,
            "line_end": 9,
            "signature": "class C(Base)",
            "parent": None,
            "doc": "A class.",
            "bases": ("Base",),
            "implements": (),
            "exported": True,
            "value_type": None,
        },
    ),
    (
        EdgeRecord,
        {
            "src": "sym:a.py:f",
            "dst": "sym:b.py:g",
            "kind": "CALLS",
            "weight": 2.0,
            "confidence": "import",
        },
    ),
]


@pytest.mark.parametrize(("cls", "values"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_a_trusted_record_is_the_validated_one(
    cls: type[Record], values: dict[str, object]
) -> None:
    built, validated = trusted(cls, dict(values)), cls(**values)
    assert built == validated and validated == built
    assert hash(built) == hash(validated)
    assert repr(built) == repr(validated)
    assert built.model_dump() == validated.model_dump()
    assert built.model_dump_json() == validated.model_dump_json()
    assert built.model_fields_set == validated.model_fields_set
    assert pickle.loads(pickle.dumps(built)) == validated
    first = next(iter(values))
    copied = built.model_copy(update={first: values[first]})
    assert copied == validated and copied.model_fields_set == validated.model_fields_set
    with pytest.raises(Exception, match="frozen"):
        built.name = "other"  # type: ignore[misc]


def test_trusted_records_share_one_fields_set_that_nothing_changes() -> None:
    cls, values = SAMPLES[0]
    one, two = trusted(cls, dict(values)), trusted(cls, {**values, "line": 9})
    assert one.model_fields_set is two.model_fields_set
    before = set(one.model_fields_set)
    copied = one.model_copy(update={"line": 5})
    assert copied.line == 5 and copied.model_fields_set == before
    assert copied.model_fields_set is not one.model_fields_set
    with pytest.raises(Exception, match="frozen"):
        one.line = 7  # type: ignore[misc]
    with pytest.raises(Exception, match="frozen"):
        one.extra = 1  # type: ignore[attr-defined]
    assert one.model_fields_set == two.model_fields_set == before
    assert cls.model_config.get("frozen") and cls.model_config.get("extra") == "forbid"


def test_a_trusted_record_with_another_value_differs() -> None:
    cls, values = SAMPLES[0]
    assert trusted(cls, {**values, "line": 4}) != cls(**values)


SOURCES = {
    "m.py": b'"""Mod."""\nimport os\nfrom a import b as c\n\n\nclass C(Base, metaclass=M):\n'
    b'    """Doc."""\n\n    def m(self, x: int) -> list[str]:\n        return c(os.sep, x)\n\n\n'
    b"X = C()\n",
    "m.js": b"import { a } from './a';\nexport class C extends B { m() { return a(1); } }\n"
    b"function f() { new C().m(); }\n",
    "m.ts": b"interface I { x: number }\nexport class C extends B implements I, J {\n"
    b"  m(): I { return g(this.x); }\n}\ntype T = Map<string, I>;\n",
    "m.go": b'package m\n\nimport "fmt"\n\ntype S struct { Base }\ntype I interface { R }\n'
    b"func (s *S) M() { fmt.Println(s) }\nfunc F() I { return nil }\n",
    "M.java": b"package p;\nimport q.R;\n/** Doc. */\npublic class M extends B implements I, J {\n"
    b"  R r;\n  void m() { r.go(); super.m(); }\n}\n",
    "m.rs": b"use crate::a::B;\n/// Doc.\npub struct S { b: B }\npub trait T: U + V {}\n"
    b"impl T for S {}\nfn f() -> S { B::new().into() }\n",
}


@pytest.mark.parametrize("path", sorted(SOURCES))
def test_every_record_an_extractor_builds_passes_strict_validation(path: str) -> None:
    parsed = parse_file(path, SOURCES[path])
    assert parsed.problems == () and parsed.symbols and parsed.references
    for record in (*parsed.symbols, *parsed.references):
        cls = type(record)
        assert list(record.__dict__) == list(cls.model_fields), record
        assert cls.model_validate(record.__dict__, strict=True) == record


def test_every_node_and_edge_the_graph_builds_passes_strict_validation() -> None:
    index, _ = scanned(FILES)
    edges = list(index.state.edges.values())
    assert {e.kind for e in edges} >= {
        *("IMPORTS", "CALLS", "EXTENDS", "TESTS", "USES"),
        *("CONTAINS", "DEFINED_BY", "SIBLING"),
    }
    for edge in edges:
        assert list(edge.__dict__) == list(EdgeRecord.model_fields), edge
        assert EdgeRecord.model_validate(edge.__dict__, strict=True) == edge
        assert type(edge.weight) is float, edge  # strict validation takes an int too
    nodes = list(index.state.nodes.values())
    assert {n.kind for n in nodes} >= {"FILE", "CLASS", "FUNCTION", "FOLDER"}
    for node in nodes:
        assert list(node.__dict__) == list(NodeRecord.model_fields), node
        assert NodeRecord.model_validate(node.__dict__, strict=True) == node


def test_decoded_deltas_share_one_fields_set_per_class_and_answer_as_before() -> None:
    """A replica's records: decoded from the topic, whole or from a record cut into
    pieces, they share their class's set (354 of 762 MB folded for sympy) and dump,
    compare and copy as pydantic's own decoding gives them."""
    index, stamp = RepoIndex("r"), Stamp(repo="r", producer="p")
    stamp.claimed(index)
    files = [
        record
        for path, text in sorted(FILES.items())
        for record in index.handle(stamp.changed(path, text, origin="scan"), now=0.0).files_upserted
    ]
    barrier = index.handle(stamp.scan_completed(), now=0.0)
    delta = barrier.model_copy(update={"files_upserted": tuple(files)})
    assert len(delta.files_upserted) >= 2 and len(delta.edges_upserted) >= 2
    raws = [encode_delta(delta), *encode_parts(delta, limit=2_000)]
    whole = decode_delta(raws[0])
    joined = assemble(decode_delta(raw) for raw in raws[1:])
    assert joined == [whole] and whole == delta
    plain = GraphDelta.model_validate_json(raws[0])
    for got in (whole, joined[0]):
        file, other = [f for f in got.files_upserted if f.symbols][:2]
        assert file.model_fields_set is other.model_fields_set
        assert file.symbols[0].model_fields_set is other.symbols[0].model_fields_set
        assert got.edges_upserted[0].model_fields_set is got.edges_upserted[1].model_fields_set
        assert got.model_dump(exclude_unset=True) == plain.model_dump(exclude_unset=True)
        assert got.model_dump_json() == plain.model_dump_json()
    copied = whole.edges_upserted[0].model_copy(update={"weight": 7.0})
    assert copied.model_fields_set is not whole.edges_upserted[0].model_fields_set


def test_a_record_decoded_without_every_field_keeps_its_own_set() -> None:
    partial = EdgeRecord.model_validate_json('{"src": "a", "dst": "b", "kind": "CALLS"}')
    share_fields_set(partial)
    assert partial.model_fields_set == {"src", "dst", "kind"}
