"""Raw keyboard input and full-screen drawing on a terminal.

POSIX (Linux, macOS, over SSH): the terminal is put in cbreak mode with termios (no echo, no line
buffering, but Ctrl+C still raises KeyboardInterrupt) and read with select. Windows: keys come from
``msvcrt`` (already unbuffered and unechoed), its two-byte arrow/function codes are translated to
the ANSI sequences the key parser reads, and the console is switched to ANSI (virtual terminal)
output for the full-screen drawing. Either way the terminal is restored on every exit path,
including exceptions and Ctrl+C, by the context manager. Without a TTY (CI, pipes) nothing is
changed and no keys are read.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Any, Self, TextIO

if sys.platform == "win32":
    import msvcrt
else:
    import select
    import termios
    import tty

HIDE_CURSOR, SHOW_CURSOR = "\x1b[?25l", "\x1b[?25h"
ALT_SCREEN_ON, ALT_SCREEN_OFF = "\x1b[?1049h", "\x1b[?1049l"
HOME, CLEAR_LINE_END = "\x1b[H", "\x1b[K"

# msvcrt.getch() returns b"\xe0" or b"\x00" followed by a scan code for arrows and function keys.
_WINDOWS_PREFIXES = (0x00, 0xE0)
_WINDOWS_SCAN_TO_ANSI = {b"H": b"\x1b[A", b"P": b"\x1b[B", b"M": b"\x1b[C", b"K": b"\x1b[D"}
_POLL_S = 0.01


def windows_keys_to_ansi(raw: bytes) -> bytes:
    """Translate msvcrt key bytes to what a POSIX terminal sends (arrows -> ``ESC [ A..D``).

    Scan codes with no ANSI twin (F-keys, Home, ...) are dropped rather than read as letters.
    """
    out = bytearray()
    index = 0
    while index < len(raw):
        byte = raw[index]
        if byte in _WINDOWS_PREFIXES and index + 1 < len(raw):
            out += _WINDOWS_SCAN_TO_ANSI.get(raw[index + 1 : index + 2], b"")
            index += 2
            continue
        if byte not in _WINDOWS_PREFIXES:
            out.append(byte)
        index += 1
    return bytes(out)


def _enable_windows_ansi() -> None:
    """Let the Windows console interpret ANSI escapes (ENABLE_VIRTUAL_TERMINAL_PROCESSING)."""
    if sys.platform == "win32":
        import ctypes

        kernel32 = ctypes.windll.kernel32
        handle = kernel32.GetStdHandle(-11)  # STD_OUTPUT_HANDLE
        mode = ctypes.c_uint32()
        if kernel32.GetConsoleMode(handle, ctypes.byref(mode)):
            kernel32.SetConsoleMode(handle, mode.value | 0x0004)


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
            if sys.platform == "win32":
                _enable_windows_ansi()
                self._saved = []  # nothing to restore but the screen
            else:
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
            if sys.platform != "win32":
                termios.tcsetattr(self.stdin.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None
            self.stdout.write(SHOW_CURSOR + ALT_SCREEN_OFF)
            self.stdout.flush()

    def read(self, timeout_s: float) -> bytes:
        """Bytes typed so far, waiting at most ``timeout_s`` for the first one (b"" if none)."""
        if not self.interactive:
            return b""
        if sys.platform == "win32":
            return self._read_windows(timeout_s)
        return self._read_posix(timeout_s)

    def _read_posix(self, timeout_s: float) -> bytes:
        if sys.platform != "win32":
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
        raise RuntimeError("termios key reading is POSIX-only")

    def _read_windows(self, timeout_s: float) -> bytes:
        """msvcrt has no select(): poll for the first key, then take everything already typed."""
        if sys.platform == "win32":
            deadline = time.monotonic() + max(0.0, timeout_s)
            while not msvcrt.kbhit():
                if time.monotonic() >= deadline:
                    return b""
                time.sleep(_POLL_S)
            data = bytearray()
            while msvcrt.kbhit():
                data += msvcrt.getch()
            return windows_keys_to_ansi(bytes(data))
        raise RuntimeError("msvcrt key reading is Windows-only")

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
