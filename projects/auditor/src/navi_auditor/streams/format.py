"""Recording file format: append-only chunks of raw ZeroMQ messages with a closing index.

Why chunks: one write (and fsync) per chunk keeps the cost per message low, bounds the writer's
memory to one chunk, and makes a crash lose at most the chunk being filled. Every chunk carries
its own length and CRC32, so a reader stops cleanly at a torn or corrupt tail and keeps everything
before it. The index written on a clean close is only a summary (counts, topics, time span): the
chunks alone are the source of truth, so a file without an index is still complete up to its tail.

Layout (little-endian)::

    file    = header meta chunk* [index]
    header  = b"NAVIREC\\0" u32 version u32 reserved                          (16 bytes)
    meta    = b"NMET" u32 0 u32 json_bytes u32 crc32(json) json      (what produced the file)
    chunk   = b"NCHK" u32 record_count u32 payload_bytes u32 crc32(payload) payload
    payload = record*
    record  = f64 receive_time u16 topic_bytes u32 payload_bytes topic payload
    index   = b"NIDX" u32 0 u32 json_bytes u32 crc32(json) json               (summary, optional)
"""

from __future__ import annotations

import json
import os
import struct
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Self

import structlog

log = structlog.get_logger()

FILE_MAGIC = b"NAVIREC\0"
FORMAT_VERSION = 1
CHUNK_MAGIC = b"NCHK"
INDEX_MAGIC = b"NIDX"
META_MAGIC = b"NMET"
_KNOWN_MAGIC = (CHUNK_MAGIC, INDEX_MAGIC, META_MAGIC)
_FILE_HEADER = struct.Struct("<8sII")
_CHUNK_HEADER = struct.Struct("<4sIII")
_RECORD_HEADER = struct.Struct("<dHI")
MAX_TOPIC_BYTES = 0xFFFF
MAX_PAYLOAD_BYTES = 0xFFFFFFFF


class RecordingFormatError(ValueError):
    """The file is not a Navi recording (bad magic or version) or was given impossible input."""


@dataclass(frozen=True)
class StreamRecord:
    """One recorded message: when it arrived, its topic and its undecoded payload bytes."""

    receive_time: float
    topic: str
    payload: bytes


class StreamWriter:
    """Appends messages to a recording, one chunk at a time.

    Args:
        path: the file to create (parent folders are created; an existing file is refused).
        chunk_bytes: flush the open chunk once its records reach this many bytes.
        chunk_seconds: flush a non-empty chunk at least this often (see :meth:`maybe_flush`).
        fsync: fsync after every chunk, so flushed chunks survive a power loss too.
        metadata: JSON-serialisable provenance written first (endpoints, versions, git revision...).
    """

    def __init__(
        self,
        path: Path,
        chunk_bytes: int = 4 << 20,
        chunk_seconds: float = 1.0,
        fsync: bool = True,
        metadata: dict[str, Any] | None = None,
    ):
        self.path = Path(path)
        if self.path.exists():
            raise FileExistsError(f"{self.path} exists; recordings are append-only, pick a new name")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.chunk_bytes, self.chunk_seconds, self.fsync = chunk_bytes, chunk_seconds, fsync
        self._stream: BinaryIO = self.path.open("xb")
        self._stream.write(_FILE_HEADER.pack(FILE_MAGIC, FORMAT_VERSION, 0))
        meta = json.dumps(metadata or {}, sort_keys=True, default=str).encode("utf-8")
        self._stream.write(_CHUNK_HEADER.pack(META_MAGIC, 0, len(meta), zlib.crc32(meta)) + meta)
        self._buffer = bytearray()
        self._buffer_records = 0
        self._buffer_opened = time.monotonic()
        self._chunks: list[list[float]] = []  # [offset, records, first_time, last_time]
        self._first_time: float | None = None
        self._last_time = 0.0
        self.topics: Counter[str] = Counter()
        self.messages = 0
        self._sync()

    def append(self, topic: str, payload: bytes | memoryview, receive_time: float | None = None) -> None:
        """Add one message to the open chunk (flushing it first if it is full).

        Args:
            topic: topic name (UTF-8, at most 65535 bytes).
            payload: the raw message bytes, stored as they are.
            receive_time: seconds since the epoch; default: now.
        """
        topic_bytes = topic.encode("utf-8")
        if len(topic_bytes) > MAX_TOPIC_BYTES or len(payload) > MAX_PAYLOAD_BYTES:
            raise RecordingFormatError(
                f"topic or payload too large ({len(topic_bytes)}, {len(payload)} bytes)"
            )
        stamp = time.time() if receive_time is None else float(receive_time)
        if not self._buffer_records:
            self._buffer_opened = time.monotonic()
            self._chunk_first = stamp
        self._buffer += _RECORD_HEADER.pack(stamp, len(topic_bytes), len(payload))
        self._buffer += topic_bytes
        self._buffer += payload
        self._buffer_records += 1
        self._first_time = stamp if self._first_time is None else self._first_time
        self._last_time = stamp
        self.topics[topic] += 1
        self.messages += 1
        if len(self._buffer) >= self.chunk_bytes:
            self.flush()

    def maybe_flush(self) -> bool:
        """Flush the open chunk if it is older than ``chunk_seconds``; True when it did."""
        if self._buffer_records and time.monotonic() - self._buffer_opened >= self.chunk_seconds:
            self.flush()
            return True
        return False

    def flush(self) -> None:
        """Write the open chunk (one write, then flush and optionally fsync)."""
        if not self._buffer_records:
            return
        offset = self._stream.tell()
        header = _CHUNK_HEADER.pack(
            CHUNK_MAGIC, self._buffer_records, len(self._buffer), zlib.crc32(self._buffer)
        )
        self._stream.write(header + self._buffer)
        self._chunks.append([offset, self._buffer_records, self._chunk_first, self._last_time])
        self._buffer = bytearray()
        self._buffer_records = 0
        self._sync()

    def close(self) -> None:
        """Flush the open chunk and write the summary index; idempotent."""
        if self._stream.closed:
            return
        self.flush()
        summary = json.dumps(self.summary()).encode("utf-8")
        self._stream.write(_CHUNK_HEADER.pack(INDEX_MAGIC, 0, len(summary), zlib.crc32(summary)) + summary)
        self._sync()
        self._stream.close()

    def summary(self) -> dict[str, Any]:
        """Counts, topics, time span and chunk table of what was flushed so far."""
        return {
            "format_version": FORMAT_VERSION,
            "messages": self.messages,
            "topics": dict(self.topics),
            "first_time": self._first_time,
            "last_time": self._last_time if self._first_time is not None else None,
            "chunks": self._chunks,
        }

    def _sync(self) -> None:
        self._stream.flush()
        if self.fsync:
            os.fsync(self._stream.fileno())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@dataclass
class ReadReport:
    """What a full read found: counts and, for a damaged file, where and why it stopped."""

    chunks: int = 0
    messages: int = 0
    topics: Counter[str] = field(default_factory=Counter)
    first_time: float | None = None
    last_time: float | None = None
    has_index: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    damaged_at: int | None = None
    damage: str | None = None


class StreamReader:
    """Reads a recording chunk by chunk (memory bounded by one chunk).

    A torn or corrupt tail (a crash while writing) ends the stream at the last good chunk; the
    reason is in :attr:`report` and logged as ``auditor.recording.tail_ignored``.

    Args:
        path: the recording.

    Raises:
        RecordingFormatError: not a Navi recording, or another format version.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with self.path.open("rb") as stream:
            head = stream.read(_FILE_HEADER.size)
        if len(head) < _FILE_HEADER.size or head[:8] != FILE_MAGIC:
            raise RecordingFormatError(f"{self.path} is not a Navi recording (magic {head[:8]!r})")
        _, version, _ = _FILE_HEADER.unpack(head)
        if version != FORMAT_VERSION:
            raise RecordingFormatError(
                f"{self.path}: recording format {version}, this reader reads {FORMAT_VERSION}"
            )
        self.report = ReadReport()

    def __iter__(self) -> Iterator[StreamRecord]:
        """Every intact record, in file (= arrival) order."""
        self.report = ReadReport()
        with self.path.open("rb") as stream:
            stream.seek(_FILE_HEADER.size)
            while True:
                offset = stream.tell()
                chunk = self._read_chunk(stream, offset)
                if chunk is None:
                    return
                records = _parse_records(chunk[0], chunk[1])
                if records is None:
                    self._damaged(offset, "records overrun their chunk")
                    return
                self.report.chunks += int(chunk[0] > 0)  # the metadata chunk holds no records
                for record in records:
                    self._count(record)
                    yield record

    def scan(self) -> ReadReport:
        """Read the whole file once and return the :class:`ReadReport`."""
        for _ in self:
            pass
        return self.report

    def _read_chunk(self, stream: BinaryIO, offset: int) -> tuple[int, bytes] | None:
        """The next data chunk as ``(record_count, payload)``; None at the end, the index or damage."""
        head = stream.read(_CHUNK_HEADER.size)
        if not head:
            return None
        damage, payload, count, magic = None, b"", 0, b""
        if len(head) < _CHUNK_HEADER.size:
            damage = f"torn chunk header ({len(head)} of {_CHUNK_HEADER.size} bytes)"
        else:
            magic, count, size, crc = _CHUNK_HEADER.unpack(head)
            payload = stream.read(size) if magic in _KNOWN_MAGIC else b""
            if magic not in _KNOWN_MAGIC:
                damage = f"bad chunk magic {magic!r}"
            elif len(payload) < size:
                damage = f"torn chunk ({len(payload)} of {size} bytes)"
            elif zlib.crc32(payload) != crc:
                damage = "chunk checksum mismatch"
        if damage is not None:
            self._damaged(offset, damage)
            return None
        if magic == INDEX_MAGIC:
            self.report.has_index = True
            return None
        if magic == META_MAGIC:
            self.report.metadata = json.loads(payload)
            return 0, b""
        return count, payload

    def _count(self, record: StreamRecord) -> None:
        report = self.report
        report.messages += 1
        report.topics[record.topic] += 1
        report.first_time = record.receive_time if report.first_time is None else report.first_time
        report.last_time = record.receive_time

    def _damaged(self, offset: int, reason: str) -> None:
        self.report.damaged_at, self.report.damage = offset, reason
        log.warning("auditor.recording.tail_ignored", path=str(self.path), offset=offset, reason=reason)


def _parse_records(count: int, payload: bytes) -> list[StreamRecord] | None:
    """Split a chunk payload into ``count`` records; None when they do not fit exactly."""
    records: list[StreamRecord] = []
    view, position = memoryview(payload), 0
    for _ in range(count):
        if position + _RECORD_HEADER.size > len(payload):
            return None
        stamp, topic_size, body_size = _RECORD_HEADER.unpack_from(payload, position)
        position += _RECORD_HEADER.size
        end = position + topic_size + body_size
        if end > len(payload):
            return None
        try:
            topic = bytes(view[position : position + topic_size]).decode("utf-8")
        except UnicodeDecodeError:
            return None
        records.append(StreamRecord(stamp, topic, bytes(view[position + topic_size : end])))
        position = end
    return records if position == len(payload) else None
