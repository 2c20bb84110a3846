"""What every family of answers shares: the read model, the caches, the session memory,
and the one way a repository is looked up."""

from __future__ import annotations

from collections.abc import Callable

from query.read_model import ReadModel, RepoView
from query.search.session_memory import SessionMemory
from query.service.cache import StateCache
from query.service.errors import NotFound


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
