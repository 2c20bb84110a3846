"""A Ctrl-C that arrives while the CLI still imports its modules (issue 15).

``deploy.cli`` imports a verb's machinery (faust, tree-sitter, FastAPI, ...) only when
the verb runs (issue 20), and that still takes 1-3 s for ``worker`` or ``serve`` on 2
busy cores before anything starts. Without this guard a Ctrl-C in that window ends the
process with a KeyboardInterrupt traceback and code 130, although nothing was started
yet. Imported first by ``deploy.cli`` (its handler is the point of importing it), it
remembers the first Ctrl-C; the command then stops before starting anything
(``gazetteer up`` exits 0, as after any requested stop). A second Ctrl-C interrupts as
Python always does.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from types import FrameType

_requested = threading.Event()


def _remember(signum: int, frame: FrameType | None) -> None:
    if _requested.is_set():
        raise KeyboardInterrupt
    _requested.set()


def requested() -> bool:
    """True once a Ctrl-C arrived before the command installed its own handlers."""
    return _requested.is_set()


def restore() -> None:
    """Ctrl-C raises KeyboardInterrupt again (commands that do not handle signals)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _running_the_cli() -> bool:
    """The process is the ``gazetteer`` command (``python -m deploy.cli`` or the console
    script), not a program that imports the CLI's module (tests, benchmarks)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return getattr(spec, "name", None) == "deploy.cli" or Path(sys.argv[0]).name == "gazetteer"


if threading.current_thread() is threading.main_thread() and _running_the_cli():
    signal.signal(signal.SIGINT, _remember)
