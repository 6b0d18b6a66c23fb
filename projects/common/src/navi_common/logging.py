"""structlog setup, called once by each CLI entry point.

Console rendering on a TTY, JSON lines otherwise (services under a supervisor, CI). Modules call
``structlog.get_logger()`` at import time and never bind there. ``cache_logger_on_first_use`` is
enabled only when ``production=True`` because it breaks ``structlog.testing.capture_logs``.

:func:`log_to_file` additionally copies every event, as a JSON line, into a file for as long as a
block runs: a training run keeps its own log in ``artifacts/runs/<run_id>/logs/`` whatever the
console shows.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import structlog

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class _FileTee:
    """A processor that appends each event as one JSON line to every file registered with it."""

    def __init__(self) -> None:
        self._files: list[Any] = []
        self._lock = threading.Lock()
        self._render = structlog.processors.JSONRenderer(default=str, sort_keys=True)

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
        if self._files:
            record = dict(event_dict)
            record.setdefault("level", method_name)
            line = str(self._render(logger, method_name, record)) + "\n"
            with self._lock:
                for stream in self._files:
                    stream.write(line)
                    stream.flush()  # a crash must not lose the last events
        return event_dict

    def add(self, stream: Any) -> None:
        with self._lock:
            self._files.append(stream)

    def remove(self, stream: Any) -> None:
        with self._lock:
            self._files.remove(stream)


_TEE = _FileTee()


def _ensure_tee() -> None:
    """Put the tee just before the renderer of the current structlog configuration (once)."""
    processors = list(structlog.get_config()["processors"])
    if _TEE not in processors:
        structlog.configure(processors=[*processors[:-1], _TEE, *processors[-1:]])


@contextlib.contextmanager
def log_to_file(path: Path) -> Iterator[Path]:
    """Copy every log event of this process into ``path`` (JSON lines, appended) inside the block.

    Works with or without :func:`configure_logging` (the tee is added to whatever configuration is
    active). Each line is flushed as it is written. Loggers cached before a later reconfiguration
    keep their processors, which is why :func:`configure_logging` installs the tee up front.

    Args:
        path: the log file; its folder is created.

    Yields:
        ``path``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    _ensure_tee()
    with path.open("a", encoding="utf-8") as stream:
        _TEE.add(stream)
        try:
            yield path
        finally:
            _TEE.remove(stream)


class _ConsoleFloor:
    """Drops events below a level from the console only (after the file tee has copied them)."""

    def __init__(self, level: str) -> None:
        self._floor = _LEVELS[level]

    def __call__(self, logger: Any, method_name: str, event_dict: MutableMapping[str, Any]) -> Any:
        if _LEVELS.get(str(event_dict.get("level", method_name)), logging.INFO) < self._floor:
            raise structlog.DropEvent
        return event_dict


class _Lines(list[str]):
    """An in-memory "file" for the tee: each written event line is kept."""

    def write(self, line: str) -> None:
        self.append(line)

    def flush(self) -> None:
        """Nothing to flush: the lines are in memory."""


@contextlib.contextmanager
def remembering_events() -> Iterator[list[str]]:
    """Keep every log event of this process emitted inside the block, as JSON lines, in a list.

    For a log file that can only be opened later: a trainer's run folder is named after the model it
    builds, so the events of building the environment are written into it once it exists.
    """
    _ensure_tee()
    lines = _Lines()
    _TEE.add(lines)
    try:
        yield lines
    finally:
        _TEE.remove(lines)


def configure_logging(
    level: str = "info", json: bool | None = None, production: bool = True, console_level: str | None = None
) -> None:
    """Configure structlog for this process.

    Args:
        level: minimum level name (debug, info, warning, error).
        json: force JSON (True) or console (False) rendering; None picks JSON unless stderr is a TTY.
        production: cache loggers on first use (faster; not for tests).
        console_level: a higher floor for the console alone: files opened with :func:`log_to_file`
            still get every event from ``level`` up (a trainer on a terminal shows its progress line
            and warnings, while its run folder keeps the whole structured log).
    """
    if level.lower() not in _LEVELS:
        raise ValueError(f"unknown log level {level!r}; expected one of {sorted(_LEVELS)}")
    floor: list[structlog.typing.Processor] = [_ConsoleFloor(console_level)] if console_level else []
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
            _TEE,
            *floor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level.lower()]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=production,
    )
