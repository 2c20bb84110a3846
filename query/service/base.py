"""What every family of answers shares: the read model, the caches, the session memory,
and the one way a repository is looked up."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Concatenate, ParamSpec, TypeVar

from query.read_model import ReadModel, RepoView
from query.search.adjacency import Adjacency
from query.search.session_memory import SessionMemory
from query.service.access import reader
from query.service.cache import StateCache
from query.service.errors import NotFound, Warming
from stores.neighborhoods import FileStanding


def root_name(root: str) -> str:
    """A repository root's base name: the one part of its path on the producer's
    machine that answers show (the path itself tells a stranger where things live)."""
    return root.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


P = ParamSpec("P")
T = TypeVar("T")
S = TypeVar("S", bound="ServiceBase")


def at_one_instant(method: Callable[Concatenate[S, P], T]) -> Callable[Concatenate[S, P], T]:
    """An answer about many repositories whose freshness is judged, for each of them,
    at the instant the answer began (`ReadModel.one_instant`): the listing, the
    org-wide search, context and graph search."""

    @functools.wraps(method)
    def judged(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self.model.one_instant():
            return method(self, *args, **kwargs)

    return judged


class ServiceBase:
    """``model``: the read model the answers come from, as the materializer folds it.
    ``ready``: whether the read side has caught up with the topics (for ``health``)."""

    def __init__(self, model: ReadModel, ready: Callable[[], bool] = lambda: True) -> None:
        self.model = model
        self._ready = ready
        self._cache = StateCache()
        self._sessions = SessionMemory()

    def view(self, repo: str) -> RepoView:
        """The repository a question names, or the refusal every answer gives alike: to
        a missing repository and to one the request's principal may not read (issue
        19: the two are indistinguishable). Before the replica is ready neither is known
        to be missing (a replica just started holds nothing yet): `Warming`, which the
        router retries on another replica of the shard."""
        view = self.model.repos.get(repo)
        if view is None or not self.readable(repo, view):
            if not self._ready():
                raise Warming(f"repository {repo!r}: this replica is still loading; retry")
            raise NotFound(f"unknown repository {repo!r}; see /repositories")
        return view

    def readable(self, repo: str, view: RepoView | None = None) -> bool:
        """Whether the request's principal (query/service/access.py) may read ``repo``,
        by its id or its display name (the root directory's name)."""
        who = reader()
        if who.reads_all or who.may_read(repo):
            return True
        view = view if view is not None else self.model.repos.get(repo)
        status = view.status if view is not None else None
        return status is not None and who.may_read(root_name(status.root))

    def warming(self) -> bool:
        """Whether the replica is still loading its partitions (its snapshots, the topics
        up to their end): a listing or an org-wide answer made now is made of what it
        holds so far, and says so (``partial``), never that it is complete (issue 18)."""
        return not self._ready()

    def held(self) -> Mapping[str, RepoView]:
        """The repositories the request's principal may read, by id: what every listing,
        total and org-wide answer is made of."""
        repos = self.model.repos
        if reader().reads_all:
            return repos
        return {r: v for r, v in repos.items() if self.readable(r, v)}

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
