"""Another RL library trains on Navi: Stable-Baselines3 PPO on ``Navi/Explore-v0`` with SB3's own VecEnv."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

from navi_contracts import paths

pytest.importorskip("stable_baselines3")

SMALL = {
    "scene": "procedural:apartment:seed=1",
    "compile": {"resolution": 64},
    "sensor": {"azimuth_bins": 16, "elevation_bins": 8},
    "episode": {"max_steps": 16},
}


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """A throw-away repository root, so the compiled scene lands in a temporary artifacts/."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NAVI_REPO_ROOT", str(tmp_path))
        paths.repo_root.cache_clear()
        yield tmp_path
    paths.repo_root.cache_clear()


@pytest.mark.slow  # ~10 s on the loaded 2-core box: scene compile, torch, 64 PPO steps, 2 episodes
def test_sb3_ppo_trains_and_evaluates_on_navi_explore(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.logger import Logger
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv

    check_env(gym.make("Navi/Explore-v0", **SMALL).unwrapped)
    model = PPO("MlpPolicy", gym.make("Navi/Explore-v0", **SMALL), n_steps=32, batch_size=32,
                n_epochs=1, seed=0, device="cpu", policy_kwargs={"net_arch": [32]})  # fmt: skip
    assert isinstance(model.get_env(), DummyVecEnv)  # SB3's own VecEnv wraps the Gymnasium env
    # Without a logger of its own, learn() makes an empty $TMPDIR/SB3-<time> folder on every call.
    model.set_logger(Logger(folder=None, output_formats=[]))
    before = [parameter.detach().clone() for parameter in model.policy.parameters()]
    scratch = repo / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    model.learn(total_timesteps=64)
    assert not list(scratch.glob("SB3-*"))  # a test run leaves nothing in the machine's temp folder
    assert model.num_timesteps == 64
    after = list(model.policy.parameters())
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, after, strict=True))  # it learned
    returns, lengths = evaluate_policy(
        model, Monitor(gym.make("Navi/Explore-v0", **SMALL)), n_eval_episodes=2, return_episode_rewards=True
    )
    assert len(returns) == 2 and all(math.isfinite(value) for value in returns)
    assert all(1 <= length <= 16 for length in lengths)  # episodes end by episode.max_steps at the latest
