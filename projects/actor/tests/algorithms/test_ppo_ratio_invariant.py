"""Before the first gradient step, re-evaluated log-probs equal the rollout's, for every temporal core.

This is the end-to-end check that acting and learning run the same function: the collector acts with
the recurrent state and episode-start masks, storage keeps the state at sequence starts, and the
learner replays each sequence from it. Episodes are short (truncation at 5 steps, goal terminations)
so resets fall inside sequences.
"""

from __future__ import annotations

import pytest
import torch

from navi_actor.envs.point import PointGoalEnv
from navi_actor.models import TEMPORAL_CORES, NaviPolicy, PolicyConfig
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("core", TEMPORAL_CORES)
def test_ratio_is_one_before_the_first_gradient_step(core: str) -> None:
    torch.manual_seed(0)
    env = PointGoalEnv(3, azimuth=16, elevation=8, max_steps=5)
    small = {"embed_dim": 32, "vit_dim": 32, "vit_layers": 1, "ssm_head_dim": 16}
    policy = NaviPolicy(
        PolicyConfig(visit_input=False, temporal_core=core, azimuth=16, elevation=8, ssm_chunk=4, **small)
    )
    storage = RolloutStorage(
        24, 3, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size, sequence_length=8
    )
    collector = RolloutCollector(env, policy, storage, seed=1)
    collector.collect(gamma=0.99, gae_lambda=0.95)  # advances episodes: the 2nd rollout starts mid-episode
    collector.collect(gamma=0.99, gae_lambda=0.95)
    assert storage.episode_starts[1:].any(), "the test needs resets inside sequences"
    assert storage.truncated.any()
    worst = 0.0
    with torch.no_grad():
        for batch in storage.sequence_minibatches(3, torch.Generator().manual_seed(0)):
            evaluation = policy.evaluate_sequences(
                batch.obs, batch.actions, batch.state0, batch.episode_starts
            )
            ratio = (evaluation.log_prob - batch.old_log_probs).exp()
            worst = max(worst, (ratio - 1).abs().max().item())
            assert torch.allclose(evaluation.value, batch.old_values, atol=1e-4)
    assert worst < 1e-4
