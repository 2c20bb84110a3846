"""`trusted` records are the validated ones, every record an extractor or the resolver
builds that way would pass validation, strictly, and the state's many records are facts:
slotted, frozen, a delta's own."""

from __future__ import annotations

import pickle
import sys
from typing import Annotated

import pytest
from pydantic import TypeAdapter

from processors.indexer import RepoIndex
from processors.parsing import parse_file
from stores.deltas import GraphDelta, assemble, decode_delta, encode_delta, encode_parts
from stores.records import (
    EdgeRecord,
    Fact,
    FileRecord,
    NodeRecord,
    ReferenceRecord,
    SymbolRecord,
    fields_of,
    share_fields_set,
    trusted,
)
from tests.factories import Stamp
from tests.unit.test_graph_patch import FILES, scanned

SAMPLES: list[tuple[type[Fact], dict[str, object]]] = [
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
            "line": 12,
        },
    ),
]


@pytest.mark.parametrize(("cls", "values"), SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_a_trusted_record_is_the_validated_one(cls: type[Fact], values: dict[str, object]) -> None:
    built, validated = trusted(cls, dict(values)), cls(**values)
    assert built == validated and validated == built
    assert hash(built) == hash(validated)
    assert repr(built) == repr(validated)
    assert built.model_dump() == validated.model_dump() == values
    assert built.model_dump_json() == validated.model_dump_json()
    assert cls.model_validate_json(built.model_dump_json()) == validated
    assert built.values() == values and list(fields_of(cls)) == list(values)
    assert pickle.loads(pickle.dumps(built)) == validated
    first = next(iter(values))
    copied = built.model_copy(update={first: values[first]})
    assert copied == validated and copied is not built
    with pytest.raises(Exception, match="cannot assign"):
        setattr(built, first, "other")


def test_a_fact_is_slotted_frozen_and_strict() -> None:
    """A fact holds its fields' slots and nothing else (an edge: 80 bytes, where the
    model kept a ``__dict__`` and a fields-set: 272 with them)."""
    cls, values = SAMPLES[2]
    edge = trusted(cls, dict(values))
    assert not hasattr(edge, "__dict__") and sys.getsizeof(edge) <= 32 + 8 * len(values)
    copied = edge.model_copy(update={"weight": 5.0})
    assert copied.weight == 5.0 and edge.weight == 2.0
    with pytest.raises(Exception, match="cannot assign"):
        edge.weight = 1.0  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):  # no slot (3.11 says it with a TypeError)
        edge.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="Unexpected keyword argument"):
        cls.model_validate({**values, "extra": 1})
    with pytest.raises(ValueError, match="Unexpected keyword argument"):
        cls.model_validate_json('{"src": "a", "dst": "b", "kind": "CALLS", "extra": 1}')
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        ReferenceRecord(name="f", kind="call", line=0, column=0)


def test_a_trusted_record_with_another_value_differs() -> None:
    cls, values = SAMPLES[0]
    assert trusted(cls, {**values, "line": 4}) != cls(**values)


def strictly_valid(fact: Fact) -> bool:
    """Whether every field's value passes its type and constraints, strictly (a list is
    no tuple, a str no Literal's other value); pydantic's strict mode takes only an
    instance for a dataclass, so the fields are validated one by one."""
    for name, info in fields_of(type(fact)).items():
        value = getattr(fact, name)
        kind = Annotated[info.annotation, *info.metadata] if info.metadata else info.annotation
        assert TypeAdapter(kind).validate_python(value, strict=True) == value, name
    return True


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
        assert list(record.values()) == list(fields_of(cls)), record
        assert strictly_valid(record)


def test_every_node_and_edge_the_graph_builds_passes_strict_validation() -> None:
    index, _ = scanned(FILES)
    edges = list(index.state.edges.values())
    assert {e.kind for e in edges} >= {
        *("IMPORTS", "CALLS", "EXTENDS", "TESTS", "USES"),
        *("CONTAINS", "DEFINED_BY", "SIBLING"),
    }
    for edge in edges:
        assert list(edge.values()) == list(fields_of(EdgeRecord)), edge
        assert strictly_valid(edge)
        assert type(edge.weight) is float, edge  # strict validation takes an int too
    nodes = list(index.state.nodes.values())
    assert {n.kind for n in nodes} >= {"FILE", "CLASS", "FUNCTION", "FOLDER"}
    for node in nodes:
        assert list(node.values()) == list(fields_of(NodeRecord)), node
        assert strictly_valid(node)


def test_decoded_deltas_hold_facts_and_file_records_of_one_fields_set() -> None:
    """A replica's records: decoded from the topic, whole or from a record cut into
    pieces, file records share their class's set, what they hold are slotted facts, and
    all dump, compare and copy as pydantic's own decoding gives them."""
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
        facts = (file.symbols[0], *file.chunks, *got.edges_upserted, *got.nodes_upserted)
        assert all(isinstance(f, Fact) and not hasattr(f, "__dict__") for f in facts)
        assert got.model_dump(exclude_unset=True) == plain.model_dump(exclude_unset=True)
        assert got.model_dump_json() == plain.model_dump_json()


def test_a_record_decoded_without_every_field_keeps_its_own_set() -> None:
    given = {
        "path": "a.py",
        "language": "python",
        "size": 1,
        "lines": 1,
        "content_hash": None,
        "skipped": None,
        "parse_errors": 0,
        "origin": "scan",
        "commit": None,
        "working_tree": True,
        "producer": "p",
    }
    partial = FileRecord.model_validate(given)
    share_fields_set(partial)
    assert partial.model_fields_set == set(given)


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "in-parts"])
def test_decoded_edges_hold_their_nodes_own_id_strings(cut: bool) -> None:
    """Decoding gives an edge end its own copy of a long id (pydantic caches strings of
    up to 64 characters only); the decoded delta holds one string per id."""
    path = "/".join(["package"] * 12) + "/module.py"
    nodes = [NodeRecord(id=f"sym:{path}:f{i}", kind="FUNCTION", name=f"f{i}") for i in range(3)]
    edges = [EdgeRecord(src=a.id, dst=b.id, kind="CALLS") for a in nodes for b in nodes if a != b]
    index, stamp = RepoIndex("r"), Stamp(repo="r", producer="p")
    stamp.claimed(index)
    barrier = index.handle(stamp.scan_completed(), now=0.0)
    delta = barrier.model_copy(
        update={"nodes_upserted": tuple(nodes), "edges_upserted": tuple(edges)}
    )
    raws = encode_parts(delta, limit=1_600) if cut else [encode_delta(delta)]
    assert (len(raws) > 1) == cut
    (got,) = assemble(decode_delta(raw) for raw in raws)
    assert got == delta and len(nodes[0].id) > 64
    ids = {node.id: node.id for node in got.nodes_upserted}
    ends = [end for e in got.edges_upserted for end in (e.src, e.dst)]
    assert len(ends) == 12 and all(end is ids[end] for end in ends)
    assert len({id(e.weight) for e in got.edges_upserted}) == 1  # one float for 1.0


def test_decoded_files_hold_one_string_per_repeated_value() -> None:
    """A chunk repeats its file's path and its symbol's qualified name, signature and
    docstring; decoded, each is one string (long ones too: pydantic caches short ones)."""
    path = "/".join(["package"] * 12) + "/module.py"
    doc = "Compute the thing, " * 8
    padding = "".join(f"# line {i}\n" for i in range(300))  # lines past CPython's small ints
    text = (
        padding
        + f'class Widget:\n    def render(self, x):\n        """{doc}"""\n        return x\n'
    )
    index, stamp = RepoIndex("r"), Stamp(repo="r", producer="p")
    stamp.claimed(index)
    delta = index.handle(stamp.changed(path, text, origin="scan"), now=0.0)
    (got,) = decode_delta(encode_delta(delta)).files_upserted
    assert got == delta.files_upserted[0] and len(got.path) > 64
    symbol = next(s for s in got.symbols if s.qualname == "Widget.render")
    chunk = next(c for c in got.chunks if c.qualname == "Widget.render")
    assert symbol.doc is not None and len(symbol.doc) > 64 and chunk.doc == symbol.doc
    assert all(c.path is got.path for c in got.chunks)
    assert chunk.doc is symbol.doc and chunk.signature is symbol.signature
    assert symbol.line_start > 256 and chunk.line_start == symbol.line_start
    assert chunk.line_start is symbol.line_start and chunk.line_end is symbol.line_end
    (again,) = decode_delta(encode_delta(delta)).files_upserted  # as another file would
    assert again.keywords == got.keywords and len(got.keywords) >= 2
    assert all(a.weight is b.weight for a, b in zip(again.keywords, got.keywords, strict=True))
