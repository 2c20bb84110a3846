"""One computed value per repository and state version, so a costly derived view (the
adjacency, the folder summaries, the overview, the churn list) is built once per change
of the read model, not once per answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from query.read_model import RepoView

T = TypeVar("T")


class StateCache:
    """Values keyed by (repository, name), valid while the state and the neighborhood
    snapshot they were computed from stay (a delta or a recluster moves the version)."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], tuple[tuple[int, int], object]] = {}

    def get(self, view: RepoView, name: str, compute: Callable[[], T]) -> T:
        version = (view.state.seq, view.neighborhoods.seq if view.neighborhoods else 0)
        key = (view.state.repo, name)
        cached = self._values.get(key)
        if cached is None or cached[0] != version:
            cached = self._values[key] = (version, compute())
        return cached[1]  # type: ignore[return-value]
