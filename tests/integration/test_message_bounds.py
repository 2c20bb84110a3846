"""Bounded messages on a real broker (issue 15): a generated file just under the content
cap is indexed in a few graph-delta messages of at most 1 MB each, and a second
repository's edit shows while it is indexed and after.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from stores.delta_log import read_values
from stores.deltas import DELTA_PART_BYTES, SPLIT_ABOVE, assemble, decode_delta, encode_delta
from tests.generated_code import generated_module
from tests.gitrepo import GitRepo
from tests.integration.stack import Stack, eventually
from tests.integration.test_streaming import fresh_repo

pytestmark = pytest.mark.integration

BIG = "gen/messages_pb2.py"


async def test_a_generated_file_under_the_cap_costs_a_few_bounded_messages(
    stack: Stack, tmp_path: Path
) -> None:
    big = GitRepo.create(tmp_path / "big", {BIG: generated_module(), "gen/__init__.py": ""})
    small = GitRepo.create(tmp_path / "small", {"app/a.py": "def a():\n    return 1\n"})
    await stack.start_sources([big.root, small.root])
    await fresh_repo(stack, commit=big.head(), timeout=180)
    listing = await stack.get("/repositories")
    assert len(listing["items"]) == 2
    # The other repository's edit shows.
    (small.root / "app" / "a.py").write_text("def a():\n    return 1\n\ndef b():\n    return 2\n")

    async def edited() -> bool:
        items = (await stack.get("/repositories"))["items"]
        (mine,) = [r for r in items if r["repo"].startswith("small")]
        return mine["symbols"] == 2 and mine["freshness"]["status"] == "fresh"

    await eventually(edited, 60, "the small repository's edit to show")
    values = [
        value
        for p in range(stack.settings.partitions)
        for value in await read_values(
            stack.cluster.bootstrap,
            stack.settings.topics.graph_deltas,
            p,
            stack.cluster.end_offsets,
        )
    ]
    assert max(map(len, values)) <= DELTA_PART_BYTES
    deltas = [decode_delta(v) for v in values]
    groups = {
        d.part.group
        for d in deltas
        if d.part is not None and (any(f.path == BIG for f in d.files_upserted) or d.part.pieces)
    }
    of_big = [
        (v, d)
        for v, d in zip(values, deltas, strict=True)
        if (d.part is not None and d.part.group in groups)
        or (d.part is None and any(f.path == BIG for f in d.files_upserted))
    ]
    (whole,) = [d for d in assemble(d for _, d in of_big) if d.files_upserted]
    n = len(encode_delta(whole))
    # Within encode_parts' bound for code (q < n / 10), and no longer 270,000 messages.
    assert 2 <= len(of_big) <= math.ceil(1.1 * n / (DELTA_PART_BYTES - SPLIT_ABOVE)) + 1
    assert sum(len(v) for v, _ in of_big) < 1.2 * n
