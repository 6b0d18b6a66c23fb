"""policy.action_squash end to end: a tanh run trains, its checkpoint keeps the mode, evaluating it
flies tanh(mean), a resumed run keeps the mode unless another one is asked for, and a KL reference
that squashes differently is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner
from tiny_cli import TINY_ARGS, TINY_POLICY_ENV, TINY_TRAIN

from navi_actor.checkpoints import CheckpointError, load_checkpoint
from navi_actor.cli import main
from navi_actor.config import ActorSettings
from navi_actor.envs.point import PointGoalEnv, PointStep
from navi_actor.evaluation.command import _checkpoint_policy
from navi_actor.evaluation.evaluator import evaluate_policy
from navi_actor.runners.learner_state import reference_policy

TRAIN = TINY_TRAIN

pytestmark = pytest.mark.usefixtures("restore_process_state")


def invoke(tmp_path: Path, *args: str, squash: str | None = None) -> Any:
    env = {
        "NAVI_ACTOR_TRAIN__ARTIFACTS_DIR": str(tmp_path),
        **TINY_POLICY_ENV,
    }
    if squash is not None:
        env["NAVI_ACTOR_POLICY__ACTION_SQUASH"] = squash
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


class RecordingEnv(PointGoalEnv):
    """Remembers every action batch it executes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.received: list[torch.Tensor] = []

    def step(self, actions: torch.Tensor) -> PointStep:
        self.received.append(actions.clone())
        return super().step(actions)


def test_a_tanh_run_trains_keeps_its_mode_and_evaluates_with_tanh_of_the_mean(tmp_path: Path) -> None:
    trained = invoke(tmp_path, *TRAIN, squash="tanh")
    assert trained.exit_code == 0, trained.output
    (path,) = sorted(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    assert load_checkpoint(path).policy_config.action_squash == "tanh"

    env = RecordingEnv(2, azimuth=16, elevation=8, max_steps=10)
    policy = _checkpoint_policy(path, env, "cpu")  # built as `navi-actor evaluate` builds it
    means: list[torch.Tensor] = []
    act = policy.act

    def recording_act(*args: Any, **kwargs: Any) -> Any:
        out = act(*args, **kwargs)
        means.append(out.action_mean.clone())
        return out

    policy.act = recording_act
    evaluate_policy(policy, env, 2, deterministic=True, seed=0)
    flown, mean = torch.stack(env.received), torch.stack(means)
    assert torch.equal(flown, torch.tanh(mean))
    assert not torch.allclose(flown, mean.clamp(-1, 1))  # forward mean ~0.5: tanh and clip differ
    cli = invoke(tmp_path, "evaluate", str(path), *TINY_ARGS, "--episodes-per-scene", "2", "--mode", "mean")
    assert cli.exit_code == 0, cli.output

    resumed = invoke(tmp_path, *TRAIN)  # auto-resume, nothing asked for: the checkpoint's mode goes on
    assert resumed.exit_code == 0, resumed.output
    newest = max(tmp_path.glob("runs/*/checkpoints/step_*.pt"), key=lambda p: load_checkpoint(p).step_id)
    assert (
        load_checkpoint(newest).step_id == 64
        and load_checkpoint(newest).policy_config.action_squash == "tanh"
    )
    refused = invoke(tmp_path, *TRAIN, "--checkpoint", str(path), squash="clip")  # asked explicitly
    assert refused.exit_code != 0
    assert "trained with policy.action_squash='tanh' but 'clip' was requested" in refused.output
    fresh = invoke(tmp_path, *TRAIN, "--action-squash", "clip")  # auto-resume skips the other mode
    assert fresh.exit_code == 0 and "a fresh" in fresh.output, fresh.output


def test_a_kl_reference_must_squash_like_the_trained_policy(tmp_path: Path) -> None:
    assert invoke(tmp_path, *TRAIN, squash="tanh").exit_code == 0
    (path,) = sorted(tmp_path.glob("runs/*/checkpoints/step_*.pt"))
    settings = ActorSettings(
        policy={"embed_dim": 32, "vit_dim": 32, "vit_layers": 1},
        ppo={"reference_checkpoint": path, "reference_kl_coef": 0.1},
    )
    assert reference_policy(settings, torch.device("cpu"), "tanh") is not None
    with pytest.raises(
        CheckpointError, match=r"has policy\.action_squash='tanh' but the trained policy uses 'clip'"
    ):
        reference_policy(settings, torch.device("cpu"), "clip")
