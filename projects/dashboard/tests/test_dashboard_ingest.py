"""Socket feeds: row-0 extraction and rate-limited decoding on a real PUB/SUB pair."""

from __future__ import annotations

import time

import numpy as np

from navi_common import free_tcp_endpoint
from navi_contracts import decode, encode, topics
from navi_contracts.models import DistanceMatrix
from navi_dashboard.ingest import SubscriberFeed, frame_from_matrix, sample_from_event
from navi_dashboard.synthetic import room_matrix, training_event


def test_row_zero_is_copied_out_of_the_receive_buffer() -> None:
    received = decode(encode(room_matrix(3, 16, 4, step_id=11)), expected=DistanceMatrix)
    frame = frame_from_matrix(received, "environment", received_at=5.0)
    np.testing.assert_array_equal(frame.depth, received.depth[0])
    np.testing.assert_array_equal(frame.valid, received.valid_mask[0])
    assert frame.depth.flags.owndata and frame.valid.flags.owndata  # the big buffer can be freed
    assert (frame.batch_size, frame.step_id, frame.source, frame.received_at) == (3, 11, "environment", 5.0)
    assert frame.position == (0.0, 0.0, 1.5) and frame.yaw == 0.0


def test_telemetry_sample_keeps_type_payload_and_producer_time() -> None:
    event = training_event(4)
    sample = sample_from_event(event, received_at=2.0)
    assert sample.event_type == event.event_type and sample.wall_time == event.timestamp
    assert sample.payload == event.payload and sample.received_at == 2.0


def test_latest_only_feed_drains_everything_but_decodes_at_most_its_rate(producer_factory) -> None:
    endpoint = free_tcp_endpoint()
    handled_at: list[float] = []
    errors: list[tuple[str, str]] = []
    feed = SubscriberFeed(
        "environment",
        [endpoint],
        topics.DISTANCE_MATRIX,
        latest_only=True,
        handle=lambda payload, received_at: handled_at.append(time.monotonic()),
        on_error=lambda *args: errors.append(args),
        poll_timeout_ms=20,
        min_interval_s=0.1,
    )
    feed.start(lambda: None)
    try:
        producer_factory(endpoint, event_type=None, shape=(16, 4), rate_hz=400.0)
        deadline = time.monotonic() + 20.0
        while len(handled_at) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)  # polling the feed's counters, not synchronising with it
    finally:
        feed.stop()
    assert len(handled_at) >= 6 and not errors
    gaps = np.diff(handled_at)
    assert gaps.min() >= 0.1, gaps  # never decoded faster than min_interval_s
    assert feed.received > feed.handled  # the newer messages in between were drained, not decoded
