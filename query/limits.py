"""The values of a service's request limits, apart from the middlewares that keep them
(query/request_limits.py), so that the settings of every process can name them without
importing a web framework (a worker's verbs import none: tests/unit/test_cli_imports.py)."""

from __future__ import annotations

from dataclasses import dataclass

from query.token_bucket import Rate

MAX_BODY_BYTES = 1 << 20
MAX_URL_BYTES = 16 << 10
"""16 KiB: a 2,000-character question (``q``'s bound) fits even percent-encoded."""
TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """A service's limits; ``timeout_s`` None: no time limit; ``rate`` None: no rate
    limit; ``audit``: one log line per request."""

    max_body_bytes: int = MAX_BODY_BYTES
    max_url_bytes: int = MAX_URL_BYTES
    timeout_s: float | None = TIMEOUT_S
    rate: Rate | None = None
    audit: bool = True
