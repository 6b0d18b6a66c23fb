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


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold termination signals over a block that must not be cut in half, then deliver them.

    Bookkeeping that writes two records of one event (a step counted and its metrics line) must run
    whole, or a Ctrl+C landing between them leaves a final checkpoint of a step whose metrics line
    was never written. A signal that arrives inside the block is remembered and, once the previous
    handlers are back, handed to them (``KeyboardInterrupt`` for Ctrl+C and, under a command,
    SIGTERM), so the stop happens at the end of the block instead of in its middle. Main thread
    only, like every signal handler; elsewhere the block runs unguarded.
    """
    arrived: list[tuple[int, FrameType | None]] = []

    def remember(signum: int, frame: FrameType | None) -> None:
        arrived.append((signum, frame))

    try:
        with on_termination(remember):
            yield
    finally:
        if arrived:
            first, frame = arrived[0]
            handler = signal.getsignal(first)  # the previous handler, back in place
            if callable(handler):
                handler(first, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(first)  # the default action, now that it is back
