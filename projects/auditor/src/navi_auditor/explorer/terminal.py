"""Raw keyboard input and full-screen drawing on a terminal (works over SSH: termios + select).

The terminal is put in cbreak mode (no echo, no line buffering, but Ctrl+C still raises
KeyboardInterrupt) and restored on every exit path, including exceptions and Ctrl+C, by the
context manager. Without a TTY (CI, pipes) nothing is changed and no keys are read.
"""

from __future__ import annotations

import os
import select
import sys
import termios
import tty
from types import TracebackType
from typing import Any, Self, TextIO

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"
HOME, CLEAR_LINE_END = "\x1b[H", "\x1b[K"


class Terminal:
    """Keyboard reader and screen painter.

    Args:
        stdin: input stream (its file descriptor is read raw when it is a TTY).
        stdout: output stream.
        interactive: None -> decide from ``stdin.isatty()``.
    """

    def __init__(
        self, stdin: TextIO | None = None, stdout: TextIO | None = None, interactive: bool | None = None
    ):
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.interactive = self.stdin.isatty() if interactive is None else interactive
        self._saved: list[Any] | None = None

    def __enter__(self) -> Self:
        if self.interactive:
            fd = self.stdin.fileno()
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
            self.stdout.write(ALT_SCREEN_ON + HIDE_CURSOR)
            self.stdout.flush()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.restore()

    def restore(self) -> None:
        """Give the terminal back as it was (idempotent)."""
        if self._saved is not None:
            termios.tcsetattr(self.stdin.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None
            self.stdout.write(SHOW_CURSOR + ALT_SCREEN_OFF)
            self.stdout.flush()

    def read(self, timeout_s: float) -> bytes:
        """Bytes typed so far, waiting at most ``timeout_s`` for the first one (b"" if none)."""
        if not self.interactive:
            return b""
        fd = self.stdin.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, timeout_s))
        if not ready:
            return b""
        data = os.read(fd, 1024)
        # An escape sequence can arrive split across reads: take what follows immediately.
        while data.endswith(b"\x1b") or data[-3:-1] == b"\x1b[":
            more, _, _ = select.select([fd], [], [], 0.01)
            if not more:
                break
            data += os.read(fd, 1024)
        return data

    def columns(self, fallback: int = 200) -> int:
        """Width of the output terminal in characters (``fallback`` when it is not a terminal)."""
        try:
            return os.get_terminal_size(self.stdout.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return fallback

    def draw(self, lines: list[str]) -> None:
        """Repaint the screen from the top-left corner (interactive) or print the lines (otherwise)."""
        if self.interactive:
            self.stdout.write(HOME + "".join(line + CLEAR_LINE_END + "\r\n" for line in lines))
        else:
            self.stdout.write("\n".join(lines) + "\n")
        self.stdout.flush()
