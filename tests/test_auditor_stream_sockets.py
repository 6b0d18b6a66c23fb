"""Record/replay round trip over real sockets: what a recorder captured is replayed byte for byte,
in order, with the recorded spacing scaled by --speed. Readiness uses the XPUB subscription
handshake (no sleeps); every wait has a timeout."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path

from navi_auditor.settings import RecordingSettings
from navi_auditor.streams import StreamReader, record_stream, replay_stream
from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import decode, encode, topics
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_telemetry

GAPS_S = [0.0, 0.0, 0.25, 0.0, 0.4, 0.0, 0.0, 0.15]


def _messages() -> list[tuple[str, bytes]]:
    out = []
    for i in range(len(GAPS_S)):
        model = (
            sample_distance_matrix(batch=1, seed=i) if i % 3 == 0 else sample_action(batch=2, seed=i)
            if i % 3 == 1 else sample_telemetry(step_id=i)
        )  # fmt: skip
        topic = {0: topics.DISTANCE_MATRIX, 1: topics.ACTION, 2: topics.TELEMETRY_EVENT}[i % 3]
        out.append((topic, encode(model)))
    return out


def _record(tmp_path: Path, messages: list[tuple[str, bytes]]) -> Path:
    endpoint = free_tcp_endpoint()
    out = tmp_path / "session.navirec"
    settings = RecordingSettings(chunk_bytes=2048, chunk_seconds=0.05, fsync=False, poll_ms=20)
    pacing = threading.Event()  # never set: waited on with timeouts to space the messages
    with Publisher(endpoint) as publisher:
        recorder = threading.Thread(
            target=record_stream,
            args=([endpoint], out, settings),
            kwargs={"max_messages": len(messages), "duration_s": 20.0},
        )
        recorder.start()
        publisher.wait_for_subscribers(timeout_ms=5000)
        for (topic, payload), gap in zip(messages, GAPS_S, strict=True):
            pacing.wait(gap)
            assert publisher.publish_raw(topic, payload)
        recorder.join(timeout=20)
        assert not recorder.is_alive()
    return out


def test_recorded_session_replays_bytes_order_and_timing(tmp_path: Path) -> None:
    messages = _messages()
    path = _record(tmp_path, messages)
    recorded = list(StreamReader(path))
    assert [(r.topic, r.payload) for r in recorded] == messages  # raw bytes, no re-encoding
    assert decode(recorded[0].payload) == sample_distance_matrix(batch=1, seed=0)
    reader = StreamReader(path)
    reader.scan()
    assert reader.report.metadata["endpoints"] and "git_revision" in reader.report.metadata

    speed = 2.0
    endpoint = free_tcp_endpoint()
    received: list[tuple[str, bytes, float]] = []
    with Publisher(endpoint) as publisher, Subscriber(endpoint) as subscriber:
        replayer = threading.Thread(
            target=replay_stream, args=(path, publisher, speed), kwargs={"wait_for_subscribers_ms": 5000}
        )
        replayer.start()
        deadline = time.monotonic() + 15
        while len(received) < len(messages) and time.monotonic() < deadline:
            item = subscriber.recv_raw(100)
            if item is not None:
                received.append((item[0], item[1], time.monotonic()))
        replayer.join(timeout=10)
    assert [(topic, payload) for topic, payload, _ in received] == messages
    recorded_gaps = [b.receive_time - a.receive_time for a, b in itertools.pairwise(recorded)]
    replayed_gaps = [b[2] - a[2] for a, b in itertools.pairwise(received)]
    for want, got in zip(recorded_gaps, replayed_gaps, strict=True):
        assert abs(got - want / speed) < 0.06, (recorded_gaps, replayed_gaps)
    assert sum(replayed_gaps) > 0.8 * sum(GAPS_S) / speed
