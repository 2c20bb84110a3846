"""Context packs: what is in one, how it reads, and that it never passes its budget."""

from __future__ import annotations

import random
import sysconfig
from pathlib import Path

import pytest

from processors.indexer import RepoIndex
from query.search.adjacency import Adjacency
from query.search.context_pack import (
    PackLimits,
    ReadRange,
    build_pack,
    file_context,
    render,
    symbol_context,
    symbol_seeds,
)
from stores.records import ChunkRecord
from stores.repo_state import RepoState
from tests.factories import Stamp
from tests.unit.test_retrieval_expansion import FILES, REGISTER

Chunks = dict[str, tuple[ChunkRecord, ...]]


def indexed(files: dict[str, str]) -> tuple[RepoState, Chunks]:
    """The state after a scan of the files, and one chunk per symbol, as the chunker cuts
    functions (a class's chunk here simply spans its lines)."""
    index, stamp = RepoIndex("r"), Stamp(repo="r")
    stamp.claimed(index)
    for path, text in files.items():
        index.handle(stamp.changed(path, text, origin="scan"), 1.0)
    index.handle(stamp.scan_completed("c1"), 2.0)
    chunks: Chunks = {}
    for path, record in index.state.files.items():
        lines = files[path].splitlines()
        chunks[path] = tuple(
            ChunkRecord(
                id=f"{path}#{s.qualname}",
                path=path,
                kind=s.kind,
                qualname=s.qualname,
                line_start=s.line_start,
                line_end=s.line_end,
                signature=s.signature,
                doc=s.doc,
                text="\n".join(lines[s.line_start - 1 : s.line_end]),
                content_hash=f"h{s.qualname}",
            )
            for s in record.symbols
        )
    return index.state, chunks


def synthetic(modules: int = 30, seed: int = 3) -> dict[str, str]:
    """Modules of three functions each calling into three other modules, and tests."""
    rng = random.Random(seed)
    files = {}
    for i in range(modules):
        deps = sorted(j for j in rng.sample(range(modules), 4) if j != i)[:3]
        lines = [f"from pkg.m{j:02} import f{j:02}_0, f{j:02}_1" for j in deps]
        for k in range(3):
            lines += [f"def f{i:02}_{k}(x):", f'    """Step {k} of module {i}."""']
            lines += [f"    f{j:02}_{rng.randrange(2)}(x)" for j in deps]
            lines += ["    x = x + 1"] * rng.randrange(1, 30)
            lines.append("    return x")
        files[f"pkg/m{i:02}.py"] = "\n".join(lines) + "\n"
    for i in range(0, modules, 3):
        files[f"tests/test_m{i:02}.py"] = (
            f"from pkg.m{i:02} import f{i:02}_0\ndef test_f():\n    assert f{i:02}_0(1)\n"
        )
    return files


@pytest.fixture(scope="module")
def small() -> tuple[RepoState, Chunks]:
    return indexed(FILES)


@pytest.fixture(scope="module")
def large() -> tuple[RepoState, Chunks]:
    return indexed(synthetic())


def ids(listing) -> list[str]:
    return [item.node for item in listing.items]


def test_pack_of_a_function_holds_its_callers_callees_tests_and_files(small) -> None:
    state, chunks = small
    pack = build_pack(state, chunks, [(REGISTER, 0.9)])
    assert [(t.key, t.text is not None) for t in pack.targets] == [
        ("app/service.py#register", True)
    ]
    assert ids(pack.callers) == [
        "sym:app/api.py:handle",
        "sym:tests/test_service.py:test_register",
        "sym:app/service.py:helper",
    ]
    assert ids(pack.callees) == ["sym:app/models.py:make_user", "sym:app/models.py:User.save"]
    assert ids(pack.tests) == ["file:tests/test_service.py"]
    assert ids(pack.imports) == ["file:app/models.py"]
    assert ids(pack.imported_by) == ["file:app/api.py", "file:tests/test_service.py"]
    assert ids(pack.symbols) == ["sym:app/service.py:helper"]
    assert ids(pack.siblings) == ["sym:app/service.py:helper"]
    assert ids(pack.related) == ["sym:app/models.py:User"]
    assert pack.callers.total == 3 and pack.related.total == 1
    assert pack.chain == ("file:app/api.py", "file:app/service.py")  # the import chain
    assert pack.confidence == 0.87  # 0.9 x (0.6 + 0.4 x mean(1, 1, 1, 1, 0.3, 1, 1, 1, 1))
    # Files in the order their first item was admitted: target, then by score (then id).
    assert pack.files == (
        ReadRange("app/service.py", 3, 9, 2),
        ReadRange("app/api.py", 3, 4, 0),
        ReadRange("app/models.py", 5, 6, 1),
        ReadRange("tests/test_service.py", 3, 4, 0),
    )


def test_related_items_score_by_distance_edge_type_and_similarity(small) -> None:
    state, chunks = small
    pack = build_pack(state, chunks, [(REGISTER, 0.9)], similarity={"file:app/models.py": 1.0})
    score = {i.node: i.score for listing in (pack.callees, pack.tests, pack.imports, pack.related)
             for i in listing.items}  # fmt: skip
    assert score == {
        "sym:app/models.py:make_user": 0.5,  # 0.4 x 0.5 + 0.3 x 1 (CALLS)
        "sym:app/models.py:User.save": 0.35,  # a guessed call counts half its type
        "file:tests/test_service.py": 0.47,  # TESTS 0.9
        "file:app/models.py": 0.68,  # IMPORTS 0.6, similarity 1
        "sym:app/models.py:User": 0.4,  # depth 2: 0.4 x 0.25 + 0.3 x 1
    }


def test_render_groups_by_file_with_target_marks_and_true_counts(small) -> None:
    state, chunks = small
    pack = build_pack(state, chunks, [("app/service.py#register", 0.9)], entry="app/api.py#handle")
    assert render(pack) == EXPECTED
    assert pack.tokens == -(-len(EXPECTED) // 4)
    assert pack.reasoning[0] == "app/service.py#register: target, seed score 0.90"
    assert pack.reasoning[-1] == "chain: shortest path from app/api.py:handle, 1 hops"


EXPECTED = """\
# Context: app/service.py#register · confidence 0.87
shown: callers 3/3 · callees 2/2 · tests 1/1 · imports 1/1 · imported_by 2/2 · symbols 1/1 · \
siblings 1/1 · related 1/1
chain: app/api.py:handle -> app/service.py:register

## app/service.py · read first L3-9 · inbound 2
[TARGET] app/service.py:L3-6 register (FUNCTION)
def register():
    u = make_user()
    u.save()
    return u
app/service.py:L8-9 helper (function) — calls register (CALLS, same_file); in app/service.py; \
sibling of register
  def helper()

## app/api.py · read first L3-4 · inbound 0
app/api.py:L1-4 (file) — imports app/service.py (IMPORTS, import)
app/api.py:L3-4 handle (function) — calls register (CALLS, import)
  def handle()

## app/models.py · read first L5-6 · inbound 1
app/models.py:L1-6 (file) — imported by app/service.py (IMPORTS, import)
app/models.py:L1-3 User (class) — reached from make_user (CALLS, depth 2)
  class User
app/models.py:L2-3 User.save (method) — called by register (CALLS, name_match)
  def save(self)
app/models.py:L5-6 make_user (function) — called by register (CALLS, import)
  def make_user()

## tests/test_service.py · read first L3-4 · inbound 0
tests/test_service.py:L1-4 (file) — tests app/service.py (TESTS x2, structural); \
imports app/service.py (IMPORTS, import)
tests/test_service.py:L3-4 test_register (function) — calls register (CALLS, import)
  def test_register()"""


@pytest.mark.parametrize("budget", [50, 200, 1000, 8000])
def test_the_text_never_passes_the_budget(large, budget: int) -> None:
    state, chunks = large
    adj = Adjacency.of(state)
    for seeds in (
        [("sym:pkg/m07.py:f07_1", 1.0)],
        [("pkg/m03.py#f03_0", 0.8), ("sym:pkg/m11.py:f11_2", 0.6), ("file:pkg/m20.py", 0.5)],
    ):
        pack = build_pack(state, chunks, seeds, budget=budget, adjacency=adj)
        text = render(pack)
        assert len(text) / 4 <= budget and pack.tokens <= budget
        assert text.count("[TARGET]") == len(pack.targets)
    for pack in (
        file_context(state, chunks, "pkg/m05.py", budget=budget, adjacency=adj),
        symbol_context(state, chunks, "f09_0", budget=budget, adjacency=adj),
    ):
        assert len(render(pack)) / 4 <= budget


def test_a_larger_budget_shows_more_and_keeps_targets_in_full(large) -> None:
    state, chunks = large
    adj = Adjacency.of(state)
    shown = []
    for budget in (50, 200, 1000, 8000):
        pack = build_pack(
            state, chunks, [("sym:pkg/m07.py:f07_1", 1.0)], budget=budget, adjacency=adj
        )
        shown.append(sum(len(getattr(pack, n).items) for n in ("callers", "callees", "related")))
    assert shown == sorted(shown) and shown[0] == 0 and shown[-1] > shown[1]
    full = build_pack(state, chunks, [("sym:pkg/m07.py:f07_1", 1.0)], adjacency=adj)
    assert full.targets[0].text is not None and full.framed
    assert "[TARGET] pkg/m07.py:L" in render(full)


def test_a_target_too_long_for_the_budget_shows_its_signature(large) -> None:
    state, chunks = large
    pack = build_pack(state, chunks, [("sym:pkg/m07.py:f07_1", 1.0)], budget=35)
    (target,) = pack.targets
    assert target.text is None and target.signature == "def f07_1(x)"
    assert "signature only" in render(pack) and not pack.framed


def test_lists_keep_their_true_totals_beside_the_capped_items(small) -> None:
    state, chunks = small
    pack = build_pack(state, chunks, [(REGISTER, 1.0)], limits=PackLimits(per_list=1))
    assert (ids(pack.callers), pack.callers.total) == (["sym:app/api.py:handle"], 3)
    assert (len(pack.imported_by.items), pack.imported_by.total) == (1, 2)
    assert "callers 1/3" in render(pack)


def test_packs_are_deterministic(large) -> None:
    state, chunks = large
    seeds = [("pkg/m03.py#f03_0", 0.8), ("sym:pkg/m11.py:f11_2", 0.6), ("file:pkg/m20.py", 0.5)]
    first = build_pack(state, chunks, seeds, budget=1000)
    assert build_pack(state, chunks, list(reversed(seeds)), budget=1000) == first
    assert render(build_pack(state, chunks, seeds, budget=1000)) == render(first)


def test_seeds_as_chunk_ids_module_chunks_and_unknown_ids(small) -> None:
    state, chunks = small
    module = ChunkRecord(
        id="app/api.py#module:1", path="app/api.py", kind="MODULE", line_start=1, line_end=1,
        text="from app.service import register", content_hash="m",
    )  # fmt: skip
    with_module = {**chunks, "app/api.py": (module, *chunks["app/api.py"])}
    pack = build_pack(
        state, with_module, [("app/api.py#module:1", 0.7), ("nowhere.py#x", 0.9), ("x", 1.0)]
    )
    assert [(t.node, t.key, t.name) for t in pack.targets] == [
        ("file:app/api.py", "app/api.py#module:1", "lines 1-1")
    ]
    assert pack.reasoning[-1] == "unknown seeds: nowhere.py#x, x"


def test_a_file_seed_targets_all_its_chunks(small) -> None:
    state, chunks = small
    pack = file_context(state, chunks, "app/models.py")
    assert [t.key for t in pack.targets] == [
        "app/models.py#User",
        "app/models.py#User.save",
        "app/models.py#make_user",
    ]
    assert ids(pack.imported_by) == ["file:app/service.py"]
    assert ids(pack.callers) == ["sym:app/service.py:register"]
    assert pack.title == "app/models.py"


def test_symbol_context_prefers_exact_qualnames(small) -> None:
    state, chunks = small
    assert [t.node for t in symbol_context(state, chunks, "User.save").targets] == [
        "sym:app/models.py:User.save"
    ]
    assert symbol_context(state, chunks, "nothing").targets == ()
    assert "no related items" in render(symbol_context(state, chunks, "nothing"))


def test_symbol_seeds_put_an_exact_qualified_match_first_and_path_narrows() -> None:
    nodes = [
        "sym:email/headerregistry.py:AddressHeader.parse",
        "sym:email/headerregistry.py:ContentTransferEncodingHeader.parse",
        "sym:email/parser.py:BytesParser.parse",
        "sym:email/parser.py:Parser.parse",
        "sym:email/x/parser.py:Outer.BytesParser.parse",
        "file:email/parse",
    ]
    assert symbol_seeds(nodes, "BytesParser.parse") == [
        ("sym:email/parser.py:BytesParser.parse", 1.0),
        ("sym:email/x/parser.py:Outer.BytesParser.parse", 0.9),
    ]
    assert symbol_seeds(nodes, "BytesParser.parse", path="email/parser.py") == [
        ("sym:email/parser.py:BytesParser.parse", 1.0)
    ]
    assert symbol_seeds(nodes, "parse", path="/email/x/") == [
        ("sym:email/x/parser.py:Outer.BytesParser.parse", 0.9)
    ]
    # a qualified name nothing matches exactly falls back on its simple name
    assert symbol_seeds(nodes, "Nope.parse")[:2] == [
        ("sym:email/headerregistry.py:AddressHeader.parse", 0.5),
        ("sym:email/headerregistry.py:ContentTransferEncodingHeader.parse", 0.5),
    ]


def test_a_symbol_pack_starts_from_the_exact_match_on_the_stdlib_email_package() -> None:
    root = Path(sysconfig.get_paths()["stdlib"]) / "email"
    if not (root / "parser.py").is_file():
        pytest.skip("no stdlib email package here")
    files = {f"email/{p.relative_to(root)}": p.read_text() for p in sorted(root.rglob("*.py"))}
    state, chunks = indexed(files)
    pack = symbol_context(state, chunks, "BytesParser.parse")
    assert [t.node for t in pack.targets] == ["sym:email/parser.py:BytesParser.parse"]
    assert pack.chain == ("file:email/__init__.py", "file:email/parser.py")
    # and no file's purpose is its author line (graph-search purpose 'barry': 16 before)
    assert [p for p, r in state.files.items() if "barry" in (r.purpose or "").lower()] == []


def test_a_test_named_after_a_file_is_listed_with_a_lower_confidence() -> None:
    state, chunks = indexed(
        {
            "pkg/__init__.py": "from pkg.encoder import *\n",
            "pkg/encoder.py": "def encode(x):\n    return x\n",
            "tests/test_encoder.py": (
                "import importlib\n\ndef test_encode():\n"
                "    assert importlib.import_module('pkg').encode(1) == 1\n"
            ),
            "tests/test_other.py": "from pkg.encoder import encode\n",
        }
    )
    pack = file_context(state, chunks, "pkg/encoder.py")
    assert [(i.node, i.reason, i.score) for i in pack.tests.items] == [
        (
            "file:tests/test_other.py",
            "tests pkg/encoder.py (TESTS, structural); imports pkg/encoder.py (IMPORTS, import)",
            0.47,
        ),
        ("file:tests/test_encoder.py", "tests pkg/encoder.py (TESTS, test_name)", 0.416),
    ]
    assert "tests/test_encoder.py:L1-4 (file) — tests pkg/encoder.py (TESTS, test_name)" in (
        render(pack)
    )
