"""The query side's churn ledgers on disk (issue 16): written when a repository is quiet
and at the end of a run, loaded by the materializer with the state snapshot they cover;
a damaged file is refused (logged ``churn_ledger_rejected``) and the service goes on
with an empty ledger."""

from __future__ import annotations

from pathlib import Path

from structlog.testing import capture_logs

from producers.topics import DEFAULT_TOPICS
from query.churn_files import ChurnFiles, ChurnKeeper, KeepPolicy
from query.materializer import Materializer
from query.read_model import ReadModel
from stores.deltas import GraphDelta, encode_delta
from stores.state_files import StateFiles
from stores.state_snapshot import capture
from tests.unit.test_churn_durable import REPO, feed, served, stream
from tests.unit.test_state_snapshot import reader_fold


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def deltas_of(seed: int) -> list[GraphDelta]:
    return [m for m in stream(seed) if isinstance(m, GraphDelta)]


async def test_a_ledger_is_written_once_quiet_and_at_most_every_so_often(tmp_path: Path) -> None:
    files = ChurnFiles(StateFiles(tmp_path))
    model, clock = ReadModel(clock=lambda: 5000.0), Clock()
    keeper = ChurnKeeper(files, model, KeepPolicy(quiet_s=1.0, every_s=5.0), clock)
    deltas = deltas_of(1)
    feed(model, deltas[:5])
    keeper.changed(REPO)
    assert keeper.due(clock.now + 0.5) == []
    clock.now += 1.0
    await keeper.tick()
    assert (keeper.written, files.load(REPO).covers.seq) == (1, 5)  # type: ignore[union-attr]
    feed(model, deltas[5:8])
    keeper.changed(REPO)
    clock.now += 2.0
    await keeper.tick()  # quiet, but written 2 s ago
    assert keeper.written == 1
    clock.now += 3.0
    await keeper.tick()
    assert (keeper.written, files.load(REPO).covers.seq) == (2, 8)  # type: ignore[union-attr]
    await keeper.flush()
    assert keeper.written == 2  # nothing changed since
    feed(model, deltas[8:9])
    keeper.changed(REPO)
    await keeper.flush()  # at a stop: not waiting to be quiet
    assert (keeper.written, files.load(REPO).covers.seq) == (3, 9)  # type: ignore[union-attr]
    keeper.changed(REPO)
    keeper.forget()
    await keeper.flush()
    assert keeper.written == 3


def restarted(tmp_path: Path, cut: int) -> tuple[ReadModel, Materializer, list[GraphDelta]]:
    """A first run fed the deltas up to ``cut`` (its state snapshot and ledger written),
    and a second run over the same files."""
    deltas = deltas_of(3)
    files = StateFiles(tmp_path)
    files.write(capture(reader_fold(deltas[:cut])))
    first = ReadModel(clock=lambda: 5000.0)
    feeder = Materializer(first, "127.0.0.1:1", end_offsets=None, state_files=files)  # type: ignore[arg-type]
    for delta in deltas[:cut]:
        feeder._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    assert feeder.churn_keeper is not None
    return first, feeder, deltas


async def test_a_restarted_materializer_serves_the_churn_it_served_before(tmp_path: Path) -> None:
    whole = ReadModel(clock=lambda: 5000.0)
    _first, feeder, deltas = restarted(tmp_path, 20)
    feed(whole, deltas)
    await feeder.churn_keeper.flush()  # type: ignore[union-attr]
    model = ReadModel(clock=lambda: 5000.0)
    second = Materializer(model, "127.0.0.1:1", end_offsets=None, state_files=StateFiles(tmp_path))  # type: ignore[arg-type]
    with capture_logs() as logs:
        for delta in deltas[20:]:  # the log begins past what this run holds
            second._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    assert [e["event"] for e in logs if e["event"].startswith("churn_ledger")] == [
        "churn_ledger_loaded"
    ]
    assert served(model) == served(whole)


async def test_a_damaged_ledger_is_refused_and_the_ledger_starts_at_the_snapshot(
    tmp_path: Path,
) -> None:
    _, feeder, deltas = restarted(tmp_path, 20)
    await feeder.churn_keeper.flush()  # type: ignore[union-attr]
    path = ChurnFiles(StateFiles(tmp_path)).path_of(REPO)
    raw = path.read_bytes()
    path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0xFF]))
    model = ReadModel(clock=lambda: 5000.0)
    second = Materializer(model, "127.0.0.1:1", end_offsets=None, state_files=StateFiles(tmp_path))  # type: ignore[arg-type]
    with capture_logs() as logs:
        for delta in deltas[20:]:
            second._apply(DEFAULT_TOPICS.graph_deltas, b"app-1", encode_delta(delta))
    rejected = [e for e in logs if e["event"] == "churn_ledger_rejected"]
    assert [e["reason"] for e in rejected] == ["checksum"]
    view = model.repos[REPO]
    assert view.state.seq == deltas[-1].seq
    assert all(e.first_seq > 20 for e in view.churn.entries)
    page = served(model)["page"]
    assert page["total"] == len(view.churn.entries) + (page["items"][-1]["kind"] == "working_tree")
