"""Replay a recording on a PUB socket, in order, keeping the recorded relative timing."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from navi_auditor.streams.format import StreamReader
from navi_common import Publisher

log = structlog.get_logger()


@dataclass(frozen=True)
class ReplayStats:
    """What a replay sent."""

    messages: int
    dropped: int
    seconds: float
    damaged: str | None


class ReplayClock:
    """Turns recorded receive times into send offsets (seconds from the start of the replay).

    Offsets are the recorded spacing divided by ``speed`` and never decrease (a wall-clock step
    backwards in the recording is held, not replayed). ``speed == 0`` means as fast as possible.

    Args:
        speed: time scale: 2 plays twice as fast; 0 sends everything at once.
    """

    def __init__(self, speed: float) -> None:
        if speed < 0:
            raise ValueError(f"speed must be >= 0, got {speed}")
        self.speed = speed
        self._first: float | None = None
        self._latest = 0.0

    def offset(self, receive_time: float) -> float:
        """The send offset of the next message, recorded at ``receive_time``."""
        if self._first is None:
            self._first = receive_time
        if self.speed > 0:
            self._latest = max(self._latest, (receive_time - self._first) / self.speed)
        return self._latest


def replay_stream(
    path: Path,
    publisher: Publisher,
    speed: float = 1.0,
    *,
    wait_for_subscribers_ms: int = 0,
    stop: threading.Event | None = None,
) -> ReplayStats:
    """Publish every recorded message on ``publisher`` with the recorded spacing divided by ``speed``.

    Pacing waits on ``stop`` (an Event) with the time left until each message is due, so a replay
    can be interrupted at once; the schedule is absolute (start + offset), so waits do not drift.

    Args:
        path: the recording.
        publisher: a bound (or connected) publisher.
        speed: time scale (see :class:`ReplayClock`).
        wait_for_subscribers_ms: first wait for one subscriber, so nothing is sent into the void.
        stop: set it to end the replay early.

    Returns:
        :class:`ReplayStats`.

    Raises:
        PeerTimeoutError: ``wait_for_subscribers_ms`` passed without a subscriber.
    """
    clock = ReplayClock(speed)
    stop = stop or threading.Event()
    reader = StreamReader(path)
    if wait_for_subscribers_ms > 0:
        publisher.wait_for_subscribers(timeout_ms=wait_for_subscribers_ms)
    started = time.monotonic()
    sent, dropped = 0, 0
    for record in reader:
        delay = started + clock.offset(record.receive_time) - time.monotonic()
        if delay > 0 and stop.wait(delay):
            break
        if stop.is_set():
            break
        if publisher.publish_raw(record.topic, record.payload):
            sent += 1
        else:
            dropped += 1
    seconds = time.monotonic() - started
    damage = reader.report.damage
    log.info("auditor.replay.finished", path=str(path), sent=sent, dropped=dropped, seconds=round(seconds, 3))
    return ReplayStats(sent, dropped, seconds, damage)
