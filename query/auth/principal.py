"""The principal a request runs as: a token's name, scopes and repository globs.

Pure values (no web framework): the service layer filters by `Principal.may_read`, the
middleware (query/auth/middleware.py) checks `Principal.scopes` against the route's.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Principal:
    """``repos``: fnmatch globs on repository ids and display names (``'*'``: every
    repository), matched case-sensitively: a repository id is lowercase already."""

    name: str
    scopes: frozenset[str]
    repos: tuple[str, ...]

    def may_read(self, repo: str) -> bool:
        """Whether ``repo`` (an id or a display name) is one this principal may see."""
        return any(fnmatch.fnmatchcase(repo, glob) for glob in self.repos)

    def may(self, scope: str) -> bool:
        return scope in self.scopes

    @property
    def reads_all(self) -> bool:
        """Every repository, including those not yet named (what a ``'*'`` glob says)."""
        return "*" in self.repos


EVERYONE = Principal("anonymous", frozenset({"read", "admin", "metrics"}), ("*",))
"""Who asks when authentication is off (loopback, or ``--insecure``): anything."""

NOBODY = Principal("anonymous", frozenset(), ())
"""Who asks an open route (``/health``) without a token when authentication is on: it
may read no repository, so even the counts there reveal nothing."""
