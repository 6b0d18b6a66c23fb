"""Both spellings of a metric (short, or the trainer's CleanRL namespaces) reach the same chart."""

from __future__ import annotations

import time

import pytest

from navi_contracts import TelemetryEvent
from navi_dashboard.ingest import sample_from_event
from navi_dashboard.metric_names import canonical_metric_name, canonical_payload
from navi_dashboard.settings import HistorySettings, StreamSettings
from navi_dashboard.state import DashboardState


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("charts/reward_ema", "reward_ema"),
        ("charts/sps", "sps"),
        ("losses/policy_loss", "policy_loss"),
        ("losses/approx_kl", "kl"),
        ("approx_kl", "kl"),
        ("time/rollout_env_step", "timing/rollout_env_step"),
        ("timing/update", "timing/update"),
        ("reward/collision", "reward/collision"),
        ("kl", "kl"),
        ("something/else", "something/else"),
    ],
)
def test_known_names(name: str, expected: str) -> None:
    assert canonical_metric_name(name) == expected


def test_payload_keeps_values() -> None:
    assert canonical_payload({"charts/sps": 1.0, "losses/entropy": 2.0}) == {"sps": 1.0, "entropy": 2.0}


def test_trainer_update_record_fills_the_status_and_charts() -> None:
    # Keys as the actor's trainer spells them (navi_actor.runners.progress.update_record).
    payload = {
        "charts/step_id": 4096.0,
        "charts/sps": 850.0,
        "charts/reward_ema": 1.5,
        "charts/episode_return": 2.0,
        "charts/episode_length": 300.0,
        "charts/collision_rate": 0.1,
        "losses/policy_loss": -0.01,
        "losses/value_loss": 0.3,
        "losses/entropy": 4.1,
        "losses/approx_kl": 0.02,
        "reward/exploration": 0.2,
        "time/rollout_env_step": 0.5,
        "time/update_backward": 0.1,
    }
    event = TelemetryEvent(
        event_type="actor.training.ppo.update",
        source="actor",
        step_id=4096,
        payload=payload,
        timestamp=time.time(),
    )
    state = DashboardState(StreamSettings(), HistorySettings())
    state.add_telemetry(sample_from_event(event, time.monotonic()))
    status = state.status()
    assert status["mode"] == "TRAINING" and status["sps"] == 850.0
    assert status["reward_terms"] == {"exploration": 0.2}
    assert status["timings"] == {"rollout_env_step": 0.5, "update_backward": 0.1}
    charts, _ = state.chart_delta(-1)
    assert {
        "reward_ema",
        "episode_return",
        "episode_length",
        "collision_rate",
        "policy_loss",
        "value_loss",
    } <= set(charts)
    assert {"kl", "entropy"} <= set(charts)
