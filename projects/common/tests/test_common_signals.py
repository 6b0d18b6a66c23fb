"""Termination signals handled like Ctrl+C, for the duration of a block only."""

from __future__ import annotations

import os
import signal
import sys
import threading

import pytest

from navi_common.signals import (
    interrupts_deferred,
    on_termination,
    raise_interrupt,
    set_event,
    termination_signals,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_every_stop_signal_sets_the_event_and_the_old_handlers_come_back() -> None:
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} <= set(termination_signals())
    before = {signum: signal.getsignal(signum) for signum in termination_signals()}
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        stop = threading.Event()
        with on_termination(set_event(stop)):
            os.kill(os.getpid(), signum)
            assert stop.wait(5.0)  # the handler runs in the main thread, at once
    assert {signum: signal.getsignal(signum) for signum in termination_signals()} == before


def test_raise_interrupt_turns_sigterm_into_keyboard_interrupt() -> None:
    with pytest.raises(KeyboardInterrupt), on_termination(raise_interrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        threading.Event().wait(5.0)  # interrupted by the handler long before this times out


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_inside_a_deferred_block_interrupts_only_after_the_block(signum: int) -> None:
    finished = []
    with pytest.raises(KeyboardInterrupt), on_termination(raise_interrupt), interrupts_deferred():
        os.kill(os.getpid(), signum)
        for _ in range(1000):  # many bytecode boundaries where an undeferred handler would run
            pass
        finished.append(True)
    assert finished == [True]


def test_a_deferred_block_without_a_signal_changes_nothing() -> None:
    before = {signum: signal.getsignal(signum) for signum in termination_signals()}
    with interrupts_deferred():
        pass
    assert {signum: signal.getsignal(signum) for signum in termination_signals()} == before


def test_a_deferred_signal_reaches_an_event_handler_after_the_block() -> None:
    stop = threading.Event()
    with on_termination(set_event(stop)):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            assert not stop.wait(0.2)  # held while the block runs
        assert stop.is_set()
