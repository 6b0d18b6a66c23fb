"""Record live ZeroMQ sessions: subscribe to publishers and append every raw message to a file."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import structlog

from navi_auditor.provenance import provenance
from navi_auditor.settings import RecordingSettings
from navi_auditor.streams.format import StreamWriter
from navi_common import Subscriber
from navi_common.transport.curve import CurveKeys

log = structlog.get_logger()


@dataclass(frozen=True)
class RecordStats:
    """What a recording session captured."""

    messages: int
    chunks: int
    seconds: float
    path: Path


def record_stream(
    endpoints: Sequence[str],
    out: Path,
    settings: RecordingSettings,
    *,
    topics: Sequence[str] | None = None,
    duration_s: float | None = None,
    max_messages: int | None = None,
    stop: threading.Event | None = None,
    on_message: Callable[[int], None] | None = None,
    curve: CurveKeys | None = None,
) -> RecordStats:
    """Subscribe to ``endpoints`` and record raw messages until stopped.

    Payloads are stored exactly as received (no decode/re-encode), with topic and receive time.
    Chunks are flushed by size and by age, so memory stays bounded and a crash loses at most the
    last ``settings.chunk_seconds``.

    Args:
        endpoints: publisher endpoints to connect to, e.g. ``tcp://127.0.0.1:5559``.
        out: the new recording file.
        settings: chunking, fsync and poll interval.
        topics: topics to record (None: everything).
        duration_s: stop after this many seconds (None: until ``stop`` or Ctrl+C).
        max_messages: stop after this many messages.
        stop: set it (from another thread) to end the recording.
        on_message: called with the running message count after each message (progress, tests).
        curve: CURVE keys (secure mode), or None for a plain socket.

    Returns:
        :class:`RecordStats`.
    """
    stop = stop or threading.Event()
    meta = {**provenance(), "endpoints": list(endpoints), "topics": list(topics) if topics else None,
            "recording_settings": settings.model_dump(mode="json")}  # fmt: skip
    started = time.monotonic()
    deadline = None if duration_s is None else started + duration_s
    with (
        Subscriber(list(endpoints), topics=topics, latest_only=False, curve=curve) as subscriber,
        StreamWriter(out, settings.chunk_bytes, settings.chunk_seconds, settings.fsync, meta) as writer,
    ):
        log.info("auditor.record.started", endpoints=list(endpoints), out=str(out), topics=topics)
        try:
            while not stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                item = subscriber.recv_raw(settings.poll_ms)
                if item is not None:
                    writer.append(item[0], item[1])
                    if on_message is not None:
                        on_message(writer.messages)
                    if max_messages is not None and writer.messages >= max_messages:
                        break
                writer.maybe_flush()
        except KeyboardInterrupt:
            log.info("auditor.record.interrupted", messages=writer.messages)
        writer.flush()
        chunks = len(writer.summary()["chunks"])
        messages = writer.messages
    seconds = time.monotonic() - started
    log.info(
        "auditor.record.finished", out=str(out), messages=messages, chunks=chunks, seconds=round(seconds, 3)
    )
    return RecordStats(messages, chunks, seconds, Path(out))
