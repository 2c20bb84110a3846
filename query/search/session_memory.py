"""What an agent's session touched recently, to lift it in the next answers.

A session (an id the agent passes along) remembers the files it was shown or asked
about, most recent first. ``boosts`` gives each a weight that halves every
``half_life`` touches back (1.0 for the latest), which the ranking adds as a signal.
Bounded everywhere: at most ``max_paths`` per session, ``max_sessions`` sessions
(the least recently used go first), and a session idle for ``ttl_s`` is forgotten.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable


class SessionMemory:
    def __init__(
        self,
        *,
        max_sessions: int = 1000,
        max_paths: int = 50,
        ttl_s: float = 3600.0,
        half_life: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_sessions = max_sessions
        self.max_paths = max_paths
        self.ttl_s = ttl_s
        self.half_life = half_life
        self._clock = clock
        # session -> (last used, paths most recent last, without repeats)
        self._sessions: OrderedDict[tuple[str, str], tuple[float, list[str]]] = OrderedDict()

    def touch(self, repo: str, session: str, paths: Iterable[str]) -> None:
        """Record ``paths`` (in the order given, the first the most relevant) as the
        latest touched in ``session`` for ``repo``."""
        now = self._clock()
        self._expire(now)
        key = (repo, session)
        _, recent = self._sessions.pop(key, (now, []))
        for path in reversed(list(paths)):
            if path in recent:
                recent.remove(path)
            recent.append(path)
        del recent[: max(0, len(recent) - self.max_paths)]
        self._sessions[key] = (now, recent)
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)

    def boosts(self, repo: str, session: str) -> dict[str, float]:
        """Each remembered path's weight in (0, 1]: 1 for the latest, halving every
        ``half_life`` touches back."""
        self._expire(self._clock())
        held = self._sessions.get((repo, session))
        if held is None:
            return {}
        recent = held[1]
        return {path: 0.5 ** (age / self.half_life) for age, path in enumerate(reversed(recent))}

    def _expire(self, now: float) -> None:
        while self._sessions:
            key, (used, _) = next(iter(self._sessions.items()))
            if now - used < self.ttl_s:
                return
            del self._sessions[key]
