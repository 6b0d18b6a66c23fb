"""Auto-promotion compares like with like, and auto-resume prefers a model of the same task.

Why: a 3-minute run on one easy scene (reward EMA -31.8) outranked the corpus runs (-125), became
the registry's best, and every later corpus run was measured against it (and resumed from it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from navi_actor.checkpoints import Checkpoint, save_checkpoint
from navi_actor.config import ActorSettings
from navi_actor.models import NaviPolicy
from navi_actor.registry import ModelRegistry
from navi_actor.registry.model_registry import comparison_key
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner
from navi_actor.runners.resume import choose_start

ONE_SCENE = {"backend": "sdfdag", "scenes": 1, "names": ["easy.gmdag"], "episode_max_steps": 500}


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _settings() -> ActorSettings:
    return ActorSettings(
        temporal_core="gru",
        policy={"embed_dim": 32, "vit_dim": 32, "vit_layers": 1},
        environment={"backend": "point", "point_azimuth": 16, "point_elevation": 8},
        rollout={"num_actors": 2, "rollout_length": 16, "sequence_length": 8},
        ppo={"num_minibatches": 2},
        telemetry={"enabled": False},
        checkpoint={"auto_resume": False},
    )


def _model(runner: OnPolicyRunner, path: Path, summary: dict[str, Any], reward_ema: float) -> Path:
    policy = NaviPolicy(runner.state.policy_config)
    checkpoint = Checkpoint(
        model=policy.state_dict(),
        policy_config=runner.state.policy_config,
        step_id=1,
        reward_ema=reward_ema,
        corpus_summary=summary,
    )
    return save_checkpoint(checkpoint, path)


def test_a_run_is_promoted_against_the_best_model_of_its_own_task(tmp_path: Path) -> None:
    settings = _settings()
    built = build_environment(settings.environment, 2, "cpu")
    runner = OnPolicyRunner(settings, built, artifacts_dir=tmp_path)
    registry = ModelRegistry(tmp_path / "models")
    own = registry.promote(_model(runner, tmp_path / "own.pt", runner.corpus_summary, -125.0))
    easy = registry.promote(_model(runner, tmp_path / "easy.pt", ONE_SCENE, -31.8))
    assert own.comparison_key == comparison_key(runner.corpus_summary) != easy.comparison_key
    assert registry.best() == easy and registry.best(comparable_to=own.comparison_key) == own

    runner.counters.reward_ema = -100.0  # beats its own task's best (-125), not the easy scene's
    promoted = runner.save_checkpoint()
    assert [entry.version for entry in promoted] == [3]
    runner.counters.reward_ema = -110.0
    assert runner.save_checkpoint() == []  # worse than -100 on the same task: not promoted

    registry.promote(_model(runner, tmp_path / "easy2.pt", ONE_SCENE, -20.0))  # latest overall
    runner.run.mark_finished(runner.counters.step_id)  # a finished run: resume goes to the registry
    resumed = settings.model_copy(
        update={"checkpoint": settings.checkpoint.model_copy(update={"auto_resume": True})}
    )
    start = choose_start(resumed, built.env.observation_shape, registry, corpus_summary=runner.corpus_summary)
    assert start.path == registry.path_of(registry.entries()[2])  # v003: the latest of this task
    assert start.description.startswith("resuming from model v003")
