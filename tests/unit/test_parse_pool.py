"""A scan parsed ahead in a pool of processes builds the graph the one-process scan builds.

Byte for byte: every delta of the scan (each file's, then the barrier's) encoded as the
worker publishes it is the same with the pool as without, over seeded random
repositories (Python and JavaScript files importing and calling one another, duplicates,
syntax errors, binary files, files sent twice, batches cut anywhere) and over the
sources of structlog. The pool is started once for the file (two spawned workers).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from processors.indexer import RepoIndex
from processors.parse_pool import (
    Ahead,
    ParsePool,
    _chunks,
    available_cores,
    pack,
    parse_chunk,
    unpack,
)
from processors.parsing import ParseResult, parse_file
from processors.pipeline import IndexingPipeline, InMemoryDeltaSink, Message
from producers.events import EventBase, encode
from producers.topics import DEFAULT_TOPICS
from stores.delta_log import InMemoryDeltaLog
from stores.deltas import encode_delta
from tests.factories import Stamp

STRUCTLOG = Path(structlog.__file__).parent


@pytest.fixture(scope="module")
def pool() -> Iterator[ParsePool]:
    # Chunks of a few files: many round trips, results taken across chunk edges.
    started = ParsePool(2, min_files=1, chunk_bytes=2_000)
    yield started
    started.close()


def structlog_files() -> dict[str, bytes]:
    return {
        f"structlog/{p.relative_to(STRUCTLOG).as_posix()}": p.read_bytes()
        for p in sorted(STRUCTLOG.rglob("*.py"))
    }


def scan(stamp: Stamp, files: list[tuple[str, str | None]]) -> list[EventBase]:
    """A full scan's events: the claim, one FileChanged per file (None: a binary file,
    skipped), the barrier."""
    events: list[EventBase] = [stamp.claim()]
    for path, text in files:
        if text is None:
            events.append(stamp.skipped(path))
        else:
            events.append(stamp.changed(path, text, origin="scan"))
    events.append(stamp.scan_completed(files=len(files)))
    return events


def build(events: list[EventBase], pool: ParsePool | None, cuts: list[int]) -> list[bytes]:
    """Every delta of the events, encoded, handled in batches cut at ``cuts`` (each
    batch prepared in ``pool`` first, when given)."""
    index = RepoIndex("r")
    encoded: list[bytes] = []
    bounds = [0, *sorted(cuts), len(events)]
    for start, end in itertools.pairwise(bounds):
        batch = events[start:end]
        if pool is not None:
            index.prepare(batch, pool)
        for event in batch:
            delta = index.handle(event, 0.0)
            assert delta is not None
            encoded.append(encode_delta(delta))
    index.unprepare()
    return encoded


# -- generated repositories --------------------------------------------------------


def python_module(rng: random.Random, me: str, modules: list[str], names: list[str]) -> str:
    lines: list[str] = []
    others = [m for m in modules if m != me] or [me]
    for _ in range(rng.randint(0, 3)):
        other = rng.choice(others)
        style = rng.randrange(4)
        if style == 0:
            lines.append(f"import {other}")
        elif style == 1:
            lines.append(f"import {other} as alias{rng.randrange(3)}")
        elif style == 2:
            lines.append(f"from {other} import {rng.choice(names)}")
        else:
            lines.append(f"from {other.rpartition('.')[0] or other} import *")
    for _ in range(rng.randint(1, 5)):
        name = rng.choice(names)
        if rng.random() < 0.4:
            base = rng.choice([*names, "object", "Exception"])
            lines.append(f"class {name.title()}({base.title()}):")
            lines.append(f'    """About {name}."""')
            lines.append(f"    def {rng.choice(names)}(self, x):")
            lines.append(f"        return self.{rng.choice(names)}(x) + {rng.choice(names)}()")
        else:
            lines.append(f"def {name}(a, b=1):")
            lines.append(f"    return {rng.choice(names)}(a) or alias0.{rng.choice(names)}(b)")
        if rng.random() < 0.2:
            lines.append(f"{rng.choice(names)} = {rng.choice(names).title()}()")
    if rng.random() < 0.1:
        lines.append("def broken(:")  # a syntax error: facts still extracted around it
    return "\n".join(lines) + "\n"


def javascript_module(rng: random.Random, me: int, count: int, names: list[str]) -> str:
    lines = [f"import {{ {rng.choice(names)} }} from './m{rng.randrange(count)}.js';"]
    for _ in range(rng.randint(1, 4)):
        name = rng.choice(names)
        lines.append(f"export function {name}(x) {{ return {rng.choice(names)}(x); }}")
    if me % 3 == 0:
        lines.append(f"class K{me} extends K{rng.randrange(count)} {{ run() {{ this.go(); }} }}")
    return "\n".join(lines) + "\n"


def generated_repository(rng: random.Random) -> list[tuple[str, str | None]]:
    names = [f"f{i}" for i in range(rng.randint(3, 12))]
    packages = [f"pkg{i}" for i in range(rng.randint(1, 4))]
    modules = [f"{p}.mod{j}" for p in packages for j in range(rng.randint(1, 6))]
    files: list[tuple[str, str | None]] = [(f"{p}/__init__.py", "") for p in packages]
    files += [(m.replace(".", "/") + ".py", python_module(rng, m, modules, names)) for m in modules]
    count = rng.randint(0, 5)
    files += [(f"web/m{i}.js", javascript_module(rng, i, count, names)) for i in range(count)]
    files += [("tests/test_it.py", python_module(rng, "tests.test_it", modules, names))]
    if rng.random() < 0.5:
        files.append(("data.bin", None))
    if rng.random() < 0.3:
        files.append(("README.md", "# readme\n"))
    rng.shuffle(files)
    if rng.random() < 0.3 and files:  # a file sent twice in one scan: its last bytes hold
        path, text = rng.choice(files)
        files.append((path, (text or "") + "\ndef again():\n    pass\n"))
    return files


@pytest.mark.parametrize("seed", range(12))
def test_a_generated_repository_builds_byte_for_byte_alike_with_the_pool(
    seed: int, pool: ParsePool
) -> None:
    rng = random.Random(20261203 + seed)
    files = generated_repository(rng)
    events = scan(Stamp(repo="r"), files)
    cuts = rng.sample(range(1, len(events)), k=min(rng.randint(0, 3), len(events) - 1))
    alone = build(events, None, [])
    assert build(events, pool, cuts) == alone
    assert len(alone) == len(events)


def test_structlog_builds_byte_for_byte_alike_with_the_pool(pool: ParsePool) -> None:
    files = structlog_files()
    assert len(files) >= 10, "the corpus is too small to say anything"
    events = scan(Stamp(repo="r"), [(p, d.decode()) for p, d in files.items()])
    alone = build(events, None, [])
    pooled = build(events, pool, [len(events) // 3])
    assert pooled == alone
    assert b'"kind":"CALLS"' in alone[-1]  # the barrier resolved references


def test_the_files_a_batch_sends_are_its_scanned_files_with_new_contents(
    pool: ParsePool,
) -> None:
    stamp = Stamp(repo="r")
    index = RepoIndex("r")
    first = scan(stamp, [("a.py", "def a():\n    pass\n"), ("b.bin", None)])
    assert index.prepare(first, pool) == 1  # b.bin has no contents to parse
    for event in first:
        index.handle(event, 0.0)
    # A scan again (a restart): a.py unchanged is not parsed, c.py new is; a watch
    # event is parsed where it is handled.
    again = [
        stamp.changed("a.py", "def a():\n    pass\n", origin="scan"),
        stamp.changed("c.py", "def c():\n    pass\n", origin="scan"),
        stamp.changed("d.py", "def d():\n    pass\n"),
    ]
    assert index.prepare(again, pool) == 1
    index.unprepare()


def test_a_scan_goes_to_the_pool_once_it_is_large_whatever_its_batches() -> None:
    # A broker hands a scan over in batches of any size: the threshold is the scan's.
    stamp, index = Stamp(repo="r"), RepoIndex("r")
    stamp.claimed(index)
    events = [stamp.changed(f"m{i}.py", f"def f{i}():\n    pass\n", "scan") for i in range(9)]
    pool = ParsePool(1, min_files=5)
    try:
        sent = []
        for start in range(0, len(events), 2):
            batch = events[start : start + 2]
            sent.append(index.prepare(batch, pool))
            for event in batch:
                index.handle(event, 0.0)
        assert sent == [0, 0, 2, 2, 1]  # from the batch that makes the scan 5 files
        index.handle(stamp.scan_completed(), 0.0)
        edit = [stamp.changed(f"m{i}.py", "x = 1\n") for i in range(6)]
        assert index.prepare(edit, pool) == 0  # watch events: parsed where handled
    finally:
        pool.close()


async def test_the_pipeline_publishes_the_same_deltas_with_the_pool(pool: ParsePool) -> None:
    rng = random.Random(7)
    events = scan(Stamp(repo="r"), generated_repository(rng))
    raw = [
        Message(DEFAULT_TOPICS.file_events, 0, at, b"r", encode(e)) for at, e in enumerate(events)
    ]
    raw.insert(3, Message(DEFAULT_TOPICS.file_events, 0, 99, b"r", b"not json"))
    published: list[list[bytes]] = []
    for parse_pool in (None, pool):
        sink = InMemoryDeltaSink()
        indexing = IndexingPipeline(
            InMemoryDeltaLog(), sink, clock=lambda: 7.0, parse_pool=parse_pool
        )
        for start in range(0, len(raw), 5):
            await indexing.process_batch(raw[start : start + 5])
        assert len(sink.dead_letters) == 1  # the message that is not an event
        published.append([encode_delta(d) for d in sink.deltas])
    assert published[0] == published[1]
    assert len(published[0]) == len(events)


# -- the pieces ----------------------------------------------------------------------


def test_a_packed_result_unpacks_equal_on_real_code() -> None:
    for path, data in list(structlog_files().items()):
        result = parse_file(path, data)
        back = unpack(pack(result))
        assert back == result, path
        assert [r.model_dump_json() for r in back.references] == [
            r.model_dump_json() for r in result.references
        ]
        assert all(type(a) is type(b) for a, b in zip(back.symbols, result.symbols, strict=True))


def test_a_worker_parses_as_this_process_does() -> None:
    files = sorted(structlog_files().items())[:5]
    assert [unpack(p) for p in parse_chunk(files, "r")] == [
        parse_file(path, data) for path, data in files
    ]


def test_chunks_keep_the_order_and_a_path_given_twice_once() -> None:
    files = [("a", b"12"), ("b", b"3456"), ("a", b"78"), ("c", b"9")]
    assert _chunks(files, 3) == [[("a", b"78")], [("b", b"3456")], [("c", b"9")]]
    assert _chunks(files, 100) == [[("a", b"78"), ("b", b"3456"), ("c", b"9")]]
    # The first chunks smaller: 1/8 of the limit, then doubling (8, 16, 32, 64 here).
    sized = [(f"f{i}", b"x" * 16) for i in range(12)]
    assert [len(c) for c in _chunks(sized, 64)] == [1, 1, 2, 4, 4]


def test_below_the_threshold_or_without_workers_nothing_leaves_the_process() -> None:
    few = ParsePool(2, min_files=3)
    assert len(few.ahead("r", [("a.py", b"x = 1\n"), ("b.py", b"y = 2\n")])) == 0
    assert not few.started
    alone = ParsePool(0, min_files=1)
    assert len(alone.ahead("r", [("a.py", b"x = 1\n")])) == 0
    assert not alone.started
    assert ParsePool().workers == available_cores() - 1  # the indexing process has one


def test_a_result_is_taken_once_and_only_for_the_bytes_sent(pool: ParsePool) -> None:
    ahead = pool.ahead("r", [("a.py", b"def a():\n    pass\n"), ("b.py", b"def b(): pass\n")])
    assert ahead.take("b.py", b"other bytes\n") is None  # sent with other contents
    taken = ahead.take("a.py", b"def a():\n    pass\n")
    assert isinstance(taken, ParseResult)
    assert [s.qualname for s in taken.symbols] == ["a"]
    assert ahead.take("a.py", b"def a():\n    pass\n") is None  # once
    assert ahead.take("z.py", b"") is None
    assert len(ahead) == 0


def test_a_broken_pool_leaves_the_parse_to_the_caller() -> None:
    broken = ParsePool(2, min_files=1)
    ahead = broken.ahead("r", [("a.py", b"def a():\n    pass\n")])
    broken.close()  # cancels what had not started
    result = ahead.take("a.py", b"def a():\n    pass\n")
    assert result is None or [s.qualname for s in result.symbols] == ["a"]
    empty = Ahead()
    assert empty.take("a.py", b"") is None
