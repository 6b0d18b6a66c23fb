"""BC is correct for both action_squash modes: a constant demonstrated action is what the trained
policy's deployed (physics) mean action flies; with tanh, through a raw mean at atanh(a)."""

from __future__ import annotations

import pytest
import torch

from navi_actor.bc import BCConfig
from navi_actor.bc.dataset import DemoData
from navi_actor.bc.trainer import sequence_mse, train_bc
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.heads import BC_TANH_EPS

pytestmark = pytest.mark.usefixtures("one_torch_thread")

TARGET = torch.tensor([0.9, -0.6, 0.3, 1.0])  # 1.0: a full command, fitted 0.01 inside it with tanh


def constant_demos(frames: int = 256, episode: int = 32) -> DemoData:
    gen = torch.Generator().manual_seed(0)
    starts = torch.arange(frames) % episode == 0
    bounds = torch.tensor([[s, s + episode] for s in range(0, frames, episode)])
    return DemoData(
        torch.rand(frames, 3, 16, 8, generator=gen), TARGET.expand(frames, 4).clone(), starts, bounds, []
    )


@pytest.mark.parametrize("squash", ["tanh", "clip"])
def test_bc_learns_a_constant_action_in_both_modes(squash: str) -> None:
    torch.manual_seed(0)
    config = PolicyConfig(
        visit_input=False,
        temporal_core="gru", azimuth=16, elevation=8, embed_dim=32, vit_dim=32, vit_layers=1
    )
    policy = NaviPolicy(config.model_copy(update={"action_squash": squash}))
    data = constant_demos()
    bc = BCConfig(epochs=30, sequence_length=8, streams=4, learning_rate=1e-2)
    history = train_bc(
        policy, data, data.select_episodes(torch.tensor([0])), bc, torch.Generator().manual_seed(0)
    )
    obs = torch.rand(16, 3, 16, 8)
    acted = policy.act(obs, policy.initial_state(16), torch.ones(16, dtype=torch.bool), deterministic=True)
    flown = policy.physics_action(acted.action)
    expected = TARGET.clone()
    if squash == "tanh":
        expected[3] = 1.0 - BC_TANH_EPS
        torch.testing.assert_close(acted.action_mean[:, 0], torch.full((16,), 1.4722), atol=0.1, rtol=0)
    assert (flown - expected).abs().max() < 0.03, flown
    assert history.holdout_mse[-1] < 1e-3
    assert sequence_mse(policy, data, 4, 8) < 1e-3
