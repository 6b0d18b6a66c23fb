"""PPO must learn: on the point-goal toy, a short budget beats a random policy by a wide margin."""

from __future__ import annotations

from pathlib import Path

import pytest

from navi_actor.config import ActorSettings
from navi_actor.envs.point import PointGoalEnv
from navi_actor.evaluation import evaluate_policy
from navi_actor.evaluation.baselines import RandomPolicy
from navi_actor.runners.env_factory import build_environment
from navi_actor.runners.on_policy_runner import OnPolicyRunner

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.slow
@pytest.mark.parametrize("collect_ahead", [False, True])  # ahead: rollouts acted one update late
def test_ppo_beats_random_on_point_goal(tmp_path: Path, collect_ahead: bool) -> None:
    settings = ActorSettings(
        encoder_backend="spherical_cnn",
        temporal_core="gru",
        policy={"embed_dim": 32, "cnn_width": 8},
        environment={"backend": "point", "point_azimuth": 32, "point_elevation": 8, "point_max_steps": 40},
        rollout={"rollout_length": 16, "sequence_length": 8, "num_actors": 8, "collect_ahead": collect_ahead},
        ppo={"learning_rate": 1e-3, "epochs": 4, "num_minibatches": 2},
        train={"total_steps": 2048, "seed": 0},
        telemetry={"enabled": False},
        checkpoint={"auto_promote": False, "auto_resume": False},
    )
    built = build_environment(settings.environment, settings.rollout.num_actors, settings.train.device)
    trained = OnPolicyRunner(settings, built, artifacts_dir=tmp_path)
    trained.run_training()

    def score(policy: object) -> float:
        env = PointGoalEnv(8, azimuth=32, elevation=8, max_steps=40)
        return evaluate_policy(policy, env, 32, deterministic=True, seed=123).mean_return  # type: ignore[arg-type]

    learned, random = score(trained.policy), score(RandomPolicy())
    assert learned > random + 1.0, f"learned {learned:.3f} vs random {random:.3f}"
