"""Brain step mode over real sockets (threads, point toy env): equivalence, re-sync, bad replies."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import zmq
from env_bridge import VectorEnvBridge, serve_in_thread
from structlog.testing import capture_logs

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference import ActingTelemetry, PolicyStepper, build_policy, resolve_policy_source
from navi_actor.inference.runner import run_inference
from navi_actor.memory import VisitMemoryConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.service import BrainSettings, run_brain
from navi_common import free_tcp_endpoint
from navi_common.transport.sockets import new_socket
from navi_contracts import ErrorReply, StepRequest, decode_frames, encode_frames
from navi_contracts.samples import sample_action

pytestmark = pytest.mark.usefixtures("one_torch_thread", "uncached_loggers")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory, small_policy: Callable[..., NaviPolicy]) -> Path:
    policy = small_policy("mamba2", seed=11)
    path = tmp_path_factory.mktemp("ckpt") / "policy.pt"
    return save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=policy.cfg), path)


def brain_settings(step_endpoint: str, checkpoint: Path, tmp_path: Path, **service: Any) -> BrainSettings:
    return BrainSettings(
        service={
            "step_endpoint": step_endpoint,
            "pub_endpoint": free_tcp_endpoint(),
            "checkpoint": checkpoint,
            "deterministic": True,
            "seed": 3,
            "request_timeout_ms": 300,
            "request_retries": 0,
            "stats_seconds": 0.2,
            **service,
        },
        train={"artifacts_dir": tmp_path},
    )


class CountingBridge(VectorEnvBridge):
    """Sets ``reached`` once ``target`` actions were executed since the last reset."""

    def __init__(self, env: PointGoalEnv, target: int) -> None:
        super().__init__(env)
        self.target, self.reached = target, threading.Event()

    def __call__(self, request: Any) -> Any:
        reply = super().__call__(request)
        if len(self.actions) >= self.target:
            self.reached.set()
        return reply


def reference_actions(checkpoint: Path, steps: int, seed: int, max_steps: int) -> np.ndarray:
    """In-process inference with the same checkpoint, seed and environment."""
    env = PointGoalEnv(2, max_steps=max_steps)
    policy = build_policy(resolve_policy_source(checkpoint, Path("/nonexistent")), PolicyConfig(), (3, 32, 8))
    recorded: list[np.ndarray] = []
    run_inference(
        env,
        PolicyStepper(policy, 2, deterministic=True),
        ActingTelemetry(None, "actor.inference"),
        seed=seed,
        total_steps=steps,
        on_actions=lambda _, actions: recorded.append(actions.numpy().copy()),
    )
    return np.stack(recorded)


def reading_checkpoint(folder: Path, source: str, small_policy: Callable[..., NaviPolicy]) -> Path:
    """A policy that reads its visit memory (``source``: past positions or the frontier map), its
    projection no longer zero (as after training), so the features it reads change its actions."""
    visits = VisitMemoryConfig(source=source, write_every=1, exclusion_window=0, radius=20.0)  # type: ignore[arg-type]
    policy = small_policy("gru", seed=11, visit_input=True, visits=visits)
    assert policy.visit_projection is not None
    with torch.no_grad():
        policy.visit_projection.weight.normal_(0.0, 2.0)
    return save_checkpoint(
        Checkpoint(model=policy.state_dict(), policy_config=policy.cfg), folder / "reading.pt"
    )


@pytest.mark.parametrize("served", ["plain", "positions", "frontiers"])
def test_brain_acts_like_in_process_inference(
    served: str, checkpoint: Path, tmp_path: Path, small_policy: Callable[..., NaviPolicy]
) -> None:
    """The served policy acts as ``infer`` does; one that reads its visit memory (past positions or
    the frontier map) from the poses each observation carries (in process: ``env.poses()``)."""
    if served != "plain":
        checkpoint = reading_checkpoint(tmp_path, served, small_policy)
    endpoint = free_tcp_endpoint()
    bridge = VectorEnvBridge(PointGoalEnv(2, max_steps=9))
    with serve_in_thread(bridge, endpoint):
        settings = brain_settings(endpoint, checkpoint, tmp_path, total_steps=40, request_timeout_ms=5000)
        steps = run_brain(settings, tmp_path)
    assert steps == 40 and bridge.resets == 1
    served = np.stack(bridge.actions)
    assert np.array_equal(served, reference_actions(checkpoint, 40, seed=3, max_steps=9))
    assert int(bridge.episode_ids.sum()) >= 4  # episodes ended, so per-drone resets were exercised


@pytest.fixture
def brain_thread(checkpoint: Path, tmp_path: Path) -> Iterator[tuple[str, threading.Event, threading.Thread]]:
    endpoint, stop = free_tcp_endpoint(), threading.Event()
    settings = brain_settings(endpoint, checkpoint, tmp_path)
    thread = threading.Thread(target=run_brain, args=(settings, tmp_path, stop), daemon=True)
    yield endpoint, stop, thread
    stop.set()
    thread.join(timeout=5)


def test_brain_resyncs_after_the_environment_restarts(brain_thread: Any) -> None:
    endpoint, stop, thread = brain_thread
    first = CountingBridge(PointGoalEnv(2), target=10)
    with capture_logs() as logs:
        with serve_in_thread(first, endpoint):
            thread.start()
            assert first.reached.wait(30)
        second = CountingBridge(PointGoalEnv(2), target=10)  # a restarted env: no episode running
        with serve_in_thread(second, endpoint):
            assert second.reached.wait(30)
        stop.set()
        thread.join(timeout=3)
    assert not thread.is_alive()
    events = [entry["event"] for entry in logs]
    assert "actor.service.env_refused" in events or "actor.service.env_unreachable" in events
    assert second.resets >= 1  # re-synchronised with a reset before stepping again


def test_brain_skips_malformed_and_refused_replies(brain_thread: Any) -> None:
    """A scripted REP answers garbage, a wrong request id and an error; brain re-syncs each time."""
    endpoint, stop, thread = brain_thread
    bridge = VectorEnvBridge(PointGoalEnv(2))
    script = ["ok", "ok", "garbage", "ok", "ok", "wrong_id", "ok", "ok", "error"]
    answered, done = [], threading.Event()
    socket = new_socket(zmq.REP)
    socket.bind(endpoint)

    def serve() -> None:
        while not done.is_set():
            if not socket.poll(20):
                continue
            request = decode_frames(socket.recv_multipart())
            kind = script[len(answered)] if len(answered) < len(script) else "ok"
            answered.append(kind)
            if kind == "garbage":
                socket.send(b"\xc1 not msgpack")
            elif kind == "error":
                refusal = ErrorReply(code="handler_error", message="boom", request_id=None)
                socket.send_multipart(encode_frames(refusal))
            else:
                reply = bridge(request)
                if kind == "wrong_id":
                    reply = reply.model_copy(update={"request_id": reply.request_id + 1000})
                socket.send_multipart(encode_frames(reply))
            if len(answered) >= len(script) + 5:
                done.set()

    server = threading.Thread(target=serve, daemon=True)
    with capture_logs() as logs:
        server.start()
        thread.start()
        assert done.wait(30)
        stop.set()
        thread.join(timeout=3)
        server.join(timeout=3)
    socket.close(linger=0)
    events = [entry["event"] for entry in logs]
    assert events.count("actor.service.reply_malformed") == 2  # garbage + wrong request id
    assert events.count("actor.service.env_refused") == 1
    assert bridge.resets == 4  # the first sync + one re-sync per bad reply
    assert not thread.is_alive()


def test_no_environment_means_retries_not_a_hang(checkpoint: Path, tmp_path: Path) -> None:
    stop = threading.Event()  # past the (short) readiness wait, every failed request warns
    settings = brain_settings(free_tcp_endpoint(), checkpoint, tmp_path, env_ready_timeout_ms=100)
    with capture_logs() as logs:
        thread = threading.Thread(target=run_brain, args=(settings, tmp_path, stop), daemon=True)
        thread.start()
        thread.join(timeout=1.0)  # several 300 ms request timeouts pass meanwhile
        stop.set()
        thread.join(timeout=2.0)
    assert not thread.is_alive()
    assert [e["event"] for e in logs].count("actor.service.env_unreachable") >= 2


def test_request_before_reset_is_refused_by_the_bridge() -> None:
    bridge = VectorEnvBridge(PointGoalEnv(1))
    with pytest.raises(RuntimeError, match="reset"):
        bridge(StepRequest(request_id=1, actions=sample_action(batch=1)))


def test_brain_waits_quietly_for_a_loading_environment(checkpoint: Path, tmp_path: Path) -> None:
    """Issue 23: the brain warned env_unreachable while the environment was still loading."""
    endpoint, stop = free_tcp_endpoint(), threading.Event()
    # Requests time out after 1 s (not 300 ms): a first reply slowed by a loaded CI box is then not a
    # (true) timeout warning, while a brain that did not wait quietly would still warn twice below.
    settings = brain_settings(
        endpoint, checkpoint, tmp_path, env_ready_timeout_ms=60_000, request_timeout_ms=1_000
    )
    bridge = CountingBridge(PointGoalEnv(2), target=5)
    with capture_logs() as logs:
        thread = threading.Thread(target=run_brain, args=(settings, tmp_path, stop), daemon=True)
        thread.start()
        stop.wait(2.5)  # "loading": two request timeouts of 1 s pass without an environment
        with serve_in_thread(bridge, endpoint):
            assert bridge.reached.wait(30)
            stop.set()
            thread.join(timeout=3)
    assert not thread.is_alive()
    assert not [entry for entry in logs if entry["log_level"] in ("warning", "error")]
    assert bridge.resets == 1  # its first reset was answered: no failed attempt, no re-sync
    events = [entry["event"] for entry in logs]
    assert events.index("actor.service.waiting_for_env") < events.index("actor.service.env_reachable")


def test_brain_warns_once_the_environment_is_late(checkpoint: Path, tmp_path: Path) -> None:
    stop = threading.Event()
    settings = brain_settings(free_tcp_endpoint(), checkpoint, tmp_path, env_ready_timeout_ms=300)
    with capture_logs() as logs:
        thread = threading.Thread(target=run_brain, args=(settings, tmp_path, stop), daemon=True)
        thread.start()
        thread.join(timeout=1.0)
        stop.set()
        thread.join(timeout=2.0)
    assert not thread.is_alive()
    unreachable = [entry for entry in logs if entry["event"] == "actor.service.env_unreachable"]
    assert unreachable and "after 0.3 s" in unreachable[0]["reason"]
