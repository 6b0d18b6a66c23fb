"""Recording file format: round trip, chunking, crash tails, corrupt chunks, refusal rules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from navi_auditor.streams.format import (
    FILE_MAGIC,
    RecordingFormatError,
    StreamReader,
    StreamRecord,
    StreamWriter,
)

records_strategy = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=2e9, allow_nan=False),
        st.text(min_size=0, max_size=20),
        st.binary(min_size=0, max_size=300),
    ),
    max_size=40,
)


def write(path: Path, records: list[tuple[float, str, bytes]], chunk_bytes: int = 256) -> StreamWriter:
    with StreamWriter(path, chunk_bytes=chunk_bytes, chunk_seconds=3600, fsync=False) as writer:
        for stamp, topic, payload in records:
            writer.append(topic, payload, stamp)
    return writer


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=records_strategy, chunk_bytes=st.integers(min_value=1024, max_value=4096))
def test_round_trip_keeps_bytes_topics_times_and_order(tmp_path_factory, records, chunk_bytes) -> None:
    path = tmp_path_factory.mktemp("rec") / "session.navirec"
    write(path, records, chunk_bytes)
    reader = StreamReader(path)
    assert list(reader) == [StreamRecord(stamp, topic, payload) for stamp, topic, payload in records]
    assert reader.report.damage is None
    assert reader.report.has_index


def test_chunks_are_flushed_by_size_so_memory_stays_bounded(tmp_path) -> None:
    path = tmp_path / "s.navirec"
    writer = StreamWriter(path, chunk_bytes=1024, chunk_seconds=3600, fsync=False)
    for i in range(100):
        writer.append("t", bytes(100), float(i))
    # 100 records of ~119 bytes: a chunk closes every 9 records; the open chunk is below the limit.
    assert len(writer.summary()["chunks"]) == 11
    assert len(writer._buffer) < 1024
    on_disk = StreamReader(path).scan()
    assert on_disk.messages == 99 and not on_disk.has_index  # flushed part is readable mid-session
    writer.close()
    assert StreamReader(path).scan().messages == 100


def test_age_flush_writes_an_old_chunk(tmp_path) -> None:
    path = tmp_path / "s.navirec"
    with StreamWriter(path, chunk_bytes=1 << 20, chunk_seconds=0.0, fsync=False) as writer:
        writer.append("t", b"x", 1.0)
        assert writer.maybe_flush()
        assert StreamReader(path).scan().messages == 1


def test_every_truncation_keeps_exactly_the_complete_chunks(tmp_path) -> None:
    records = [(float(i), f"topic{i % 3}", bytes([i]) * (i * 7 % 50)) for i in range(30)]
    full = tmp_path / "full.navirec"
    chunks = write(full, records, chunk_bytes=128).summary()["chunks"]
    data = full.read_bytes()
    starts = [int(chunk[0]) for chunk in chunks]
    ends = [*starts[1:], data.rindex(b"NIDX")]  # a data chunk ends where the next one (or the index) starts
    cut_path = tmp_path / "cut.navirec"
    edges = {edge + delta for edge in (16, starts[0], *ends, len(data)) for delta in (-1, 0, 1)}
    for cut in sorted({*range(16, len(data) + 1, 5), *edges} & set(range(16, len(data) + 1))):
        cut_path.write_bytes(data[:cut])
        reader = StreamReader(cut_path)
        got = list(reader)
        expected = sum(int(chunk[1]) for chunk, end in zip(chunks, ends, strict=True) if end <= cut)
        assert [r.receive_time for r in got] == [r[0] for r in records[:expected]], cut
        clean = (16, starts[0], *ends, len(data))  # after the header, the metadata chunk, any chunk
        assert (reader.report.damage is None) == (cut in clean), cut


def test_corrupt_chunk_stops_the_read_with_a_reason(tmp_path) -> None:
    path = tmp_path / "s.navirec"
    writer = write(path, [(float(i), "t", bytes(200)) for i in range(10)], chunk_bytes=256)
    second_chunk = int(writer.summary()["chunks"][1][0])
    data = bytearray(path.read_bytes())
    data[second_chunk + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    reader = StreamReader(path)
    assert len(list(reader)) == int(writer.summary()["chunks"][0][1])
    assert reader.report.damage == "chunk checksum mismatch"
    assert reader.report.damaged_at == second_chunk


def test_not_a_recording_and_wrong_version_are_refused(tmp_path) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"hello world, not a recording")
    with pytest.raises(RecordingFormatError, match="not a Navi recording"):
        StreamReader(junk)
    future = tmp_path / "future.navirec"
    future.write_bytes(FILE_MAGIC + (99).to_bytes(4, "little") + bytes(4))
    with pytest.raises(RecordingFormatError, match="format 99"):
        StreamReader(future)


def test_existing_file_is_never_overwritten(tmp_path) -> None:
    path = tmp_path / "s.navirec"
    path.write_bytes(b"precious")
    with pytest.raises(FileExistsError):
        StreamWriter(path)
    assert path.read_bytes() == b"precious"


def test_writer_survives_a_killed_process(tmp_path) -> None:
    """A child process writes and flushes, then dies without closing: the flushed chunks survive."""
    path = tmp_path / "s.navirec"
    pid = os.fork()
    if pid == 0:  # child: no cleanup, no close, no index
        writer = StreamWriter(path, chunk_bytes=64, chunk_seconds=3600, fsync=True)
        for i in range(20):
            writer.append("t", bytes(50), float(i))
        os._exit(0)
    os.waitpid(pid, 0)
    report = StreamReader(path).scan()
    assert report.messages == 20 and not report.has_index and report.damage is None


def test_replay_clock_scales_holds_backward_steps_and_flat_out() -> None:
    from navi_auditor.streams import ReplayClock

    clock = ReplayClock(2.0)
    assert [clock.offset(t) for t in (100.0, 101.0, 100.5, 104.0)] == [0.0, 0.5, 0.5, 2.0]
    flat = ReplayClock(0.0)
    assert [flat.offset(t) for t in (1.0, 50.0)] == [0.0, 0.0]
    with pytest.raises(ValueError):
        ReplayClock(-1.0)


def test_inspect_command_reports_counts_and_damage(tmp_path) -> None:
    import json

    from click.testing import CliRunner

    from navi_auditor.cli import main

    path = tmp_path / "s.navirec"
    write(path, [(1.0, "a", b"x"), (3.5, "b", b"yy"), (4.0, "a", b"z")])
    result = CliRunner().invoke(main, ["inspect", str(path)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.strip().splitlines()[-1])
    assert summary["messages"] == 3 and summary["topics"] == {"a": 2, "b": 1}
    assert summary["seconds"] == 3.0 and summary["closed_cleanly"] and summary["damage"] is None
    assert summary["metadata"] == {}
