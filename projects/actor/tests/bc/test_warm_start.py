"""``settings_after_warm_start``: what PPO's settings become once the warm start has run."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_actor.bc.warm_start import settings_after_warm_start
from navi_actor.config import ActorSettings


def settings(**train: object) -> ActorSettings:
    return ActorSettings(train=train, warm_start={"steps": 64, "value_updates": 3})  # type: ignore[arg-type]


def test_the_warm_start_is_charged_to_the_minutes_budget_and_said() -> None:
    said: list[str] = []
    after = settings_after_warm_start(settings(max_minutes=30.0), Path("clone.pt"), 450.0, said.append)
    assert after.train.max_minutes == pytest.approx(22.5)
    assert after.ppo.value_warmup_updates == 3
    assert said == ["warm start: 7.5 of the 30-minute budget; PPO trains for the remaining 22.5 min"]


def test_a_warm_start_that_used_the_whole_budget_leaves_ppo_one_second() -> None:
    said: list[str] = []
    after = settings_after_warm_start(settings(max_minutes=5.0), Path("clone.pt"), 400.0, said.append)
    assert after.train.max_minutes == pytest.approx(1 / 60)
    last = "PPO trains for the last second (the warm start used it all)"
    assert said == [f"warm start: 6.7 of the 5-minute budget; {last}"]


def test_steps_and_unbounded_runs_are_not_charged() -> None:
    said: list[str] = []
    after = settings_after_warm_start(settings(total_steps=4096), Path("clone.pt"), 450.0, said.append)
    assert after.train.max_minutes is None and after.train.total_steps == 4096 and not said
