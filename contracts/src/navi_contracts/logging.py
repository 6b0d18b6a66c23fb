"""structlog setup, called once by each CLI entry point.

Console rendering on a TTY, JSON lines otherwise (services under a supervisor, CI). Modules call
``structlog.get_logger()`` at import time and never bind there. ``cache_logger_on_first_use`` is
enabled only when ``production=True`` because it breaks ``structlog.testing.capture_logs``.
"""

from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(level: str = "info", json: bool | None = None, production: bool = True) -> None:
    """Configure structlog for this process.

    Args:
        level: minimum level name (debug, info, warning, error).
        json: force JSON (True) or console (False) rendering; None picks JSON unless stderr is a TTY.
        production: cache loggers on first use (faster; not for tests).
    """
    if level.lower() not in _LEVELS:
        raise ValueError(f"unknown log level {level!r}; expected one of {sorted(_LEVELS)}")
    use_json = (not sys.stderr.isatty()) if json is None else json
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level.lower()]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=production,
    )
