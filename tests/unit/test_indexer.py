"""The pure indexing handler: exact deltas, re-resolution of importers, replays.

Every session here claims its lease first (seq 1, delta 1); tests/unit/test_lease.py
places events of other leases, forged and out of order."""

from __future__ import annotations

import random

from processors.indexer import RepoIndex
from tests.factories import Stamp, tiny_parse


def new_index() -> RepoIndex:
    return RepoIndex("app-1", parse=tiny_parse)


def claimed(producer: str = "p1", epoch: int = 1) -> tuple[RepoIndex, Stamp]:
    """A new index whose lease is a new session's, claimed (delta 1)."""
    index, s = new_index(), Stamp(producer=producer, epoch=epoch)
    assert s.claimed(index) is not None
    return index, s


def edges(index: RepoIndex, kinds: tuple[str, ...] = ("IMPORTS", "CONTAINS")) -> set:
    """Edges of the given kinds that start at a file or a symbol (not at a folder)."""
    return {k for k in index.state.edges if k[2] in kinds and not k[0].startswith("dir:")}


def test_file_changed_gives_nodes_contains_and_import_edges() -> None:
    index, s = claimed()
    delta = index.handle(s.changed("a.py", "import os\ndef run"), now=5.0)
    assert delta is not None
    assert delta.seq == 2 and delta.source.seq == 2 and delta.event_kind == "file_changed"
    assert [n.id for n in delta.nodes_upserted] == [
        "dir:",
        "ext:os",
        "file:a.py",
        "sym:a.py:run",
    ]
    assert [e.key for e in delta.edges_upserted] == [
        ("dir:", "file:a.py", "CONTAINS"),
        ("file:a.py", "ext:os", "IMPORTS"),
        ("file:a.py", "sym:a.py:run", "CONTAINS"),
        ("sym:a.py:run", "file:a.py", "DEFINED_BY"),
    ]
    root = index.state.nodes["dir:"]
    assert (root.kind, root.name, root.level) == ("REPOSITORY", "app-1", 1)
    record = index.state.files["a.py"]
    assert (record.language, record.lines, record.origin, record.producer) == (
        "python",
        2,
        "watch",
        "p1",
    )


def test_a_new_file_re_resolves_the_files_that_import_it() -> None:
    index, s = claimed()
    index.handle(s.changed("a.py", "import b"), now=1.0)
    assert edges(index) == {("file:a.py", "ext:b", "IMPORTS")}
    delta = index.handle(s.changed("b.py", "def g"), now=2.0)
    assert delta is not None
    assert edges(index) == {
        ("file:a.py", "file:b.py", "IMPORTS"),
        ("file:b.py", "sym:b.py:g", "CONTAINS"),
    }
    assert delta.edges_removed == (("file:a.py", "ext:b", "IMPORTS"),)
    assert delta.nodes_removed == ("ext:b",)
    assert "ext:b" not in index.state.nodes


def test_deleting_a_file_turns_its_importers_back_to_external() -> None:
    index, s = claimed()
    index.handle(s.changed("a.py", "import b"), now=1.0)
    index.handle(s.changed("b.py", "def g"), now=2.0)
    delta = index.handle(s.deleted("b.py"), now=3.0)
    assert delta is not None and delta.files_removed == ("b.py",)
    assert sorted(delta.nodes_removed) == ["file:b.py", "sym:b.py:g"]
    assert delta.edges_removed[0] == ("dir:", "file:b.py", "CONTAINS")
    assert edges(index) == {("file:a.py", "ext:b", "IMPORTS")}
    assert "ext:b" in index.state.nodes and "b.py" not in index.state.files


def test_deleting_a_directory_removes_every_file_under_it() -> None:
    index, s = claimed()
    for path in ("pkg/a.py", "pkg/sub/b.py", "pkgx.py"):
        index.handle(s.changed(path, "def f"), now=1.0)
    delta = index.handle(s.deleted("pkg"), now=2.0)
    assert delta is not None and delta.files_removed == ("pkg/a.py", "pkg/sub/b.py")
    assert set(index.state.files) == {"pkgx.py"}


def test_external_node_stays_while_another_file_imports_it() -> None:
    index, s = claimed()
    index.handle(s.changed("a.py", "import os"), now=1.0)
    index.handle(s.changed("c.py", "import os"), now=1.0)
    delta = index.handle(s.changed("a.py", "def f"), now=2.0)
    assert delta is not None and delta.nodes_removed == ()
    assert "ext:os" in index.state.nodes
    delta = index.handle(s.changed("c.py", "def h"), now=2.0)
    assert delta is not None and delta.nodes_removed == ("ext:os",)


def test_unchanged_content_is_not_parsed_again_and_changes_nothing() -> None:
    index, s = claimed()
    index.handle(s.changed("a.py", "def f"), now=1.0)
    delta = index.handle(s.changed("a.py", "def f"), now=2.0)
    assert delta is not None and delta.changes == 0 and delta.seq == 3


def test_replayed_event_is_skipped() -> None:
    index, s = claimed()
    event = s.changed("a.py", "def f")
    assert index.handle(event, now=1.0) is not None
    assert index.handle(event, now=2.0) is None
    assert index.state.seq == 2


def test_an_event_past_a_gap_waits_for_the_resent_batch() -> None:
    index, s = claimed()
    first, second = s.changed("a.py", "def f"), s.changed("b.py", "def g")
    assert index.position(second) == "gap" and index.handle(second, now=1.0) is None
    assert index.handle(first, now=1.0) is not None
    assert index.handle(second, now=1.0) is not None
    assert set(index.state.files) == {"a.py", "b.py"}


def test_a_new_producer_session_must_claim_before_its_events_count() -> None:
    index, old = claimed("p1")
    index.handle(old.changed("a.py", "def f"), now=1.0)
    new = Stamp(producer="p2", epoch=2)  # its claim (seq 1) never arrives
    assert index.position(new.changed("b.py", "def g")) == "unclaimed"
    assert index.position(Stamp(producer="p3", epoch=2).claim()) == "next"


def test_a_scan_resolves_its_files_at_the_barrier() -> None:
    index, s = claimed()
    index.handle(s.changed("a.py", "import b\ndef f", origin="scan"), now=1.0)
    index.handle(s.changed("b.py", "def g", origin="scan"), now=1.0)
    assert edges(index, ("IMPORTS",)) == set()  # not resolved yet
    assert ("file:a.py", "sym:a.py:f", "CONTAINS") in index.state.edges
    assert "dir:" not in index.state.nodes  # folders are laid out at the barrier too
    delta = index.handle(s.scan_completed("c1"), now=1.0)
    assert delta is not None and delta.barrier == "scan_completed"
    assert edges(index, ("IMPORTS",)) == {("file:a.py", "file:b.py", "IMPORTS")}
    assert ("dir:", "file:a.py", "CONTAINS") in index.state.edges


def test_skipped_file_is_recorded_with_its_reason_and_no_symbols() -> None:
    index, s = claimed()
    index.handle(s.skipped("logo.png", "binary", size=2048), now=1.0)
    index.handle(s.scan_completed("c1"), now=1.0)
    record = index.state.files["logo.png"]
    assert (record.skipped, record.size, record.symbols, record.content_hash) == (
        "binary",
        2048,
        (),
        None,
    )
    assert set(index.state.nodes) == {"dir:", "file:logo.png"}


def test_a_file_the_producer_redacted_says_how_many_secrets_in_its_problems() -> None:
    index, s = claimed()
    text = 'A = "[REDACTED:aws-access-token]"\nB = "[REDACTED:secret-assignment]"\ndef f'
    index.handle(s.changed("a.py", text), now=1.0)
    index.handle(s.changed("b.py", "def g"), now=1.0)
    assert index.state.files["a.py"].problems == ("secrets_redacted:2",)
    assert index.state.files["b.py"].problems == ()


def test_full_scan_of_a_new_session_removes_files_it_did_not_report() -> None:
    index, first = claimed("p1")
    second = Stamp(producer="p2", epoch=2)
    index.handle(first.changed("a.py", "import b"), now=1.0)
    index.handle(first.changed("b.py", "def g"), now=1.0)
    index.handle(first.scan_completed("c1"), now=1.0)
    claim = second.claimed(index, now=2.0)  # the claim changes nothing but the lease
    assert claim is not None and claim.changes == 0 and set(index.state.files) == {"a.py", "b.py"}
    index.handle(second.changed("a.py", "import b"), now=2.0)
    delta = index.handle(second.scan_completed("c2"), now=2.0)
    assert delta is not None
    assert delta.files_removed == ("b.py",) and delta.indexed_commit == "c2"
    assert set(index.state.files) == {"a.py"}
    assert edges(index) == {("file:a.py", "ext:b", "IMPORTS")}


def test_commit_events_record_the_commit_and_the_barrier_sets_indexed_commit() -> None:
    index, s = claimed()
    index.handle(s.commit_observed("a" * 40, ("x.py",)), now=1.0)
    index.handle(s.changed("x.py", "def f", origin="commit", commit="a" * 40), now=1.0)
    assert index.state.indexed_commit is None
    index.handle(s.commit_completed("a" * 40), now=1.0)
    assert index.state.indexed_commit == "a" * 40
    assert [c.sha for c in index.state.commits] == ["a" * 40]
    assert index.state.files["x.py"].commit == "a" * 40


def test_restore_from_published_deltas_equals_the_live_index() -> None:
    index, s = new_index(), Stamp()
    deltas = [
        s.claimed(index),
        index.handle(s.changed("a.py", "import b\nimport os"), now=1.0),
        index.handle(s.changed("b.py", "def g"), now=1.0),
        index.handle(s.deleted("b.py"), now=1.0),
        index.handle(s.changed("c.py", "import a"), now=1.0),
    ]
    restored = RepoIndex.restore("app-1", [d for d in deltas if d], parse=tiny_parse)
    assert restored.state.fingerprint() == index.state.fingerprint()
    assert restored.state.lease == index.state.lease and restored.state.lease is not None
    # The restored index keeps resolving incrementally like the live one.
    later = s.changed("b.py", "def g")
    assert restored.handle(later, now=2.0) == index.handle(later, now=2.0)


def _fresh_build(files: dict[str, str]) -> RepoIndex:
    """A scan of the same files: resolved once, at the scan's barrier."""
    index, s = claimed("fresh")
    for path, text in sorted(files.items()):
        index.handle(s.changed(path, text, origin="scan"), now=0.0)
    index.handle(s.scan_completed(), now=0.0)
    return index


def _graph(index: RepoIndex) -> tuple[object, ...]:
    return (
        sorted(n.model_dump_json() for n in index.state.nodes.values()),
        sorted(e.model_dump_json() for e in index.state.edges.values()),
    )


def test_incremental_graph_equals_a_fresh_build_after_every_random_step() -> None:
    rng = random.Random(7)
    names = ["a", "b", "c", "d", "pkg/__init__", "pkg/e"]
    modules = ["a", "b", "c", "d", "pkg", "pkg.e", "os", "json"]
    files: dict[str, str] = {}
    index, s = claimed()
    for _ in range(300):
        path = rng.choice(names) + ".py"
        if path in files and rng.random() < 0.3:
            del files[path]
            index.handle(s.deleted(path), now=1.0)
        else:
            body = [f"import {m}" for m in rng.sample(modules, rng.randint(0, 3))]
            body += [f"def f{i}" for i in range(rng.randint(0, 2))]
            files[path] = "\n".join(body)
            index.handle(s.changed(path, files[path]), now=1.0)
        assert _graph(index) == _graph(_fresh_build(files))


def test_restored_mid_scan_then_finished_equals_an_uninterrupted_scan() -> None:
    s = Stamp()
    files = {
        "a.py": "import b\ndef f",
        "b.py": "import c\ndef g",
        "c.py": "def h",
        "d.py": "import a",
    }
    events = [s.claim(), *(s.changed(p, t, origin="scan") for p, t in sorted(files.items()))]
    events.append(s.scan_completed("c1"))
    whole = new_index()
    deltas = [whole.handle(e, now=1.0) for e in events]
    for cut in range(1, len(events)):
        restored = RepoIndex.restore("app-1", [d for d in deltas[:cut] if d], parse=tiny_parse)
        for event in events[cut:]:
            restored.handle(event, now=1.0)
        assert _graph(restored) == _graph(whole), f"restored after {cut} events"
