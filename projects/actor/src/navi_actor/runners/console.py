"""Where the trainer's words for people go: notes that stay, and one status line that updates.

On a terminal the status line is rewritten in place (one compact live line); elsewhere (a pipe, CI,
a log file) every status is its own line, at the trainer's ``progress_seconds`` pace. Structured
JSON events are not printed here: they go to the run folder's ``logs/events.jsonl``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Protocol, TextIO


class ProgressSink(Protocol):
    """What the runner tells a person: a note (starting, resuming, phase) or the live status."""

    def note(self, text: str) -> None:
        """A line that stays on screen."""

    def status(self, text: str) -> None:
        """The current status; replaces the previous one on a terminal."""

    def close(self) -> None:
        """End the live line so the next output starts on a fresh line."""


class LineSink:
    """Every note and status as its own line, through ``write`` (e.g. ``click.echo``)."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write

    def note(self, text: str) -> None:
        self._write(text)

    def status(self, text: str) -> None:
        self._write(text)

    def close(self) -> None:
        """Nothing is pending: every line ended as it was written."""


def wrap_status(text: str, width: int) -> list[str]:
    """Split a ``a | b | c`` status at its separators into lines no wider than ``width``."""
    lines: list[str] = []
    for part in text.split(" | "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " | " + part
        else:
            lines.append(part[:width])
    return lines


class TerminalSink:
    """Notes as lines; the status rewritten in place, wrapped at ``|`` to the terminal's width."""

    def __init__(self, stream: TextIO, width: int | None = None) -> None:
        self._stream = stream
        self._width = width
        self._status = ""
        self._shown_lines = 0

    def _clear(self) -> None:
        """Erase the status lines shown last (cursor up one line per extra line)."""
        self._stream.write("\r\x1b[2K" + "\x1b[1A\x1b[2K" * max(self._shown_lines - 1, 0))
        self._shown_lines = 0

    def _show(self) -> None:
        width = self._width or shutil.get_terminal_size((160, 24)).columns
        lines = wrap_status(self._status, max(width - 1, 20))
        self._clear()
        self._stream.write("\n".join(lines))
        self._shown_lines = len(lines)
        self._stream.flush()

    def note(self, text: str) -> None:
        self._clear()
        self._stream.write(text + "\n")
        if self._status:
            self._show()
        else:
            self._stream.flush()

    def status(self, text: str) -> None:
        self._status = text
        self._show()

    def close(self) -> None:
        if self._status:
            self._stream.write("\n")
            self._stream.flush()
            self._status, self._shown_lines = "", 0


def as_sink(progress: ProgressSink | Callable[[str], None] | None) -> ProgressSink | None:
    """Accept a sink, or a plain ``str -> None`` callback (every message becomes a line)."""
    if progress is None or hasattr(progress, "status"):
        return progress  # type: ignore[return-value]
    return LineSink(progress)  # type: ignore[arg-type]
