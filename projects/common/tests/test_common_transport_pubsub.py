"""PUB/SUB helpers: delivery, per-topic latest-only, malformed-message tolerance, reconnects."""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest
import zmq
from structlog.testing import capture_logs

from navi_common import PeerTimeoutError, Publisher, Subscriber, free_tcp_endpoint
from navi_common.transport.sockets import new_socket
from navi_contracts import ContractError, DistanceMatrix, TelemetryEvent, encode, encode_frames, topics
from navi_contracts.samples import sample_action, sample_distance_matrix, sample_telemetry

pytestmark = pytest.mark.timeout(30)


def _matrix(step: int) -> DistanceMatrix:
    return sample_distance_matrix(batch=1, azimuth=8, elevation=4, seed=step)


def test_ordered_subscriber_gets_every_message_in_order(endpoint: str) -> None:
    with Publisher(endpoint) as publisher, Subscriber(endpoint, [topics.TELEMETRY_EVENT]) as subscriber:
        publisher.wait_for_subscribers(topics.TELEMETRY_EVENT, timeout_ms=5000)
        for step in range(20):
            assert publisher.publish(topics.TELEMETRY_EVENT, sample_telemetry(step))
        received = [subscriber.recv(timeout_ms=2000) for _ in range(20)]
        assert [item[1].step_id for item in received if item is not None] == list(range(20))
        assert all(item is not None and item[0] == topics.TELEMETRY_EVENT for item in received)
        assert subscriber.recv(timeout_ms=0) is None


def test_latest_only_keeps_the_newest_message_per_topic() -> None:
    # inproc: a send completes into the receiver's pipe, so everything published below is
    # available to the subscriber's first drain; that makes the conflation exactly observable.
    endpoint = f"inproc://latest-{uuid.uuid4().hex}"
    wanted = [topics.TELEMETRY_EVENT, topics.DISTANCE_MATRIX]
    with Publisher(endpoint) as publisher, Subscriber(endpoint, wanted, latest_only=True) as sub:
        publisher.wait_for_subscribers(topics.TELEMETRY_EVENT, timeout_ms=5000)
        publisher.wait_for_subscribers(topics.DISTANCE_MATRIX, timeout_ms=5000)
        for step in range(5):
            publisher.publish(topics.TELEMETRY_EVENT, sample_telemetry(step))
        for step in range(3):
            publisher.publish(topics.DISTANCE_MATRIX, _matrix(step))
        first, second = sub.recv(timeout_ms=2000), sub.recv(timeout_ms=2000)
        assert first is not None and second is not None
        assert first[0] == topics.TELEMETRY_EVENT and first[1].step_id == 4
        assert second[0] == topics.DISTANCE_MATRIX and second[1] == _matrix(2)
        assert sub.recv(timeout_ms=0) is None


def test_latest_only_over_tcp_never_goes_backwards(endpoint: str) -> None:
    with Publisher(endpoint, send_hwm=1000) as publisher, Subscriber(endpoint, latest_only=True) as sub:
        publisher.wait_for_subscribers(timeout_ms=5000)
        for step in range(50):
            publisher.publish(topics.TELEMETRY_EVENT, sample_telemetry(step))
            publisher.publish(topics.ACTION, sample_action(batch=1, seed=step))
        last_seen = {topics.TELEMETRY_EVENT: -1, topics.ACTION: -1}
        deadline = time.monotonic() + 10
        while min(last_seen.values()) < 49 and time.monotonic() < deadline:
            item = sub.recv(timeout_ms=1000)
            assert item is not None
            topic, model = item
            assert model.step_id > last_seen[topic]  # type: ignore[attr-defined]
            last_seen[topic] = model.step_id  # type: ignore[attr-defined]
        assert last_seen == {topics.TELEMETRY_EVENT: 49, topics.ACTION: 49}


@pytest.mark.parametrize("latest_only", [False, True])
def test_malformed_messages_are_logged_and_skipped(endpoint: str, latest_only: bool) -> None:
    if latest_only:
        # Over TCP the first drain may run before the valid telemetry has arrived (seen on a loaded
        # CI box), and then the junk it supersedes is rightly decoded; inproc delivers every send
        # into the pipe before the subscriber reads, so the conflation below is exact.
        endpoint = f"inproc://malformed-{uuid.uuid4().hex}"
    raw = new_socket(zmq.XPUB)
    raw.bind(endpoint)
    try:
        with Subscriber(endpoint, latest_only=latest_only) as sub:
            assert raw.poll(5000, zmq.POLLIN), "no subscription arrived"
            raw.recv()
            with capture_logs() as logs:
                raw.send_multipart([topics.TELEMETRY_EVENT.encode(), b"\xc1junk"])
                raw.send_multipart([b"three", b"frames", b"here"])
                raw.send_multipart([b"\xff\xfe", *encode_frames(sample_telemetry())])
                raw.send_multipart([topics.DISTANCE_MATRIX.encode(), *encode_frames(sample_telemetry())])
                raw.send_multipart([topics.TELEMETRY_EVENT.encode(), *encode_frames(sample_telemetry(7))])
                deadline = time.monotonic() + 5
                item = None
                while item is None and time.monotonic() < deadline:
                    item = sub.recv(timeout_ms=1000)
            assert item is not None
            assert item[0] == topics.TELEMETRY_EVENT and isinstance(item[1], TelemetryEvent)
            assert item[1].step_id == 7
            dropped = [entry for entry in logs if entry["event"] == "contracts.subscriber.message_dropped"]
            reasons = " | ".join(str(entry["reason"]) for entry in dropped)
            # Latest-only never decodes the junk telemetry payload: the valid one superseded it.
            expected_drops = 3 if latest_only else 4
            assert len(dropped) == expected_drops, reasons
            # b"\xc1junk" (only in order) and [b"three", b"frames", b"here"]
            assert reasons.count("malformed header frame") == (1 if latest_only else 2)
            assert "not UTF-8" in reasons
            assert "expected kind 'distance_matrix', got 'telemetry_event'" in reasons
            assert sub.dropped == expected_drops
    finally:
        raw.close(linger=0)


def test_recv_raw_returns_the_published_bytes(endpoint: str) -> None:
    event = sample_telemetry(3)
    with Publisher(endpoint) as publisher, Subscriber(endpoint) as subscriber:
        publisher.wait_for_subscribers(timeout_ms=5000)
        publisher.publish(topics.TELEMETRY_EVENT, event)
        assert subscriber.recv_raw(timeout_ms=2000) == (topics.TELEMETRY_EVENT, encode(event))
        publisher.publish_raw(topics.TELEMETRY_EVENT, encode(event))  # replay path
        replayed = subscriber.recv(timeout_ms=2000)
        assert replayed is not None and replayed[1] == event


def test_subscriber_receives_from_several_publishers() -> None:
    env_endpoint, actor_endpoint = free_tcp_endpoint(), free_tcp_endpoint()
    with (
        Publisher(env_endpoint) as env_pub,
        Publisher(actor_endpoint) as actor_pub,
        Subscriber([env_endpoint, actor_endpoint]) as sub,
    ):
        env_pub.wait_for_subscribers(timeout_ms=5000)
        actor_pub.wait_for_subscribers(timeout_ms=5000)
        env_pub.publish(topics.DISTANCE_MATRIX, _matrix(0))
        actor_pub.publish(topics.TELEMETRY_EVENT, sample_telemetry(1))
        got = {item[0] for item in (sub.recv(2000), sub.recv(2000)) if item is not None}
        assert got == {topics.DISTANCE_MATRIX, topics.TELEMETRY_EVENT}


def test_subscriber_reconnects_when_the_publisher_restarts(endpoint: str) -> None:
    with Subscriber(endpoint, [topics.TELEMETRY_EVENT]) as sub:
        with Publisher(endpoint) as first:
            first.wait_for_subscribers(topics.TELEMETRY_EVENT, timeout_ms=5000)
            first.publish(topics.TELEMETRY_EVENT, sample_telemetry(1))
            assert sub.recv(timeout_ms=2000) is not None
        with Publisher(endpoint) as second:  # same endpoint; ZeroMQ reconnects the subscriber
            # The SUB re-sends its subscription from inside its own socket calls: keep it pumped.
            deadline = time.monotonic() + 10
            while True:
                assert sub.recv(timeout_ms=10) is None
                try:
                    second.wait_for_subscribers(topics.TELEMETRY_EVENT, timeout_ms=10)
                    break
                except PeerTimeoutError:
                    assert time.monotonic() < deadline, "subscriber never reconnected"
            second.publish(topics.TELEMETRY_EVENT, sample_telemetry(2))
            item = sub.recv(timeout_ms=2000)
            assert item is not None and item[1].step_id == 2


def test_publisher_refuses_a_model_on_the_wrong_topic(endpoint: str) -> None:
    with Publisher(endpoint) as publisher, pytest.raises(ContractError, match="carries DistanceMatrix"):
        publisher.publish(topics.DISTANCE_MATRIX, sample_telemetry())


def test_wait_for_subscribers_times_out(endpoint: str) -> None:
    with Publisher(endpoint) as publisher:
        started = time.monotonic()
        with pytest.raises(PeerTimeoutError, match="0 of 1 subscribers"):
            publisher.wait_for_subscribers(topics.ACTION, timeout_ms=100)
        assert time.monotonic() - started < 3


def test_recv_times_out_with_none(endpoint: str) -> None:
    with Subscriber(endpoint) as sub:
        started = time.monotonic()
        assert sub.recv(timeout_ms=50) is None
        assert sub.recv_raw(timeout_ms=0) is None
        assert time.monotonic() - started < 3


@pytest.mark.parametrize("zero_copy", [False, True])
def test_published_arrays_arrive_as_frames_for_every_subscriber(endpoint: str, zero_copy: bool) -> None:
    matrix = sample_distance_matrix(batch=2, azimuth=128, elevation=64)  # 64 KiB frames: not copied by pyzmq
    with (
        Publisher(endpoint, multipart=zero_copy) as publisher,
        Subscriber(endpoint, [topics.DISTANCE_MATRIX]) as decoder,
        Subscriber(endpoint, [topics.DISTANCE_MATRIX]) as recorder,
    ):
        publisher.wait_for_subscribers(topics.DISTANCE_MATRIX, count=2, timeout_ms=5000)
        publisher.publish(topics.DISTANCE_MATRIX, matrix)
        received = decoder.recv(timeout_ms=2000)
        assert received is not None and received[1] == matrix
        raw = recorder.recv_raw(timeout_ms=2000)  # the frames joined into encode's one buffer
        assert raw == (topics.DISTANCE_MATRIX, encode(matrix))


def test_publish_copies_arrays_unless_asked_not_to(endpoint: str) -> None:
    """By default the caller may reuse its arrays at once: what was published is what arrives."""
    depth = np.zeros((1, 128, 128), dtype=np.float32)  # 64 KiB: pyzmq would send it without copying
    matrix = sample_distance_matrix(batch=1, azimuth=128, elevation=128, with_delta=False)
    matrix = matrix.model_copy(update={"depth": depth})
    with Publisher(endpoint) as publisher, Subscriber(endpoint) as subscriber:
        publisher.wait_for_subscribers(timeout_ms=5000)
        publisher.publish(topics.DISTANCE_MATRIX, matrix)
        depth[:] = 0.5  # the producer writes its next observation into the same buffer
        received = subscriber.recv(timeout_ms=2000)
    assert received is not None
    assert isinstance(received[1], DistanceMatrix) and float(received[1].depth.max()) == 0.0
