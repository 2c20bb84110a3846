"""Which scope each route asks of a token: one table for HTTP and the MCP tools.

Pure: a path in, a scope (or None: open) out. A path not named here asks ``read``, so
a route added later is closed until said otherwise, and a stranger cannot tell an
existing route from a missing one without a token (both answer 401).
"""

from __future__ import annotations

OPEN_PATHS = frozenset({"/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"})
"""Open to anyone: the probes (deploy/k8s hits ``/health``) and the API's description,
which says what the routes are, not what the repositories hold."""

OPEN_PREFIXES = ("/docs/assets/", "/dashboard/assets/")

DASHBOARD_PAGE = "/dashboard"
LOGIN_PATH = "/dashboard/login"
LOGOUT_PATH = "/dashboard/logout"

ADMIN_PATHS = frozenset({"/dead-letters"})
ADMIN_ROUTES = frozenset({"ranking"})
"""``/repositories/{repo}/ranking``: the weights an operator or ``eval tune`` set."""

METRICS_PATH = "/metrics"


def required_scope(path: str) -> str | None:
    """The scope a request of ``path`` needs; None for an open route."""
    if path in OPEN_PATHS or path.startswith(OPEN_PREFIXES):
        return None
    if path in (DASHBOARD_PAGE, LOGIN_PATH, LOGOUT_PATH):
        return None  # the page or its login form (query/auth/middleware.py), no data
    if path == METRICS_PATH:
        return "metrics"
    if path in ADMIN_PATHS or path.startswith("/tokens"):
        return "admin"
    parts = path.split("/")  # '', 'repositories', repo, what
    if len(parts) == 4 and parts[1] == "repositories" and parts[3] in ADMIN_ROUTES:
        return "admin"
    return "read"
