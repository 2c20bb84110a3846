"""Structured logs: structlog everywhere, stdlib loggers of libraries routed through it."""

from __future__ import annotations

import logging
import sys

import structlog

# httpx logs every request at info: noise on a terminal, and on an MCP server's stderr.
NOISY = ("aiokafka", "faust", "mode", "uvicorn.access", "kafka", "httpx")


def configure_logging(level: str = "info", fmt: str = "console") -> None:
    numeric = logging.getLevelName(level.upper())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(foreign_pre_chain=shared, processor=renderer)
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    for name in NOISY:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
