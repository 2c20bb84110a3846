"""A file's symbols and imports packed into one flat tuple of their fields (the read
side's, `query.search.packed_facts`): pinned inputs read back as the records, field for
field and of the same objects; the columns graph search reads; equality and hash with
the tuples; pickling; what is not packed. The read model folded over random histories
against tuple records (symbols and imports among them) is
tests/unit/test_packed_chunks.py's."""

from __future__ import annotations

import pickle

from query.retrieval import lean_record
from query.search.graph_search import graph_search
from query.search.packed_facts import PackedFacts, column, layout, pack
from stores.records import FileRecord, ImportRecord, Keyword, Section, SymbolRecord, fields_of

SYMBOLS = (
    SymbolRecord(
        name="Auth",
        qualname="Auth",
        kind="CLASS",
        line_start=3,
        line_end=40,
        signature="class Auth(Base):",
        doc="Signs requests.",
        bases=("Base",),
    ),
    SymbolRecord(
        name="sign",
        qualname="Auth.sign",
        kind="METHOD",
        line_start=70_000,
        line_end=70_001,
        signature="def sign(self, key):",
        parent="Auth",
        exported=False,
        value_type=None,
    ),
    SymbolRecord(
        name="router",
        qualname="router",
        kind="VARIABLE",
        line_start=41,
        line_end=41,
        signature="router = Router()",
        value_type="Router",
        implements=("I",),
    ),
)
KEYWORDS = (Keyword(term="auth", weight=0.1 + 0.2), Keyword(term="sign", weight=2.0))
IMPORTS = (
    ImportRecord(module="os.path", line=1, alias="os"),
    ImportRecord(module="pkg", names=("a", "b"), local_names=("a", "c"), level=1, line=2),
)


def same(a: object, b: object) -> bool:
    """Equal records whose every field is the very object the other holds."""
    return type(a) is type(b) and all(
        getattr(a, f) is getattr(b, f)
        for f in fields_of(type(a))  # type: ignore[arg-type]
    )


def test_packed_records_read_back_as_the_records() -> None:
    for records in (SYMBOLS, IMPORTS, KEYWORDS):
        packed = pack(records)
        assert isinstance(packed, PackedFacts) and len(packed) == len(records)
        assert all(same(a, b) for a, b in zip(packed, records, strict=True))
        assert all(same(packed[i], records[i]) for i in range(-len(records), len(records)))
        assert packed[1:] == records[1:] and isinstance(packed[1:], tuple)
        assert packed[::-1] == records[::-1] and packed[5:] == ()
        assert packed == records and records == packed and packed != records[:1]
        assert hash(packed) == hash(records) and list(packed) == list(records)
        assert pickle.loads(pickle.dumps(packed)) == packed and pack(packed) is packed
        for name in fields_of(type(records[0])):
            assert list(column(packed, name)) == [getattr(r, name) for r in records]
            assert list(column(records, name)) == [getattr(r, name) for r in records]
    assert pack(()) == () and pack(SYMBOLS) != pack(SYMBOLS[:2])
    assert pack(SYMBOLS) != pack(IMPORTS)
    try:
        pack(SYMBOLS)[3]
    except IndexError:
        pass
    else:
        raise AssertionError("read past the end")


def test_what_is_not_packed_stays_as_it_was() -> None:
    sections = (Section(line_start=1, line_end=2, label="imports"),)  # not a packed class
    mixed = (SYMBOLS[0], IMPORTS[0])
    assert pack(sections) is sections and pack(mixed) is mixed  # type: ignore[arg-type]


def test_graph_search_reads_the_matches_of_packed_records() -> None:
    record = FileRecord(
        path="a.py",
        language="python",
        size=1,
        lines=1,
        content_hash="h",
        skipped=None,
        parse_errors=0,
        symbols=SYMBOLS,
        imports=IMPORTS,
        keywords=KEYWORDS,
        origin="scan",
        commit=None,
        working_tree=True,
        producer="p",
    )
    lean = lean_record(record)
    assert all(
        isinstance(getattr(lean, f), PackedFacts) for f in ("symbols", "imports", "keywords")
    )
    assert lean == record
    channels = ("functions", "imports", "keywords")
    functions, imports, keywords = graph_search([lean], "sign pkg", channels, importance={})
    assert [h.text for h in keywords.hits] == ["sign"]
    assert [(h.text, h.line_start, h.line_end) for h in functions.hits] == [
        ("Auth.sign", 70_000, 70_001)
    ]
    assert [(h.text, h.line_start) for h in imports.hits] == [("pkg: a, b", 2)]


def test_a_field_every_record_holds_one_constant_in_is_kept_once() -> None:
    plain = tuple(s.model_copy(update={"implements": (), "value_type": None}) for s in SYMBOLS)
    packed, again = pack(plain), pack(plain[1:])
    assert isinstance(packed, PackedFacts) and isinstance(again, PackedFacts)
    _, kept, fixed = packed._layout
    assert dict(fixed) == {"implements": (), "value_type": None}
    assert len(packed._refs) == len(plain) * len(kept) == len(plain) * 10
    assert packed._layout is layout(SymbolRecord, {"implements": 1, "value_type": 0})
    assert all(same(a, b) for a, b in zip(packed, plain, strict=True))
    assert column(packed, "implements") == ((),) * 3 and column(packed, "name")[2] == "router"
    assert packed == plain and pickle.loads(pickle.dumps(packed)) == plain
    # a constant is one object held by every record: a 0 and a False are told apart
    levels = (IMPORTS[0], IMPORTS[0].model_copy(update={"level": False}))
    assert all(same(a, b) for a, b in zip(pack(levels), levels, strict=True))
