"""A read model's repository loaded from a state snapshot instead of folded from delta 1.

The query service of ``gazetteer up`` shares the worker's data dir, so at start (and
when the log it reads begins past what it holds: an embedded broker restarted empty)
it loads the snapshots the worker wrote (issue 16) and folds only the deltas after
them. The view is built exactly as folding would leave it: the state (references
dropped, their counts kept, as `ReadModel.apply_delta` does), the file graph, the
retrieval indexes and the last neighborhoods. The churn ledger starts at the snapshot:
its entries are history, which a snapshot does not keep. A replica elsewhere reads the
topics as before.
"""

from __future__ import annotations

import structlog

from query.read_model import ReadModel, RepoView
from stores.projections.graph_state import FileGraphState
from stores.state_snapshot import StateSnapshot, base_delta, restore_state

log = structlog.get_logger(__name__)


def load_snapshot(model: ReadModel, snapshot: StateSnapshot) -> bool:
    """Replace the repository's view by the snapshot's state when it is ahead of it;
    what the read side knows of its producers (statuses, dead letters) is kept."""
    repo = snapshot.repo
    held = model.repos.get(repo)
    if held is not None and held.state.seq >= snapshot.seq:
        return False
    view = empty_view(model, repo)
    state = restore_state(snapshot)
    for path, record in list(state.files.items()):
        view.references[path] = len(record.references)
        if record.references:
            state.files[path] = record.model_copy(update={"references": ()})
    view.state = state
    view.file_graph = FileGraphState.of(state)
    lean = tuple(state.files[path] for path in sorted(state.files))
    view.retrieval.apply(base_delta(snapshot).model_copy(update={"files_upserted": lean}))
    view.churn.seq = state.seq  # folds the deltas after the snapshot, not before
    hoods = snapshot.neighborhoods
    if hoods is not None:
        # The worker reclusters a quiet repository before its snapshot is written (and
        # again at restore if not): the file graph is taken as the neighborhoods' own.
        view.file_graph.changed_seq = min(state.seq, hoods.graph_seq)
        model.apply_snapshot(hoods)
    model.deltas_applied += 1
    log.info("read_side_state_loaded", repo=repo, seq=state.seq, files=len(state.files))
    return True


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
