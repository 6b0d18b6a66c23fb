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


class TerminalSink:
    """Notes as lines, the status as one line rewritten in place (cut to the terminal width)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._status = ""

    def _show(self, text: str) -> None:
        width = shutil.get_terminal_size((160, 24)).columns
        self._stream.write("\r\x1b[2K" + text[: max(width - 1, 20)])
        self._stream.flush()

    def note(self, text: str) -> None:
        self._stream.write("\r\x1b[2K" + text + "\n")
        if self._status:
            self._show(self._status)
        else:
            self._stream.flush()

    def status(self, text: str) -> None:
        self._status = text
        self._show(text)

    def close(self) -> None:
        if self._status:
            self._stream.write("\n")
            self._stream.flush()
            self._status = ""


def as_sink(progress: ProgressSink | Callable[[str], None] | None) -> ProgressSink | None:
    """Accept a sink, or a plain ``str -> None`` callback (every message becomes a line)."""
    if progress is None or hasattr(progress, "status"):
        return progress  # type: ignore[return-value]
    return LineSink(progress)  # type: ignore[arg-type]
