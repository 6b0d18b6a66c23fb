"""REQ/REP helpers on 127.0.0.1: replies, timeouts, recovery after a peer restart, garbage tolerance."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
import zmq

from navi_common import PeerTimeoutError, RemoteError, ReqClient
from navi_common.transport.sockets import new_socket
from navi_contracts import (
    ContractError,
    ErrorReply,
    StepRequest,
    StepResult,
    TelemetryEvent,
    WireModel,
    decode_frames,
    encode,
    encode_frames,
)
from navi_contracts.samples import sample_action, sample_step_result, sample_telemetry

pytestmark = pytest.mark.timeout(30)


def _step_handler(request: WireModel) -> WireModel:
    """Echo the request id in a StepResult; a reset with seed 13 makes the handler crash."""
    assert isinstance(request, StepRequest)
    if request.seed == 13:
        raise RuntimeError("seed 13 is unlucky")
    result = sample_step_result(batch=2, azimuth=4, elevation=2)
    return result.model_copy(update={"request_id": request.request_id})


def test_request_gets_reply(endpoint: str, serve: Callable[..., Any]) -> None:
    with serve(endpoint, _step_handler), ReqClient(endpoint, timeout_ms=2000, retries=0) as client:
        for request_id in range(3):
            reply = client.request(StepRequest(request_id=request_id, reset=True), expected=StepResult)
            assert reply.request_id == request_id
        reply = client.request(StepRequest(request_id=9, actions=sample_action(batch=2)), expected=StepResult)
        assert reply.observation.batch_size == 2


def test_timeout_raises_after_retries_and_never_hangs(endpoint: str) -> None:
    with ReqClient(endpoint, timeout_ms=100, retries=2) as client:
        started = time.monotonic()
        with pytest.raises(PeerTimeoutError, match="after 3 attempts of 100 ms each"):
            client.request(StepRequest(request_id=1, reset=True))
        elapsed = time.monotonic() - started
    assert 0.29 < elapsed < 3.0


def test_client_recovers_when_the_server_restarts(endpoint: str, serve: Callable[..., Any]) -> None:
    with ReqClient(endpoint, timeout_ms=300, retries=0) as client:
        with serve(endpoint, _step_handler):
            assert client.request(StepRequest(request_id=1, reset=True), expected=StepResult).request_id == 1
        with pytest.raises(PeerTimeoutError):
            client.request(StepRequest(request_id=2, reset=True))
        with serve(endpoint, _step_handler):  # a new server on the same endpoint
            reply = client.request(StepRequest(request_id=3, reset=True), expected=StepResult)
            assert reply.request_id == 3


def test_handler_exception_becomes_remote_error_and_loop_survives(
    endpoint: str, serve: Callable[..., Any]
) -> None:
    with serve(endpoint, _step_handler) as server, ReqClient(endpoint, timeout_ms=2000, retries=0) as client:
        with pytest.raises(RemoteError, match="RuntimeError: seed 13 is unlucky") as info:
            client.request(StepRequest(request_id=5, reset=True, seed=13))
        assert info.value.code == "handler_error"
        assert info.value.request_id == 5
        assert client.request(StepRequest(request_id=6, reset=True), expected=StepResult).request_id == 6
        assert server.refused == 1


def _raw_exchange(endpoint: str, frames: list[bytes]) -> WireModel:
    sock = new_socket(zmq.REQ)
    try:
        sock.connect(endpoint)
        sock.send_multipart(frames)
        assert sock.poll(3000, zmq.POLLIN), "server did not answer"
        return decode_frames(sock.recv_multipart())
    finally:
        sock.close(linger=0)


@pytest.mark.parametrize(
    ("frames", "code", "message"),
    [
        ([b"\x00garbage\xff"], "bad_request", "malformed header frame"),
        ([b""], "bad_request", "malformed header frame"),
        ([b"\xde\xff\xff" + bytes(3 * 65535)], "bad_request", "exceeds max_map_len"),
        ([b"one", b"two"], "bad_request", "malformed header frame"),
        ([encode(sample_telemetry())], "bad_request", "malformed header frame"),  # one buffer, not frames
        (encode_frames(sample_telemetry()), "wrong_kind", "expected StepRequest, got TelemetryEvent"),
    ],
)
def test_rep_loop_answers_garbage_and_keeps_serving(
    endpoint: str, serve: Callable[..., Any], frames: list[bytes], code: str, message: str
) -> None:
    with serve(endpoint, _step_handler, accepts=(StepRequest,)):
        reply = _raw_exchange(endpoint, frames)
        assert isinstance(reply, ErrorReply)
        assert reply.code == code
        assert message in reply.message
        with ReqClient(endpoint, timeout_ms=2000, retries=0) as client:
            assert client.request(StepRequest(request_id=7, reset=True), expected=StepResult).request_id == 7


def test_wrong_reply_kind_and_request_id_are_contract_errors(
    endpoint: str, serve: Callable[..., Any]
) -> None:
    def mismatched(request: WireModel) -> WireModel:
        return sample_step_result(batch=1, azimuth=2, elevation=2).model_copy(update={"request_id": 999})

    with serve(endpoint, mismatched), ReqClient(endpoint, timeout_ms=2000, retries=0) as client:
        with pytest.raises(ContractError, match="reply is for request 999, expected 1"):
            client.request(StepRequest(request_id=1, reset=True))
        with pytest.raises(ContractError, match="expected a TelemetryEvent reply, got StepResult"):
            client.request(StepRequest(request_id=999, reset=True), expected=TelemetryEvent)


def test_serve_once_returns_false_without_requests(endpoint: str) -> None:
    from navi_common import RepServer

    with RepServer(endpoint, _step_handler) as server:
        started = time.monotonic()
        assert server.serve_once(50) is False
        assert time.monotonic() - started < 2.0


def test_client_rejects_bad_settings(endpoint: str) -> None:
    with pytest.raises(ValueError, match="timeout_ms must be > 0"):
        ReqClient(endpoint, timeout_ms=0)
    with pytest.raises(ValueError, match="retries must be >= 0"):
        ReqClient(endpoint, retries=-1)


@pytest.mark.parametrize("zero_copy", [False, True])
def test_requests_and_replies_travel_as_frames(
    endpoint: str, serve: Callable[..., Any], zero_copy: bool
) -> None:
    request = StepRequest(request_id=4, actions=sample_action(batch=2))
    with (
        serve(endpoint, _step_handler),
        ReqClient(endpoint, timeout_ms=2000, retries=0, multipart=zero_copy) as client,
    ):
        reply = client.request(request, expected=StepResult)
        assert reply.request_id == 4
        sock = new_socket(zmq.REQ)
        try:
            sock.connect(endpoint)
            sock.send_multipart(encode_frames(request))
            assert sock.poll(3000, zmq.POLLIN)
            frames = sock.recv_multipart()
        finally:
            sock.close(linger=0)
        assert len(frames) > 1  # a header and the reply's arrays
        assert decode_frames(frames, expected=StepResult).request_id == 4
