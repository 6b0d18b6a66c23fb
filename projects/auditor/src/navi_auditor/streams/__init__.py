"""ZeroMQ stream recording (append-only chunked files) and replay."""

from navi_auditor.streams.format import (
    ReadReport,
    RecordingFormatError,
    StreamReader,
    StreamRecord,
    StreamWriter,
)
from navi_auditor.streams.recorder import RecordStats, record_stream
from navi_auditor.streams.replayer import ReplayClock, ReplayStats, replay_stream

__all__ = [
    "ReadReport",
    "RecordStats",
    "RecordingFormatError",
    "ReplayClock",
    "ReplayStats",
    "StreamReader",
    "StreamRecord",
    "StreamWriter",
    "record_stream",
    "replay_stream",
]
