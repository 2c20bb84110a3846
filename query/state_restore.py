"""A read model's repository loaded from a state snapshot instead of folded from delta 1.

The query service of ``gazetteer up`` shares the worker's data dir, so at start (and
when the log it reads begins past what it holds: an embedded broker restarted empty)
it loads the snapshots the worker wrote (issue 16) and folds only the deltas after
them. The view is built exactly as folding would leave it: the state (references
dropped, their counts kept, as `ReadModel.apply_delta` does), the file graph, the
retrieval indexes and the last neighborhoods. The churn ledger is history, which a
state snapshot does not keep: the one the query side saved beside it
(query/churn_files.py) is loaded with it when it covers exactly the snapshot's state;
one of an older or newer delta, or of another history, is refused (logged
``churn_ledger_rejected``) and the ledger starts empty at the snapshot. A replica
elsewhere reads the topics as before.
"""

from __future__ import annotations

import structlog

from query.churn.durable import SavedLedger, mismatch, restore
from query.read_model import ReadModel, RepoView
from query.retrieval import lean_record
from stores.chunk_postings import ChunkPostings, CountedChunks
from stores.projections.graph_state import FileGraphState
from stores.state_snapshot import StateSnapshot, base_delta, restore_state

log = structlog.get_logger(__name__)


def load_snapshot(
    model: ReadModel,
    snapshot: StateSnapshot,
    ledger: SavedLedger | None = None,
    postings: ChunkPostings | None = None,
) -> bool:
    """Replace the repository's view by the snapshot's state when it is ahead of it;
    what the read side knows of its producers (statuses, dead letters) is kept. The
    churn ``ledger`` saved of this repository, if any, is loaded when it fits. The
    chunk ``postings`` the snapshot carries, if any, index its chunks without
    tokenizing them when they were counted of exactly these chunks (else logged
    ``chunk_postings_unused`` and the texts are tokenized: the same index either way)."""
    repo = snapshot.repo
    held = model.repos.get(repo)
    if held is not None and held.state.seq >= snapshot.seq:
        return False
    view = empty_view(model, repo)
    state = restore_state(snapshot)
    full = tuple(state.files[path] for path in sorted(state.files))
    for record in full:
        view.references[record.path] = len(record.references)
        state.files[record.path] = lean_record(record)
    view.state = state
    view.file_graph = FileGraphState.of(state)
    whole = base_delta(snapshot).model_copy(update={"files_upserted": full})
    counted = CountedChunks.of(postings, full) if postings is not None else None
    if postings is not None and counted is None:
        log.warning("chunk_postings_unused", repo=repo, seq=state.seq, reason="other_chunks")
    view.retrieval.apply(whole, state.files, counted)
    view.churn.seq = state.seq  # folds the deltas after the snapshot, not before
    hoods = snapshot.neighborhoods
    if hoods is not None:
        # The worker reclusters a quiet repository before its snapshot is written (and
        # again at restore if not): the file graph is taken as the neighborhoods' own.
        view.file_graph.changed_seq = min(state.seq, hoods.graph_seq)
        model.apply_snapshot(hoods)
    if ledger is not None:
        _load_ledger(view, snapshot, ledger)
    model.deltas_applied += 1
    log.info(
        "read_side_state_loaded",
        repo=repo,
        seq=state.seq,
        files=len(state.files),
        postings=counted is not None,
    )
    return True


def _load_ledger(view: RepoView, snapshot: StateSnapshot, saved: SavedLedger) -> None:
    """The saved ledger in place of the empty one, if it covers the snapshot's state;
    the snapshot's neighborhoods folded into it unless it had folded them."""
    refused = mismatch(saved, snapshot)
    if refused is not None:
        reason, detail = refused
        log.warning("churn_ledger_rejected", repo=snapshot.repo, reason=reason, detail=detail)
        return
    ledger = restore(saved)
    hoods = snapshot.neighborhoods
    if hoods is not None and hoods.seq > ledger.snapshot_seq:
        ledger.apply_snapshot(hoods)
    view.churn = ledger
    log.info("churn_ledger_loaded", repo=snapshot.repo, seq=ledger.seq, entries=len(ledger.entries))


def empty_view(model: ReadModel, repo: str) -> RepoView:
    """The repository's view emptied of its state (and its chunks out of the dense
    index), what the read side knows of its producers kept: to be loaded again, or
    folded from the log from its start."""
    held = model.repos.pop(repo, None)
    if held is not None and model.dense is not None:
        for path in held.state.files:
            model.dense.file_removed(repo, path)
    view = model.view(repo)
    if held is not None:
        view.status, view.statuses, view.clock = held.status, held.statuses, held.clock
        view.rejected, view.dead_letters = held.rejected, held.dead_letters
    return view
