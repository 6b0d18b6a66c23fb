"""The environment service end to end over real sockets, garbage included."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import zmq

from navi_common import RemoteError, ReqClient, Subscriber, free_tcp_endpoint
from navi_contracts import Action, DistanceMatrix, ErrorReply, StepRequest, StepResult, decode_frames, topics
from navi_environment.backend import SdfDagBackend
from navi_environment.config import EnvironmentSettings
from navi_environment.runtime.analytic import RoomSpec, room_scene
from navi_environment.server import serve


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})
    backend = SdfDagBackend(settings, 2, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 64)])
    pub, rep = free_tcp_endpoint(), free_tcp_endpoint()
    stop = threading.Event()
    served: list[int] = []
    thread = threading.Thread(target=lambda: served.append(serve(backend, pub, rep, stop)), daemon=True)
    thread.start()
    yield pub, rep
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive(), "server did not stop on its stop event"
    assert served and served[0] >= 1


def _action(request_id: int, env_ids: list[int]) -> StepRequest:
    actions = Action(
        env_ids=np.array(env_ids, dtype=np.int32), actions=np.full((len(env_ids), 4), 0.5, dtype=np.float32),
        policy_id="test", step_id=request_id, timestamp=0.0,
    )  # fmt: skip
    return StepRequest(request_id=request_id, actions=actions)


def test_reset_step_publish_and_survive_garbage(server) -> None:  # type: ignore[no-untyped-def]
    pub, rep = server
    with (
        ReqClient(rep, timeout_ms=5000, retries=1) as client,
        Subscriber(pub, [topics.DISTANCE_MATRIX]) as sub,
    ):
        with pytest.raises(RemoteError, match="reset"):
            client.request(_action(1, [0, 1]), expected=StepResult)
        first = client.request(StepRequest(request_id=2, reset=True, seed=3), expected=StepResult)
        assert first.observation.depth.shape == (2, 16, 8) and first.request_id == 2
        assert first.observation.valid_mask.all()  # closed room
        received = None
        for request_id in range(3, 40):  # PUB/SUB joins asynchronously: step until one arrives
            result = client.request(_action(request_id, [1, 0]), expected=StepResult)
            assert result.reward.shape == (2,) and result.info and "reward/exploration" in result.info
            message = sub.recv(timeout_ms=50)
            if message is not None:
                received = message
                break
        assert received is not None
        topic, observation = received
        assert topic == topics.DISTANCE_MATRIX and isinstance(observation, DistanceMatrix)
        with pytest.raises(RemoteError) as refused:
            client.request(_action(50, [0, 0]), expected=StepResult)  # duplicate env id
        assert refused.value.code == "handler_error"
    # raw garbage on a plain REQ socket: an ErrorReply comes back, and the server still serves
    context = zmq.Context.instance()
    raw = context.socket(zmq.REQ)
    raw.setsockopt(zmq.LINGER, 0)
    raw.connect(rep)
    try:
        raw.send(b"\x00not msgpack at all")
        assert raw.poll(5000) == zmq.POLLIN
        reply = decode_frames(raw.recv_multipart())
        assert isinstance(reply, ErrorReply) and reply.code == "bad_request"
    finally:
        raw.close()
    with ReqClient(rep, timeout_ms=5000, retries=1) as client:
        again = client.request(_action(60, [0, 1]), expected=StepResult)
        assert again.request_id == 60
