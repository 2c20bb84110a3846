"""State snapshots (issue 16): exact round trips, and a snapshot at any cut point plus the
deltas after it equals the state folded from the whole log, for the worker and a reader."""

from __future__ import annotations

import hashlib
import json
import random
import zlib

import pytest

from processors.indexer import RepoIndex
from stores import chunk_postings
from stores.deltas import GraphDelta
from stores.framing import Frame, header_check
from stores.neighborhoods import Created
from stores.repo_state import RepoState
from stores.state_snapshot import (
    FORMAT_VERSION,
    MAGIC,
    FileReferences,
    SnapshotRejected,
    StateSnapshot,
    against_log,
    canonical,
    capture,
    decode,
    decode_reader,
    encode,
    peek,
    restore_state,
)
from stores.trusted_json import schema_fingerprint
from tests.factories import Stamp, neighborhood_snapshot, tiny_parse

NAMES = ["a", "b", "c", "d", "pkg/__init__", "pkg/e"]
MODULES = ["a", "b", "c", "d", "pkg", "pkg.e", "os", "json"]


def _body(rng: random.Random) -> str:
    lines = [f"import {m}" for m in rng.sample(MODULES, rng.randint(0, 3))]
    return "\n".join(lines + [f"def f{i}" for i in range(rng.randint(0, 2))])


def history(seed: int, edits: int) -> list[object]:
    """A session's events: a claim, a scan of five files, its barrier, then random edits,
    deletions, commits and a second session that fences the first and scans again."""
    rng = random.Random(seed)
    s = Stamp()
    files = {f"{n}.py": _body(rng) for n in NAMES[:5]}
    events: list[object] = [s.claim()]
    events += [s.changed(p, t, origin="scan") for p, t in sorted(files.items())]
    events.append(s.scan_completed("c1"))
    for i in range(edits):
        path = rng.choice(NAMES) + ".py"
        roll = rng.random()
        if roll < 0.2 and path in files:
            del files[path]
            events.append(s.deleted(path))
        elif roll < 0.3:
            events.append(s.commit_observed(f"{i:040x}", (path,)))
            events.append(s.commit_completed(f"{i:040x}"))
        else:
            files[path] = _body(rng)
            events.append(s.changed(path, files[path]))
    second = Stamp(producer="p2", epoch=2)
    events.append(second.claim())
    events += [second.changed(p, t, origin="scan") for p, t in sorted(files.items())]
    events.append(second.scan_completed("c2", full=True))
    events.append(s.changed("a.py", "def late"))  # fenced: no delta
    return events


def fold(events: list[object], clock: float = 0.0) -> tuple[RepoIndex, list[GraphDelta]]:
    """The deltas of ``events``, the n-th applied at ``clock + n``."""
    index = RepoIndex("app-1", parse=tiny_parse)
    deltas = [index.handle(e, now=clock + n) for n, e in enumerate(events)]  # type: ignore[arg-type]
    return index, [d for d in deltas if d is not None]


def reader_fold(deltas: list[GraphDelta], state: RepoState | None = None) -> RepoState:
    state = state or RepoState("app-1")
    for delta in deltas:
        state.apply(delta)
    return state


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_snapshot_at_every_cut_plus_the_deltas_after_equals_the_whole_fold(seed: int) -> None:
    events = history(seed, edits=25)
    whole, deltas = fold(events)
    expected = canonical(whole.state)
    assert expected == canonical(reader_fold(deltas))
    for cut in range(1, len(deltas) + 1):
        at_cut = reader_fold(deltas[:cut])
        snapshot = decode(encode(capture(at_cut, taken_at=5.0)))
        # A reader: the snapshot, then the deltas after it (the ones before are no-ops).
        restored = reader_fold(deltas, restore_state(snapshot))
        assert canonical(restored) == expected, f"reader restored at delta {cut}"
        assert restored.fenced == whole.state.fenced
        assert list(restored.commits) == list(whole.state.commits)
        assert restored.scans_completed == whole.state.scans_completed


@pytest.mark.parametrize("seed", [4, 5])
def test_a_worker_restored_from_a_snapshot_handles_the_rest_exactly_as_one_that_never_stopped(
    seed: int,
) -> None:
    events = history(seed, edits=20)
    whole, deltas = fold(events)
    for cut in range(1, len(events)):
        first, early = fold(events[:cut])
        if not early:
            continue
        # captured as the worker's keeper does: saying whether its state was resolved
        snapshot = capture(first.state, resolved=first.graph.state_resolved)
        restored = RepoIndex.from_snapshot(decode(encode(snapshot)), parse=tiny_parse)
        later = [restored.handle(e, now=float(cut + n)) for n, e in enumerate(events[cut:])]  # type: ignore[arg-type]
        produced = [d for d in later if d is not None]
        # The same deltas as the uninterrupted worker (its clock aside), the same state.
        assert [d.model_copy(update={"applied_at": 0.0}) for d in produced] == [
            d.model_copy(update={"applied_at": 0.0}) for d in deltas[len(early) :]
        ], f"restored after event {cut}"
        assert canonical(restored.state) == canonical(whole.state)


def test_encoding_round_trips_exactly_with_neighborhoods() -> None:
    _, deltas = fold(history(9, edits=5))
    state = reader_fold(deltas)
    hoods = neighborhood_snapshot("app-1", 3, state.seq, {"n1": ("a.py", "b.py")})
    snapshot = capture(state, hoods, taken_at=12.5)
    raw = encode(snapshot)
    assert raw.startswith(MAGIC + b'{"bytes": ')
    assert decode(raw) == snapshot
    assert encode(decode(raw)) == raw
    assert canonical(restore_state(decode(raw))) == canonical(state)


def test_neighborhoods_from_a_later_delta_or_another_repository_are_left_out() -> None:
    _, deltas = fold(history(9, edits=2))
    state = reader_fold(deltas)
    later = neighborhood_snapshot("app-1", 3, state.seq + 1, {"n1": ("a.py",)})
    other = neighborhood_snapshot("app-2", 3, 1, {"n1": ("a.py",)})
    assert capture(state, later).neighborhoods is None
    assert capture(state, other).neighborhoods is None


def test_an_empty_state_has_no_snapshot() -> None:
    with pytest.raises(ValueError, match="nothing to snapshot"):
        capture(RepoState("app-1"))


def _raw() -> bytes:
    _, deltas = fold(history(3, edits=3))
    return encode(capture(reader_fold(deltas)))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[: len(raw) - 7], "truncated"),
        (lambda raw: raw[:20], "truncated"),
        (lambda raw: raw[:-1] + bytes([raw[-1] ^ 0xFF]), "checksum"),
        (lambda raw: b"PK\x03\x04" + raw[4:], "not_a_snapshot"),
        (lambda raw: b"", "not_a_snapshot"),
        (
            lambda raw: raw.replace(
                f'"format": {FORMAT_VERSION}'.encode(), f'"format": {FORMAT_VERSION + 1}'.encode()
            ),
            "wrong_version",
        ),
    ],
)
def test_a_damaged_snapshot_is_rejected_with_its_reason(damage, reason: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SnapshotRejected) as rejected:
        decode(damage(_raw()))
    assert rejected.value.reason == reason


def _framed(body_json: bytes, **header_fields: object) -> bytes:
    """Snapshot bytes around ``body_json`` (the state section; each file without
    references), with a header that checks."""
    try:
        files = json.loads(body_json).get("files", [])
    except ValueError:
        files = []
    sections = [
        ("state", body_json),
        ("counts", json.dumps([0] * len(files)).encode()),
        ("references", json.dumps({"files": [[] for _ in files]}).encode()),
        ("postings", b""),
    ]
    packed = [(name, zlib.compress(part)) for name, part in sections]
    body = b"".join(part for _, part in packed)
    header: dict[str, object] = {
        "format": FORMAT_VERSION,
        "schema": schema_fingerprint(StateSnapshot) + schema_fingerprint(FileReferences),
        "repo": "app-1",
        "seq": 1,
        "indexed_commit": None,
        "epoch": 0,
        "sections": [
            {"name": name, "bytes": len(part), "sha256": hashlib.sha256(part).hexdigest()}
            for name, part in packed
        ],
        "bytes": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
        **header_fields,
    }
    header["check"] = header_check(header)
    return MAGIC + json.dumps(header).encode() + b"\n" + body


def test_a_body_of_another_shape_is_rejected_as_invalid() -> None:
    with pytest.raises(SnapshotRejected) as rejected:
        decode(_framed(b'{"v": 1, "kind": "state_snapshot", "repo": "app-1"}'))
    assert rejected.value.reason == "invalid"
    state = StateSnapshot.model_validate_json(decode(_raw()).model_dump_json())
    extra = json.loads(state.model_dump_json()) | {"surplus": 1}
    with pytest.raises(SnapshotRejected) as rejected:
        decode(_framed(json.dumps(extra).encode(), seq=state.seq))
    assert rejected.value.reason == "invalid"
    # a value of the wrong type, in a model and in a fact, is refused too
    body = json.loads(state.model_dump_json())
    assert body["files"] and body["edges"]
    for broken in (
        {**body, "files": [{**body["files"][0], "size": "large"}]},
        {**body, "edges": [{**body["edges"][0], "weight": "heavy"}]},
        {**body, "files": [{k: v for k, v in body["files"][0].items() if k != "lines"}]},
    ):
        with pytest.raises(SnapshotRejected) as rejected:
            decode(_framed(json.dumps(broken).encode(), seq=state.seq))
        assert rejected.value.reason == "invalid", broken


def test_a_snapshot_of_other_records_or_with_a_changed_header_is_refused() -> None:
    with pytest.raises(SnapshotRejected) as rejected:
        decode(_framed(b"{}", schema="0" * 16))
    assert rejected.value.reason == "wrong_version"
    raw = _raw()
    header = peek(raw)
    assert header.indexed_commit == "c2" and header.epoch == 2
    forged = raw.replace(b'"indexed_commit": "c2"', b'"indexed_commit": "c1"', 1)
    assert forged != raw
    with pytest.raises(SnapshotRejected) as rejected:
        peek(forged)
    assert rejected.value.reason == "checksum"


def test_trusted_decoding_equals_validation_on_real_parses() -> None:
    """Real parses (symbols, references, chunks, sections, keywords) and neighborhoods
    with changes: what the trusted rebuild gives is what pydantic's validation gives."""
    s = Stamp()
    index = RepoIndex("app-1")
    sources = {
        "pkg/__init__.py": "from pkg.core import Engine\n",
        "pkg/core.py": (
            '"""The engine."""\n\nimport json\n\n\nclass Engine:\n'
            '    """Runs."""\n\n    def start(self, value: float = 1.5) -> str:\n'
            "        return json.dumps(value)\n"
        ),
        "pkg/api.py": "from pkg.core import Engine\n\n\ndef serve():\n    return Engine()\n",
        "web/app.js": "export function run(x) { return x * 2; }\n",
    }
    events = [s.claim(), *(s.changed(p, t, origin="scan") for p, t in sources.items())]
    for n, event in enumerate([*events, s.scan_completed("c9")]):
        index.handle(event, now=float(n) + 0.25)  # type: ignore[arg-type]
    change = Created(kind="created", neighborhood="n1", label="PKG", size=3)
    hoods = neighborhood_snapshot(
        "app-1", 2, index.state.seq, {"n1": ("pkg/api.py", "pkg/core.py")}, changes=(change,)
    )
    snapshot = capture(index.state, hoods, taken_at=9.5)
    assert any(f.chunks and f.references and f.symbols for f in snapshot.files)
    raw = encode(snapshot)
    trusted = decode(raw)
    validated = StateSnapshot.model_validate_json(snapshot.model_dump_json())
    assert trusted == validated == snapshot
    assert trusted.model_dump_json() == snapshot.model_dump_json()
    assert trusted.neighborhoods is not None
    assert type(trusted.neighborhoods.changes[0]) is Created


def test_a_snapshot_is_judged_against_the_log_that_would_continue_it() -> None:
    _, deltas = fold(history(6, edits=6))
    cut = 5
    snapshot = capture(reader_fold(deltas[:cut]))
    assert against_log(snapshot, []) is None  # an empty broker
    assert against_log(snapshot, deltas[cut:]) is None  # begins after it
    assert against_log(snapshot, deltas) is None  # holds its delta: the same history
    assert against_log(snapshot, deltas[:3]) == ("the log ends at delta 3, before the snapshot's 5")
    # Another history, numbered alike (the test sessions' ids and stamps are equal: the
    # time of application differs, as the wall clock does between two workers).
    _, other = fold(history(7, edits=6), clock=0.5)
    assert against_log(snapshot, other) == "the log's delta 5 is not the one the snapshot covers"


def test_a_restored_worker_whose_rescan_changes_nothing_resolves_nothing_until_an_edit() -> None:
    """An unchanged restart: the scan's barrier changes nothing, so the restored graph is
    not resolved then (sympy: ~10 s); the first edit resolves it, and every delta and
    the state are the uninterrupted worker's."""
    files = {"a.py": "import b\ndef f0", "b.py": "import pkg.e", "pkg/e.py": "def f1", "c.py": ""}
    s, again = Stamp(), Stamp(producer="p2", epoch=2)
    first_session = [s.claim(), *(s.changed(p, t, origin="scan") for p, t in files.items())]
    first_session += [s.scan_completed("c1"), s.changed("c.py", "import a\ndef f0")]
    files["c.py"] = "import a\ndef f0"
    restart = [again.claim(), *(again.changed(p, t, origin="scan") for p, t in files.items())]
    restart.append(again.scan_completed("c1", full=True))
    edits = [again.changed("a.py", "import c\ndef g1"), again.changed("pkg/e.py", "def f0")]
    whole, deltas = fold(first_session + restart + edits)
    first, early = fold(first_session)
    assert first.graph.state_resolved  # its last change (an edit) resolved every file
    snapshot = capture(first.state, resolved=first.graph.state_resolved)
    restored = RepoIndex.from_snapshot(decode(encode(snapshot)), parse=tiny_parse)
    at = len(first_session)
    later = [restored.handle(e, now=float(at + n)) for n, e in enumerate(restart)]  # type: ignore[arg-type]
    assert not restored.graph.answers_current and restored.graph.state_resolved
    at += len(restart)
    later += [restored.handle(e, now=float(at + n)) for n, e in enumerate(edits)]  # type: ignore[arg-type]
    assert restored.graph.answers_current  # the first edit resolved every file
    produced = [d for d in later if d is not None]
    assert any(d.edges_upserted or d.edges_removed for d in produced[-2:])
    assert [d.model_copy(update={"applied_at": 0.0}) for d in produced] == [
        d.model_copy(update={"applied_at": 0.0}) for d in deltas[len(early) :]
    ]
    assert canonical(restored.state) == canonical(whole.state)


def test_a_snapshot_taken_in_the_middle_of_a_scan_is_not_resolved() -> None:
    s = Stamp()
    index, _ = fold([s.claim(), s.changed("a.py", "import b", origin="scan")])
    assert not index.graph.state_resolved  # a.py waits for the barrier
    restored = RepoIndex.from_snapshot(
        decode(encode(capture(index.state, resolved=index.graph.state_resolved))),
        parse=tiny_parse,
    )
    assert not restored.graph.state_resolved


def _real_snapshot() -> StateSnapshot:
    s = Stamp()
    index = RepoIndex("app-1")
    sources = {
        "pkg/__init__.py": "from pkg.core import Engine\n",
        "pkg/core.py": (
            '"""The engine."""\n\nimport json\n\n\nclass Engine:\n'
            "    def start(self, value):\n        return json.dumps(value)\n"
        ),
        "pkg/api.py": "from pkg.core import Engine\n\n\ndef serve():\n    return Engine()\n",
    }
    events = [s.claim(), *(s.changed(p, t, origin="scan") for p, t in sources.items())]
    for n, event in enumerate([*events, s.scan_completed("c9")]):
        index.handle(event, now=float(n) + 0.25)  # type: ignore[arg-type]
    return capture(index.state, taken_at=9.5)


def test_a_snapshot_of_the_first_format_is_refused_as_another_version() -> None:
    """Format 1 (one JSON body, references inside): refused, so the log or a scan decides."""
    snapshot = _real_snapshot()
    old = Frame(MAGIC, 1, schema_fingerprint(StateSnapshot)).encode(
        {"repo": "app-1", "seq": snapshot.seq, "indexed_commit": None, "epoch": 0},
        snapshot.model_dump_json().encode(),
    )
    for read in (decode, decode_reader, peek):
        with pytest.raises(SnapshotRejected) as rejected:
            read(old)  # type: ignore[operator]
        assert rejected.value.reason == "wrong_version"


def test_a_reader_gets_the_state_its_reference_counts_and_the_chunks_postings() -> None:
    snapshot = _real_snapshot()
    assert any(f.references for f in snapshot.files)
    raw = encode(snapshot)
    read = decode_reader(raw)
    assert [len(f.references) for f in read.snapshot.files] == [
        len(f.references) for f in snapshot.files
    ]
    assert all(r is None for f in read.snapshot.files for r in f.references)
    bare = lambda s: [f.model_copy(update={"references": ()}) for f in s.files]  # noqa: E731
    assert bare(read.snapshot) == bare(snapshot)
    assert read.snapshot.edges == snapshot.edges and read.snapshot.nodes == snapshot.nodes
    chunks = [c for f in snapshot.files for c in f.chunks]
    expected = chunk_postings.count(chunks)
    assert read.postings is not None and len(read.postings) == len(chunks) > 0
    assert read.postings.vocabulary == expected.vocabulary
    assert read.postings.terms.tolist() == expected.terms.tolist()
    assert read.postings.tfs.tolist() == expected.tfs.tolist()


def _section_damaged(raw: bytes, name: str) -> bytes:
    """``raw`` with one byte of section ``name`` flipped (the header still checks)."""
    frame_header_end = raw.index(b"\n", len(MAGIC))
    header = json.loads(raw[len(MAGIC) : frame_header_end])
    at = frame_header_end + 1
    for entry in header["sections"]:
        if entry["name"] == name:
            flip = at + entry["bytes"] // 2
            return raw[:flip] + bytes([raw[flip] ^ 0xFF]) + raw[flip + 1 :]
        at += entry["bytes"]
    raise AssertionError(name)


def test_damaged_postings_are_left_unused_and_damaged_references_refuse_only_the_worker() -> None:
    raw = encode(_real_snapshot())
    read = decode_reader(_section_damaged(raw, "postings"))
    assert read.postings is None and read.snapshot == decode_reader(raw).snapshot
    with pytest.raises(SnapshotRejected) as rejected:
        decode(_section_damaged(raw, "postings"))  # the whole body is verified
    assert rejected.value.reason == "checksum"
    damaged = _section_damaged(raw, "references")
    with pytest.raises(SnapshotRejected):
        decode(damaged)
    assert decode_reader(damaged).snapshot == decode_reader(raw).snapshot  # never read
    for name in ("state", "counts"):
        with pytest.raises(SnapshotRejected) as rejected:
            decode_reader(_section_damaged(raw, name))
        assert rejected.value.reason in {"checksum", "invalid"}
