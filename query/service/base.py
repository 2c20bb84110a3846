"""What every family of answers shares: the read model, the caches, the session memory,
and the one way a repository is looked up."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from query.read_model import ReadModel, RepoView
from query.search.adjacency import Adjacency
from query.search.session_memory import SessionMemory
from query.service.cache import StateCache
from query.service.errors import NotFound
from stores.neighborhoods import FileStanding


class ServiceBase:
    """``model``: the read model the answers come from, as the materializer folds it.
    ``ready``: whether the read side has caught up with the topics (for ``health``)."""

    def __init__(self, model: ReadModel, ready: Callable[[], bool] = lambda: True) -> None:
        self.model = model
        self._ready = ready
        self._cache = StateCache()
        self._sessions = SessionMemory()

    def view(self, repo: str) -> RepoView:
        """The repository a question names, or the refusal every answer gives alike."""
        view = self.model.repos.get(repo)
        if view is None:
            raise NotFound(f"unknown repository {repo!r}; see /repositories")
        return view

    def _adjacency(self, view: RepoView) -> Adjacency:
        """The state's adjacency, kept up to date by the read model as deltas are folded
        (issue 15: no longer rebuilt by the first answer after an edit)."""
        return view.adjacency()

    def _importance(self, view: RepoView) -> Mapping[str, float]:
        """Each file's importance by path (empty before the first recluster), per version."""
        snapshot = view.neighborhoods
        return self._cache.get(
            view, "importance", lambda: snapshot.importance() if snapshot else {}
        )

    def _standing(self, view: RepoView) -> Mapping[str, FileStanding]:
        """Each file's standing in the neighborhoods by path, per version."""
        snapshot = view.neighborhoods
        return self._cache.get(
            view, "standing", lambda: {f.path: f for f in snapshot.files} if snapshot else {}
        )

    def _labels(self, view: RepoView) -> Mapping[str, str]:
        """Each neighborhood's label by id, per version."""
        snapshot = view.neighborhoods
        return self._cache.get(
            view,
            "labels",
            lambda: {n.id: n.label for n in snapshot.neighborhoods} if snapshot else {},
        )
