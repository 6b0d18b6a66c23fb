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


def test_the_start_up_warm_up_changes_nothing_a_client_sees() -> None:
    """``serve`` warms the kernels up (a reset and a step) before answering anyone; a client's reset
    and steps then give exactly what a backend that never warmed up gives."""
    import torch

    from navi_environment.server.service import warm_up

    def backend() -> SdfDagBackend:
        settings = EnvironmentSettings(sensor={"azimuth_bins": 16, "elevation_bins": 8})
        return SdfDagBackend(settings, 2, scenes=[room_scene(RoomSpec(hi=(8.0, 6.0, 3.0)), 64)])

    warmed, fresh = backend(), backend()
    assert warm_up(warmed) > 0
    torch.testing.assert_close(warmed.reset(seed=3), fresh.reset(seed=3), rtol=0, atol=0)
    actions = torch.tensor([[0.8, 0.1, 0.0, 0.3], [0.5, -0.2, 0.4, -0.6]])
    for _ in range(5):
        got, expected = warmed.step(actions), fresh.step(actions)
        torch.testing.assert_close(got.obs, expected.obs, rtol=0, atol=0)
        torch.testing.assert_close(got.reward, expected.reward, rtol=0, atol=0)


def test_serve_warms_the_backend_up_before_it_serves(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Without the warm-up a step-mode brain timed out on the first, compiling step and re-synchronised
    (the stack on the H200; reproduced on the CPU with the torch march compiled)."""
    from click.testing import CliRunner

    from navi_environment.corpus.settings import CompileSettings
    from navi_environment.corpus.sources import compile_source
    from navi_environment.gmdag.writer import write_gmdag
    from navi_environment.server import command, service

    calls: list[str] = []
    monkeypatch.setattr(service, "warm_up", lambda backend: calls.append("warm_up") or 0.0)
    monkeypatch.setattr(service, "serve", lambda *args, **kwargs: calls.append("serve") or 0)
    scene = tmp_path / "hall.gmdag"
    write_gmdag(compile_source("procedural:hall:seed=1", CompileSettings(), resolution=32).asset, scene)
    result = CliRunner().invoke(command.serve_command, ["--gmdag-file", str(scene), "--actors", "2"])
    assert result.exit_code == 0, result.output
    assert calls == ["warm_up", "serve"]
