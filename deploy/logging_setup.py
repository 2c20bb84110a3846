"""Structured logs: structlog everywhere, stdlib loggers of libraries routed through it.

Context bound with ``structlog.contextvars`` (the pipeline binds each event's repository,
path, commit and id while it handles it) lands on every line, the stdlib loggers'
(faust, aiokafka) included.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog

# httpx logs every request at info: noise on a terminal, and on an MCP server's stderr.
NOISY = ("aiokafka", "faust", "mode", "uvicorn.access", "kafka", "httpx")


def configure_logging(
    level: str = "info", fmt: str = "console", stream: TextIO | None = None, part: str | None = None
) -> None:
    """Log at ``level`` to ``stream`` (stderr), as ``json`` lines or for a ``console``.

    ``part``: the role of a process ``up`` started (``watch``, ``worker``, ``serve``),
    said on each of its lines: the three share ``up``'s stderr, and a line would not
    say which process wrote it (tests/bench/up_startup.py times each by its lines)."""
    out = stream or sys.stderr
    numeric = logging.getLevelName(level.upper())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=out.isatty())
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    if part is not None:
        shared.append(_PartAdder(part))
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        # One write per line (print writes the line and its newline apart): processes
        # sharing one stderr pipe, as ``up``'s children do, never interleave mid-line.
        logger_factory=structlog.WriteLoggerFactory(out),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name in NOISY:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))


class _PartAdder:
    """A structlog processor: ``part=ROLE`` on every line."""

    def __init__(self, part: str) -> None:
        self._part = part

    def __call__(
        self, logger: object, method: str, event: structlog.typing.EventDict
    ) -> structlog.typing.EventDict:
        event.setdefault("part", self._part)
        return event
