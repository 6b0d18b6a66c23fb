"""Acting telemetry: the stats event's payload and the log line a person reads."""

from __future__ import annotations

import math

import torch
from structlog.testing import capture_logs

from navi_actor.inference import ActingTelemetry


def test_stats_before_any_episode_ends_publish_nan_but_log_no_nan() -> None:
    """No episode ended in the window: the payload says NaN (documented), the log line leaves it out."""
    telemetry = ActingTelemetry(None, "actor.service", clock=lambda: 0.0)
    telemetry.record_step(0.01, torch.zeros(2, dtype=torch.bool), torch.zeros(2))
    with capture_logs() as logs:
        payload = telemetry.publish_stats(step_id=1, now=1.0)
    assert math.isnan(payload["episode_return"]) and math.isnan(payload["episode_length"])
    (line,) = [entry for entry in logs if entry["event"] == "actor.service.stats"]
    assert "episode_return" not in line and "episode_length" not in line
    assert line["episodes"] == 0.0 and line["steps"] == 1.0
    assert not any(isinstance(value, float) and math.isnan(value) for value in line.values())


def test_stats_after_episodes_end_log_their_mean_return_and_length() -> None:
    """Two episodes end (returns 3 and 5, lengths 10 and 20): both the payload and the log carry means."""
    telemetry = ActingTelemetry(None, "actor.service", clock=lambda: 0.0)
    done = torch.tensor([True, True, False])
    telemetry.record_step(0.01, done, torch.tensor([3.0, 5.0, 99.0]), torch.tensor([10, 20, 7]))
    with capture_logs() as logs:
        payload = telemetry.publish_stats(step_id=1, now=1.0)
    assert payload["episode_return"] == 4.0 and payload["episode_length"] == 15.0
    (line,) = [entry for entry in logs if entry["event"] == "actor.service.stats"]
    assert line["episode_return"] == 4.0 and line["episode_length"] == 15.0 and line["episodes"] == 2.0
