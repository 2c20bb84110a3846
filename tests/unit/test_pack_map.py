"""A question's pack map: the files ranked next, their lines to read, within its share."""

from __future__ import annotations

import pytest

from query.search.adjacency import Adjacency
from query.search.context_pack import build_pack, render
from query.search.pack_map import MAP_FILES, MAP_SHARE, Lead, Span, lead_line, leads_of, map_header
from tests.unit.test_retrieval_context_pack import indexed, synthetic
from tests.unit.test_retrieval_expansion import FILES, REGISTER


def test_leads_keep_the_file_order_and_each_files_first_ranked_functions() -> None:
    functions = [
        ("a.py", "f", 10, 20),
        ("b.py", "g", 1, 5),
        ("a.py", "h", 30, 31),
        ("a.py", "i", 40, 44),
        ("a.py", "j", 50, 51),  # a fourth of a.py: past SPANS_PER_FILE
    ]
    leads = leads_of(["b.py", "a.py", "c.md", "d.txt", "a.py"], functions, {"c.md": Span(3, 42)})
    assert leads == [
        Lead("b.py", 1, (Span(1, 5, "g"),)),
        Lead("a.py", 2, (Span(10, 20, "f"), Span(30, 31, "h"), Span(40, 44, "i"))),
        Lead("c.md", 3, (Span(3, 42),)),  # no function ranked: the best chunk's lines
        Lead("d.txt", 4, ()),
    ]
    assert [lead_line(lead) for lead in leads] == [
        "b.py · L1-5 g",
        "a.py · L10-20 f · L30-31 h · L40-44 i",
        "c.md · L3-42",
        "d.txt",
    ]
    # past the first `detailed` files, a file shows its best function only
    assert leads_of(["b.py", "a.py"], functions, {}, detailed=1) == [
        Lead("b.py", 1, (Span(1, 5, "g"),)),
        Lead("a.py", 2, (Span(10, 20, "f"),)),
    ]


LEADS = [
    Lead("app/service.py", 1, (Span(3, 6, "register"),)),  # the target's file
    Lead("app/models.py", 2, (Span(5, 6, "make_user"),)),  # a group shows it: not again
    Lead("app/cli.py", 3, (Span(8, 20, "main"), Span(1, 6, "Options"))),
    Lead("README.md", 4, (Span(1, 4),)),
]


def test_the_map_lists_the_ranked_files_no_group_shows_after_the_groups(small) -> None:
    state, chunks = small
    plain = build_pack(state, chunks, [(REGISTER, 0.9)])
    pack = build_pack(state, chunks, [(REGISTER, 0.9)], leads=LEADS)
    assert [lead.path for lead in pack.map] == ["app/cli.py", "README.md"]
    assert pack.map_total == 2
    assert render(pack) == render(plain) + MAP_TEXT  # nothing else moved: room for all
    assert pack.files == plain.files  # the groups are what they were
    assert pack.reasoning[-1] == "map: 2 of 2 files ranked next, with their ranked functions"
    assert pack.tokens == -(-len(render(pack)) // 4)


MAP_TEXT = """

## map: files ranked next for the question · read these lines (2 of 2)
app/cli.py · L8-20 main · L1-6 Options
README.md · L1-4"""


@pytest.fixture(scope="module")
def small():
    return indexed(FILES)


@pytest.fixture(scope="module")
def large():
    return indexed(synthetic())


def many_leads(count: int) -> list[Lead]:
    return [
        Lead(f"pkg/m{i:02}.py", i + 1, (Span(1, 9, f"f{i:02}_0"), Span(10, 30, f"f{i:02}_1")))
        for i in range(count)
    ]


@pytest.mark.parametrize("budget", [20, 50, 200, 1000, 8000])
def test_a_pack_with_a_map_never_passes_its_budget(large, budget: int) -> None:
    state, chunks = large
    adj = Adjacency.of(state)
    seeds = [("pkg/m03.py#f03_0", 0.8), ("sym:pkg/m11.py:f11_2", 0.6), ("file:pkg/m20.py", 0.5)]
    pack = build_pack(state, chunks, seeds, budget=budget, adjacency=adj, leads=many_leads(30))
    text = render(pack)
    assert len(text) / 4 <= budget and pack.tokens <= budget
    mapped = sum(len(lead_line(lead)) + 1 for lead in pack.map)
    assert mapped <= budget * 4 // MAP_SHARE
    assert not {lead.path for lead in pack.map} & {r.path for r in pack.files}


def test_the_maps_share_is_set_aside_before_the_targets_fill_the_budget(large) -> None:
    state, chunks = large
    seeds = [("file:pkg/m20.py", 1.0), ("file:pkg/m03.py", 0.9)]  # every chunk a target
    without = build_pack(state, chunks, seeds, budget=400)
    pack = build_pack(state, chunks, seeds, budget=400, leads=many_leads(30))
    assert without.tokens > 400 - 400 // MAP_SHARE  # the targets alone would fill it
    assert [lead.path for lead in pack.map] == ["pkg/m00.py", "pkg/m01.py", "pkg/m02.py"]
    assert pack.map_total == 28  # the 30, less the two targets' files
    assert map_header(3, 28) in render(pack) and pack.tokens <= 400
    capped = build_pack(state, chunks, seeds, budget=400, leads=many_leads(MAP_FILES + 9))
    assert capped.map_total == MAP_FILES
    assert len(pack.targets) <= len(without.targets)
