"""Who is asking: the principal authentication found, or the client's address.

Authentication (issue 19's tokens) is a middleware that puts the request's principal in
``scope["state"]["principal"]``; with authentication off there is none. The request
limits (query/rate_limit.py) and the audit log (query/audit_log.py) only need its name,
so they depend on `Principal`, a Protocol of that one attribute, and on nothing else of
the authentication's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from starlette.types import Scope

ANONYMOUS = "anonymous"
"""The audit log's name of a caller with no principal."""


@runtime_checkable
class Principal(Protocol):
    """What the request limits and the audit log read of an authenticated caller."""

    @property
    def name(self) -> str:
        """The token's name (``ci-agent``): never its secret."""
        ...


def principal_of(scope: Scope) -> Principal | None:
    """The principal authentication put in the request's state, if any."""
    state = scope.get("state")
    found = state.get("principal") if isinstance(state, Mapping) else None
    return found if isinstance(found, Principal) else None


def client_address(scope: Scope) -> str | None:
    """The peer's address (no port), as the server gives it."""
    client = scope.get("client")
    return str(client[0]) if client else None


def caller_name(scope: Scope) -> str:
    """The principal's name, or ``anonymous``."""
    principal = principal_of(scope)
    return principal.name if principal is not None else ANONYMOUS


def caller_key(scope: Scope) -> str:
    """What a caller's requests are counted under: ``token:NAME`` when authenticated,
    else ``client:ADDRESS`` (the prefixes keep a token named like an address apart)."""
    principal = principal_of(scope)
    if principal is not None:
        return f"token:{principal.name}"
    return f"client:{client_address(scope) or 'unknown'}"
