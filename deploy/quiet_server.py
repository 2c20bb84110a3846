"""A uvicorn server that leaves signals to the process (the query service, the router)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to the process: the CLI owns Ctrl-C.

    uvicorn captures SIGINT/SIGTERM and raises them again when it stops, which would
    turn a clean, requested shutdown into a KeyboardInterrupt.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
