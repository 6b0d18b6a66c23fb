"""Training telemetry over real sockets: update events, actor-0 observation, heartbeat rate limits."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
import torch

from navi_actor.config import TelemetryConfig
from navi_actor.telemetry import HEARTBEAT_EVENT, UPDATE_EVENT, TrainingTelemetry, observation_message
from navi_common import Subscriber, free_tcp_endpoint
from navi_contracts import DistanceMatrix, TelemetryEvent, topics

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def receive_all(subscriber: Subscriber, count: int) -> list[tuple[str, object]]:
    got = []
    for _ in range(count):
        message = subscriber.recv(timeout_ms=3000)
        assert message is not None, f"only {len(got)} of {count} messages arrived"
        got.append(message)
    return got


def test_updates_observations_and_rate_limited_heartbeats() -> None:
    endpoint = free_tcp_endpoint()
    clock = FakeClock()
    telemetry = TrainingTelemetry(
        TelemetryConfig(endpoint=endpoint, observation_hz=10.0, heartbeat_seconds=1.0), clock=clock
    )
    with Subscriber(endpoint, [topics.TELEMETRY_EVENT, topics.DISTANCE_MATRIX]) as subscriber:
        telemetry.wait_for_listener(timeout_ms=5000)
        obs = torch.rand(3, 3, 16, 8)
        obs[:, 1] = 7.0
        telemetry.maybe_publish_observation(obs, step_id=5)
        telemetry.maybe_publish_observation(obs, step_id=6)  # within 0.1 s: dropped by the rate limit
        telemetry.heartbeat(step_id=5)
        telemetry.heartbeat(step_id=5)  # within 1 s: dropped
        clock.now += 1.5
        telemetry.heartbeat(step_id=9)
        telemetry.publish_update(12, {"losses/policy_loss": 0.5, "charts/sps": float("nan")})
        messages = receive_all(subscriber, 4)
        assert subscriber.recv(timeout_ms=200) is None
    telemetry.close()
    observations = [m for t, m in messages if t == topics.DISTANCE_MATRIX]
    events = [m for t, m in messages if t == topics.TELEMETRY_EVENT]
    assert len(observations) == 1 and isinstance(observations[0], DistanceMatrix)
    matrix = observations[0]
    assert matrix.batch_size == 1 and matrix.matrix_shape == (16, 8) and matrix.step_id == 5
    np.testing.assert_allclose(matrix.depth[0], obs[0, 0].numpy(), rtol=1e-6)
    assert (matrix.semantic == 7).all()
    assert [e.event_type for e in events if isinstance(e, TelemetryEvent)] == [
        HEARTBEAT_EVENT,
        HEARTBEAT_EVENT,
        UPDATE_EVENT,
    ]
    update = events[-1]
    assert isinstance(update, TelemetryEvent) and update.step_id == 12
    assert update.payload["losses/policy_loss"] == 0.5 and np.isnan(update.payload["charts/sps"])


def test_publishing_without_listeners_never_blocks() -> None:
    telemetry = TrainingTelemetry(TelemetryConfig(endpoint=free_tcp_endpoint(), observation_hz=1e9))
    obs = torch.rand(4, 3, 32, 8)
    began = time.perf_counter()
    for step in range(300):
        telemetry.maybe_publish_observation(obs, step)
        telemetry.publish_update(step, {"x": 1.0})
    assert time.perf_counter() - began < 5.0
    telemetry.close()


def test_busy_port_disables_telemetry_instead_of_failing() -> None:
    endpoint = free_tcp_endpoint()
    first = TrainingTelemetry(TelemetryConfig(endpoint=endpoint))
    second = TrainingTelemetry(TelemetryConfig(endpoint=endpoint))
    assert first.active and not second.active
    second.publish_update(1, {"x": 1.0})  # a no-op, not an error
    first.close()
    second.close()


def test_observation_message_clamps_and_types() -> None:
    obs = torch.zeros(1, 3, 8, 8)
    obs[0, 0] = 1.5  # out of range depth must not make an invalid wire message
    obs[0, 2] = 1.0
    message = observation_message(obs, step_id=0)
    assert message.depth.max() == 1.0 and message.valid_mask.all() and message.semantic.dtype == np.int32


def test_trainer_publishes_update_events_and_observations(tmp_path: Path) -> None:
    from navi_actor.config import ActorSettings
    from navi_actor.runners.env_factory import build_environment
    from navi_actor.runners.on_policy_runner import OnPolicyRunner

    endpoint = free_tcp_endpoint()
    settings = ActorSettings(
        temporal_core="gru",
        policy={"embed_dim": 32, "vit_dim": 32, "vit_layers": 1},
        environment={"backend": "point", "point_azimuth": 16, "point_elevation": 8},
        rollout={"num_actors": 2, "rollout_length": 16, "sequence_length": 8},
        ppo={"epochs": 1, "num_minibatches": 2},
        telemetry={"endpoint": endpoint},
        train={"total_steps": 32},
        checkpoint={"auto_resume": False, "auto_promote": False},
    )
    built = build_environment(settings.environment, settings.rollout.num_actors, settings.train.device)
    telemetry = TrainingTelemetry(settings.telemetry)
    with Subscriber(endpoint, [topics.TELEMETRY_EVENT, topics.DISTANCE_MATRIX]) as subscriber:
        telemetry.wait_for_listener(timeout_ms=5000)
        OnPolicyRunner(settings, built, artifacts_dir=tmp_path, telemetry=telemetry).run_training()
        kinds = []
        while (message := subscriber.recv(timeout_ms=1000)) is not None:
            topic, model = message
            kinds.append(model.event_type if isinstance(model, TelemetryEvent) else topic)
    telemetry.close()
    assert topics.DISTANCE_MATRIX in kinds
    assert HEARTBEAT_EVENT in kinds
    assert kinds.count(UPDATE_EVENT) == 1
