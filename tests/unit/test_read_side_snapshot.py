"""The read side from a state snapshot (issue 16): a repository loaded from one and fed
the deltas after it answers from what folding the whole log gives; the materializer
loads the snapshot when the log begins past what it holds, and skips what it covers."""

from __future__ import annotations

import copy
from pathlib import Path

from structlog.testing import capture_logs

from producers.topics import DEFAULT_TOPICS
from query.materializer import Materializer
from query.read_model import ReadModel, RepoView
from query.retrieval import QuotedChunks
from query.state_restore import load_snapshot
from stores.deltas import GraphDelta, encode_delta
from stores.repo_state import RepoState
from stores.state_files import StateFiles
from stores.state_snapshot import canonical, capture, decode, decode_reader, encode
from tests.factories import neighborhood_snapshot, source_status
from tests.unit.test_graph_patch import FILES, scanned
from tests.unit.test_state_snapshot import fold, history, reader_fold


def seen(view: RepoView) -> tuple[object, ...]:
    """What a query of the view reads: the state, reference counts, the file graph (but
    when it last changed) and the retrieval indexes."""
    graph = view.file_graph
    assert graph is not None
    retrieval = view.retrieval
    return (
        canonical(view.state),
        dict(sorted(view.references.items())),
        (graph.seq, graph.files, graph.arcs, graph.scanning, graph.indexed_commit),
        sorted(retrieval.chunks),
        {k: sorted(v) for k, v in sorted(retrieval.definers.items())},
        sorted(retrieval.sources),
    )


def served(view: RepoView) -> bytes:
    """The view's state as its answers read it: the chunks with the texts its packs
    quote (the state's records keep none)."""
    quoted = QuotedChunks(view.state.files, view.retrieval)
    state = copy.copy(view.state)
    state.files = {
        p: r.model_copy(update={"chunks": tuple(quoted[p])}) if r.chunks else r
        for p, r in view.state.files.items()
    }
    return canonical(state)


def served_fold(deltas: list[GraphDelta]) -> bytes:
    """The plain fold of ``deltas`` without references (the read side only counts them)."""
    state: RepoState = reader_fold(deltas)
    state.files = {p: r.model_copy(update={"references": ()}) for p, r in state.files.items()}
    return canonical(state)


def test_a_view_loaded_at_any_cut_then_fed_the_rest_reads_as_the_whole_fold() -> None:
    _, deltas = fold(history(11, edits=20))
    whole = ReadModel(clock=lambda: 50.0)
    for delta in deltas:
        whole.apply_delta(delta)
    expected = seen(whole.repos["app-1"])
    for cut in range(1, len(deltas) + 1):
        model = ReadModel(clock=lambda: 50.0)
        assert load_snapshot(model, capture(reader_fold(deltas[:cut])))
        for delta in deltas[cut:]:
            assert model.apply_delta(delta)
        assert seen(model.repos["app-1"]) == expected, f"loaded at delta {cut}"


def test_loading_keeps_what_the_read_side_knows_of_producers_and_the_neighborhoods() -> None:
    _, deltas = fold(history(12, edits=3))
    state = reader_fold(deltas)
    model = ReadModel(clock=lambda: 50.0)
    status = source_status(3, repo="app-1")
    model.apply_status(status)
    hoods = neighborhood_snapshot("app-1", 4, state.seq, {"n1": ("a.py", "b.py")})
    assert load_snapshot(model, capture(state, hoods))
    view = model.repos["app-1"]
    assert view.status == status and view.neighborhoods == hoods
    assert not view.neighborhoods_stale
    assert not load_snapshot(model, capture(state))  # not ahead of what is held


def test_the_materializer_loads_the_snapshot_when_the_log_begins_past_it(tmp_path: Path) -> None:
    _, deltas = fold(history(13, edits=10))
    cut = len(deltas) - 4
    files = StateFiles(tmp_path)
    files.write(capture(reader_fold(deltas[:cut])))
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_files=files)  # type: ignore[arg-type]
    for delta in deltas[cut:]:  # an embedded broker restarted empty: the rest only
        feeder._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    assert served(model.repos["app-1"]) == served_fold(deltas)
    # Deltas the snapshot covers, read again (a durable log from its start): no-ops.
    for delta in deltas:
        feeder._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    assert served(model.repos["app-1"]) == served_fold(deltas)


def test_without_a_snapshot_a_log_past_the_state_is_a_gap_that_changes_nothing(
    tmp_path: Path,
) -> None:
    _, deltas = fold(history(13, edits=3))
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(
        model,
        "127.0.0.1:1",
        end_offsets=None,  # type: ignore[arg-type]
        state_files=StateFiles(tmp_path),
    )
    feeder._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(deltas[3]))
    assert model.repos["app-1"].state.seq == 0 and model.deltas_applied == 0


async def test_a_snapshot_loaded_early_is_set_aside_when_the_log_holds_its_range(
    tmp_path: Path,
) -> None:
    _, mine = fold(history(31, edits=8))
    files = StateFiles(tmp_path)
    files.write(capture(reader_fold(mine[:10])))
    # Continued: the log begins after the snapshot (an embedded broker restarted empty).
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_files=files)  # type: ignore[arg-type]
    await feeder._preload({b"app-1"})
    assert model.repos["app-1"].state.seq == 10
    for delta in mine[10:]:
        feeder._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    assert served(model.repos["app-1"]) == served_fold(mine)
    # Another history from delta 1 (a durable log of a worker that started over): the log.
    _, theirs = fold(history(32, edits=8), clock=0.5)
    model = ReadModel(clock=lambda: 50.0)
    feeder = Materializer(model, "127.0.0.1:1", end_offsets=None, state_files=files)  # type: ignore[arg-type]
    model.apply_status(source_status(1, repo="app-1"))
    await feeder._preload({b"app-1"})
    assert model.repos["app-1"].state.seq == 10
    for delta in theirs:
        feeder._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    view = model.repos["app-1"]
    assert served(view) == served_fold(theirs)
    assert view.status is not None and view.status.last_seq == 1


def test_a_replica_decodes_a_snapshot_without_building_its_references() -> None:
    """A replica only counts a file's references: decoded as placeholders, the
    snapshot loads the same view as one decoded whole."""
    index, _ = scanned(FILES)
    assert sum(len(r.references) for r in index.state.files.values()) >= 5
    raw = encode(capture(index.state))
    whole, counted = decode(raw), decode(raw, references=False)
    for full, lean in zip(whole.files, counted.files, strict=True):
        assert lean.references == (None,) * len(full.references)
        assert lean.model_copy(update={"references": ()}) == full.model_copy(
            update={"references": ()}
        )
    views = []
    for snapshot in (whole, counted):
        model = ReadModel(clock=lambda: 50.0)
        assert load_snapshot(model, snapshot)
        views.append(model.repos[snapshot.repo])
    assert served(views[0]) == served(views[1])
    assert views[0].references == views[1].references and any(views[1].references.values())
    assert all(not r.references for r in views[1].state.files.values())


QUESTIONS = ["engine start", "load user", "json dumps value", "serve", "a b c", "pkg core"]


def answers(view: RepoView) -> list[object]:
    """The sparse index's answers to a few questions, scores as ``float.hex``."""
    sparse = view.retrieval.sparse
    found: list[object] = [len(sparse), sorted(sparse.bm25.vocabulary())]
    for question in QUESTIONS:
        found.append([(p, s.hex(), c) for p, s, c in sparse.rank_files(question, 20)])
        found.append([(c, s.hex()) for c, s in sparse.search(question, limit=20)])
    return found


def test_a_view_indexed_from_the_snapshots_postings_answers_as_one_that_tokenized() -> None:
    """At every cut: loaded with the snapshot's carried postings, then fed the rest, the
    view reads and ranks, bit for bit, as the whole fold (and as a load that tokenized)."""
    _, deltas = fold(history(11, edits=20))
    whole = ReadModel(clock=lambda: 50.0)
    for delta in deltas:
        whole.apply_delta(delta)
    expected = (seen(whole.repos["app-1"]), answers(whole.repos["app-1"]))
    assert len(whole.repos["app-1"].retrieval.sparse) > 0
    used = 0
    for cut in range(1, len(deltas) + 1):
        read = decode_reader(encode(capture(reader_fold(deltas[:cut]))))
        assert read.postings is not None
        for postings in (read.postings, None):
            model = ReadModel(clock=lambda: 50.0)
            with capture_logs() as logs:
                assert load_snapshot(model, read.snapshot, None, postings)
            loaded = [e for e in logs if e["event"] == "read_side_state_loaded"]
            used += loaded[0]["postings"]
            assert loaded[0]["postings"] == (postings is not None)
            for delta in deltas[cut:]:
                assert model.apply_delta(delta)
            view = model.repos["app-1"]
            assert (seen(view), answers(view)) == expected, f"loaded at delta {cut}"
    assert used > 0


def test_postings_of_other_chunks_are_not_used_and_the_texts_are_tokenized() -> None:
    _, deltas = fold(history(11, edits=20))
    early, late = reader_fold(deltas[:8]), reader_fold(deltas)
    stale = decode_reader(encode(capture(early))).postings
    read = decode_reader(encode(capture(late)))
    assert stale is not None and read.postings is not None and stale.digest != read.postings.digest
    honest = ReadModel(clock=lambda: 50.0)
    load_snapshot(honest, read.snapshot, None, read.postings)
    model = ReadModel(clock=lambda: 50.0)
    with capture_logs() as logs:
        assert load_snapshot(model, read.snapshot, None, stale)
    assert [e["reason"] for e in logs if e["event"] == "chunk_postings_unused"] == ["other_chunks"]
    assert answers(model.repos["app-1"]) == answers(honest.repos["app-1"])
