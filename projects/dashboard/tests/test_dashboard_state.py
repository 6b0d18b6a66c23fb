"""Mode detection, frame choice, rates and JSON-safety of the status, on an injected clock."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from navi_dashboard.settings import HistorySettings, StreamSettings
from navi_dashboard.state import DashboardState, Mode, ObservationFrame, TelemetrySample


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def state(clock: FakeClock) -> DashboardState:
    stream = StreamSettings(mode_timeout_s=5.0, prefer_actor_within_s=2.0)
    return DashboardState(stream, HistorySettings(max_points=100), clock=clock)


def frame(source: str, at: float, step: int | None = None, batch: int = 1) -> ObservationFrame:
    depth = np.zeros((8, 4), dtype=np.float32)
    return ObservationFrame(source, depth, np.ones((8, 4), bool), batch, received_at=at, step_id=step)


def event(event_type: str, at: float, **payload: float) -> TelemetrySample:
    return TelemetrySample(event_type, payload, received_at=at, wall_time=1.7e9 + at)


def test_mode_follows_what_arrives_and_times_out(state: DashboardState, clock: FakeClock) -> None:
    assert state.mode() is Mode.WAITING
    state.add_observation(frame("environment", clock.now))
    assert state.mode() is Mode.OBSERVER
    state.add_telemetry(event("environment.server.status", clock.now))
    assert state.mode() is Mode.OBSERVER  # telemetry that is not the actor's keeps OBSERVER
    clock.now += 1.0
    state.add_telemetry(event("actor.training.ppo.update", clock.now))
    assert state.mode() is Mode.TRAINING
    clock.now += 1.0
    state.add_telemetry(event("actor.inference.step", clock.now))
    assert state.mode() is Mode.INFERENCE  # the newer of the two wins
    clock.now += 4.5  # training is now 5.5 s old, inference 4.5 s
    assert state.mode() is Mode.INFERENCE
    clock.now += 1.0
    assert state.mode() is Mode.WAITING  # every source silent for longer than the timeout


def test_actor_view_wins_while_fresh_then_the_newest_frame(state: DashboardState, clock: FakeClock) -> None:
    state.add_observation(frame("actor", clock.now, step=1))
    clock.now += 1.0
    state.add_observation(frame("environment", clock.now, step=50))
    assert state.display_frame()[0].source == "actor"
    clock.now += 1.5  # actor frame 2.5 s old > prefer_actor_within_s
    assert state.display_frame()[0].source == "environment"
    state.add_observation(frame("control", clock.now, step=51))
    assert state.display_frame()[0].source == "control"
    status = state.status()
    assert status["obs_source"] == "control" and status["obs_age_ms"] == 0.0


def test_frame_version_counts_every_stored_frame(state: DashboardState, clock: FakeClock) -> None:
    assert state.display_frame() == (None, 0)
    for step in range(3):
        state.add_observation(frame("environment", clock.now, step=step))
    assert state.display_frame()[1] == 3


def test_environment_rate_uses_step_ids_and_resets_on_restart(
    state: DashboardState, clock: FakeClock
) -> None:
    for step in (0, 10, 30, 60):  # frames dropped in between: ids still give the true rate
        state.add_observation(frame("environment", clock.now, step=step, batch=4))
        clock.now += 0.5 if step == 0 else {10: 1.0, 30: 1.5}.get(step, 0.0)
    status = state.status()
    assert status["sps_source"] == "environment"
    assert status["sps"] == pytest.approx(20.0 * 4)
    state.add_observation(frame("environment", clock.now + 0.1, step=2, batch=4))  # producer restarted
    assert state.status()["sps"] is None


def test_reported_sps_and_actor_count_win_while_telemetry_is_fresh(
    state: DashboardState, clock: FakeClock
) -> None:
    state.add_observation(frame("environment", clock.now, step=0, batch=8))
    state.add_telemetry(event("actor.training.ppo.update", clock.now, sps=1234.0, active_actors=16.0))
    status = state.status()
    assert (status["sps"], status["sps_source"], status["active_actors"]) == (1234.0, "telemetry", 16.0)
    clock.now += 6.0
    state.add_observation(frame("environment", clock.now, step=10, batch=8))
    assert state.status()["active_actors"] == 8.0  # stale telemetry: the environment's batch size


def test_status_is_strict_json_even_with_diverged_losses(state: DashboardState, clock: FakeClock) -> None:
    state.add_telemetry(
        event(
            "actor.training.ppo.update",
            clock.now,
            value_loss=math.nan,
            kl=math.inf,
            sps=-math.inf,
            **{"reward/collision": math.nan, "reward/progress": 0.5, "timing/rollout": 0.2},
        )
    )
    status = state.status()
    text = json.dumps(status, allow_nan=False)
    assert status["latest"]["value_loss"] is None and status["sps"] is None
    assert status["reward_terms"] == {"collision": None, "progress": 0.5}
    assert status["timings"] == {"rollout": 0.2}
    assert "NaN" not in text


def test_scene_comes_from_the_payload_index(state: DashboardState, clock: FakeClock) -> None:
    assert state.status()["scene"] is None
    state.add_telemetry(event("actor.training.episode", clock.now, scene=7.0))
    assert state.status()["scene"] == "#7"


def test_chart_delta_and_errors(state: DashboardState, clock: FakeClock) -> None:
    state.add_telemetry(event("actor.training.ppo.update", clock.now, kl=0.1))
    state.add_telemetry(event("actor.training.ppo.update", clock.now + 1, kl=0.2, entropy=3.0))
    everything, cursor = state.chart_delta(-1)
    assert cursor == 1 and everything["kl"]["v"] == [0.1, 0.2]
    newer, _ = state.chart_delta(0)
    assert newer == {
        "kl": {"t": [1.7e9 + clock.now + 1], "v": [0.2]},
        "entropy": {"t": [1.7e9 + clock.now + 1], "v": [3.0]},
    }
    state.add_error("actor", "bad bytes")
    counts = state.status()["counts"]
    assert counts["errors"] == 1 and counts["last_error"] == "actor: bad bytes"


def test_realtime_figures_show_while_a_realtime_environment_reports(
    state: DashboardState, clock: FakeClock
) -> None:
    assert state.status()["realtime"] is None  # no realtime environment: nothing shown
    payload = {
        "mean_action_age_ticks": 3.5, "max_action_age_ticks": 6.0, "missed_ticks": 1.0,
        "fallback_ticks": 12.0, "fallback_fraction": 0.25, "control_hz": 20.0, "tick": 40.0,
        "guarded_ticks": 7.0,
    }  # fmt: skip
    state.add_telemetry(event("environment.realtime.stats", clock.now, **payload))
    status = state.status()
    shown = {name: payload[name] for name in payload if name not in ("tick", "guarded_ticks")}
    assert status["realtime"] == shown
    assert state.mode() is Mode.OBSERVER  # the environment's figures are not a policy acting
    charts, _ = state.chart_delta(-1)
    charted = (
        "mean_action_age_ticks", "max_action_age_ticks", "missed_ticks", "fallback_ticks", "guarded_ticks",
    )  # fmt: skip
    for name in charted:
        assert charts[name]["v"] == [payload[name]]
    clock.now += 6.0  # older than mode_timeout_s: the environment stopped reporting
    assert state.status()["realtime"] is None


def test_realtime_figures_without_an_age_yet_are_null_not_nan(
    state: DashboardState, clock: FakeClock
) -> None:
    state.add_telemetry(event("environment.realtime.stats", clock.now, missed_ticks=0.0, control_hz=20.0))
    realtime = state.status()["realtime"]
    assert isinstance(realtime, dict)
    assert realtime["mean_action_age_ticks"] is None and realtime["missed_ticks"] == 0.0
    json.dumps(state.status(), allow_nan=False)
