"""Termination signals handled like Ctrl+C by every Navi process.

``kill``, systemd, Docker, Kubernetes and CI stop a process with SIGTERM (and a closed SSH session
sends SIGHUP); a person presses Ctrl+C (SIGINT, or CTRL_BREAK_EVENT for a Windows child in its own
process group). All of them must end a Navi command the same way: stop at a safe point, write what
must be written, exit 0. :func:`on_termination` installs one handler for all of them for the
duration of a block and restores the previous handlers afterwards (so commands invoked in-process,
as tests do, leave the interpreter as they found it).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any]


def termination_signals() -> list[signal.Signals]:
    """The signals that mean "stop" on this platform."""
    names = ("SIGINT", "SIGTERM", "SIGBREAK") if sys.platform == "win32" else ("SIGINT", "SIGTERM", "SIGHUP")
    return [getattr(signal, name) for name in names if hasattr(signal, name)]


def raise_interrupt(signum: int, frame: FrameType | None) -> None:
    """A handler that turns any termination signal into ``KeyboardInterrupt`` (the Ctrl+C path)."""
    raise KeyboardInterrupt(f"signal {signum}")


def set_event(event: threading.Event) -> Handler:
    """A handler that only sets ``event``: the process stops at its next safe point."""

    def handler(signum: int, frame: FrameType | None) -> None:
        event.set()

    return handler


@contextmanager
def on_termination(handler: Handler) -> Iterator[None]:
    """Handle every termination signal with ``handler`` inside the block (main thread only).

    Args:
        handler: e.g. :func:`raise_interrupt` or :func:`set_event`.
    """
    if threading.current_thread() is not threading.main_thread():  # signals only reach the main thread
        yield
        return
    previous = {signum: signal.signal(signum, handler) for signum in termination_signals()}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
