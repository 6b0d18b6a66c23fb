"""``navi-actor infer`` end to end (point env), and the acting telemetry over a real socket."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference import ActingTelemetry, PolicyStepper
from navi_actor.inference.command import infer
from navi_actor.inference.runner import run_inference
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_common import Publisher, Subscriber, free_tcp_endpoint
from navi_contracts import DistanceMatrix, TelemetryEvent, topics


@pytest.fixture(autouse=True)
def test_friendly_process_setup(monkeypatch: pytest.MonkeyPatch, one_torch_thread: None) -> None:
    """The CLI's process setup caches loggers (breaks capture_logs later) and traps SIGTERM: not here.

    One torch thread: a tiny policy on a busy 2-core machine is fastest without a thread pool.
    """
    from navi_common.logging import configure_logging

    def start(settings: object, default_torch_threads: int | None = None) -> None:
        configure_logging("info", production=False)

    monkeypatch.setattr("navi_actor.service.command.start_process", start)


SMALL = {"azimuth": 32, "elevation": 8, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}


def _checkpoint(path: Path, **config: int) -> Path:
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig(visit_input=False, temporal_core="gru", **{**SMALL, **config}))  # type: ignore[arg-type]
    return save_checkpoint(Checkpoint(model=policy.state_dict(), policy_config=policy.cfg), path)


def test_infer_runs_a_checkpoint_for_the_requested_steps(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path / "p.pt")
    args = [
        "--checkpoint",
        str(path),
        "--environment-backend",
        "point",
        "--num-actors",
        "2",
        "--total-steps",
        "12",
    ]
    result = CliRunner().invoke(infer, [*args, "--no-telemetry", "--torch-threads", "1"])
    assert result.exit_code == 0, result.output
    assert "infer: 12 steps x 2 drones" in result.output and "policy p" in result.output


def test_infer_stops_after_the_requested_episodes(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path / "p.pt")
    args = [
        "--checkpoint",
        str(path),
        "--environment-backend",
        "point",
        "--num-actors",
        "3",
        "--episodes",
        "4",
    ]
    result = CliRunner().invoke(infer, [*args, "--no-telemetry"])
    assert result.exit_code == 0, result.output
    finished = int(result.output.split(" episodes finished")[0].rsplit(" ", 1)[1])
    assert finished >= 4


def test_infer_refuses_a_checkpoint_for_another_sensor(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path / "wide.pt", azimuth=64, elevation=16)
    result = CliRunner().invoke(
        infer, ["--checkpoint", str(path), "--environment-backend", "point", "--no-telemetry"]
    )
    assert result.exit_code != 0
    assert "expects observations (3, 64, 16)" in result.output


def test_inference_publishes_stats_and_actor_zero_observation() -> None:
    endpoint = free_tcp_endpoint()
    torch.manual_seed(0)
    policy = NaviPolicy(PolicyConfig(visit_input=False, temporal_core="gru", **SMALL))  # type: ignore[arg-type]
    with Publisher(endpoint) as publisher, Subscriber(endpoint) as subscriber:
        publisher.wait_for_subscribers(timeout_ms=5000)
        telemetry = ActingTelemetry(publisher, "actor.inference", stats_seconds=1e9)
        env = PointGoalEnv(2, max_steps=5)
        summary = run_inference(env, PolicyStepper(policy, 2), telemetry, total_steps=12)
        received: dict[str, list[object]] = {}
        while (message := subscriber.recv(timeout_ms=500)) is not None:
            received.setdefault(message[0], []).append(message[1])
    assert summary.steps == 12 and summary.drone_steps == 24
    (stats,) = received[topics.TELEMETRY_EVENT]  # the period is huge: only the final event
    assert isinstance(stats, TelemetryEvent) and stats.event_type == "actor.inference.stats"
    assert stats.payload["steps"] == 12 and stats.payload["drone_steps"] == 24
    assert stats.payload["episodes"] == 4  # 2 drones x (12 // 5) truncations
    assert math.isfinite(stats.payload["episode_return"])
    assert stats.payload["latency_p99_ms"] >= stats.payload["latency_p50_ms"] > 0
    observations = received[topics.DISTANCE_MATRIX]  # rate-limited to ~10 Hz: at most one per step
    assert 1 <= len(observations) <= 12
    assert all(isinstance(o, DistanceMatrix) and o.depth.shape == (1, 32, 8) for o in observations)


def test_stats_window_rates_use_the_clock() -> None:
    now = [100.0]
    telemetry = ActingTelemetry(None, "actor.service", stats_seconds=1.0, clock=lambda: now[0])
    for _ in range(30):
        telemetry.record_step(0.01, torch.tensor([True, False]), torch.tensor([2.0, 99.0]))
    now[0] += 2.0
    payload = telemetry.maybe_publish(torch.zeros(2, 3, 4, 2), step_id=30)
    assert payload is not None
    assert payload["sps"] == pytest.approx(15.0)
    assert payload["episodes"] == 30 and payload["episode_return"] == pytest.approx(2.0)
    assert telemetry.maybe_publish(torch.zeros(2, 3, 4, 2), step_id=31) is None
