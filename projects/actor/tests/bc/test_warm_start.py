"""``settings_for_warm_start``: whether the warm start runs; ``settings_after_warm_start``: what PPO's
settings become once it has run."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_actor.bc.warm_start import settings_after_warm_start, settings_for_warm_start
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


def test_the_warm_start_is_on_by_default_where_it_can_run() -> None:
    default = ActorSettings()
    assert default.warm_start.steps == 16384
    kept, notice = settings_for_warm_start(default)
    assert kept is default and notice is None


@pytest.mark.parametrize(
    ("values", "needs"),
    [
        ({"environment": {"backend": "point"}}, "needs the sdfdag environment"),
        ({"train": {"backend": "ray"}}, "needs train.backend=local"),
    ],
)
def test_the_default_warm_start_goes_off_with_a_notice_where_it_cannot_run(
    values: dict[str, object], needs: str
) -> None:
    off, notice = settings_for_warm_start(ActorSettings(**values))  # type: ignore[arg-type]
    assert off.warm_start.steps == 0
    assert notice is not None and notice.startswith(f"warm start: off, it {needs}")


@pytest.mark.parametrize("backend", [{"environment": {"backend": "point"}}, {"train": {"backend": "ray"}}])
def test_warm_start_steps_asked_for_where_they_cannot_run_are_refused(
    backend: dict[str, object], monkeypatch: pytest.MonkeyPatch
) -> None:
    given = ActorSettings(warm_start={"steps": 16384}, **backend)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^warm_start.steps=16384 needs "):
        settings_for_warm_start(given)
    monkeypatch.setenv("NAVI_ACTOR_WARM_START__STEPS", "16384")  # the environment asks as the CLI does
    with pytest.raises(ValueError, match=r"^warm_start.steps=16384 needs "):
        settings_for_warm_start(ActorSettings(**backend))  # type: ignore[arg-type]


def test_no_warm_start_asked_for_is_no_notice() -> None:
    given = ActorSettings(warm_start={"steps": 0}, environment={"backend": "point"})  # type: ignore[arg-type]
    assert settings_for_warm_start(given) == (given, None)
