"""RND: novelty falls on repeated observations, stays high on new ones; running stats; schedule."""

from __future__ import annotations

import pytest
import torch

from navi_actor.curiosity import LinearAnneal, RandomNetworkDistillation, RndConfig, RunningMeanStd

AZ, EL = 32, 8


def scene_obs(seed: int, batch: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    obs = torch.rand(batch, 3, AZ, EL, generator=gen)
    obs[:, 2] = (obs[:, 2] > 0.3).float()
    return obs


def test_reward_drops_on_repeated_observations_after_updates() -> None:
    torch.manual_seed(0)
    rnd = RandomNetworkDistillation(RndConfig(learning_rate=3e-3, hidden=64), AZ, EL)
    familiar, novel = scene_obs(1, 16), scene_obs(2, 16)
    rnd.intrinsic_reward(torch.cat([familiar, novel]))  # both seen by the statistics, not trained on
    before_familiar = rnd.intrinsic_reward(familiar, update_stats=False).mean()
    before_novel = rnd.intrinsic_reward(novel, update_stats=False).mean()
    losses = [rnd.update(familiar).item() for _ in range(25)]
    after_familiar = rnd.intrinsic_reward(familiar, update_stats=False).mean()
    after_novel = rnd.intrinsic_reward(novel, update_stats=False).mean()
    assert losses[-1] < 0.2 * losses[0]
    assert after_familiar < 0.2 * before_familiar
    assert after_novel > 3 * after_familiar  # what was not trained on stays novel
    assert before_novel > 0


def test_the_predictor_reads_the_pooled_depth_and_valid_channels_and_checkpoints_keep_their_keys() -> None:
    """The channels are picked with a kept index; the pooled inputs are the depth and valid channels'
    8 x 8 means as before, and the index is not part of the state (checkpoints load as they were)."""
    rnd = RandomNetworkDistillation(RndConfig(pool=8), AZ, EL)
    obs = scene_obs(4, 5)
    expected = torch.nn.functional.avg_pool2d(torch.stack([obs[:, 0], obs[:, 2]], dim=1), 8).flatten(1)
    assert torch.equal(rnd._pooled(obs), expected)
    assert not any("depth_and_valid" in key for key in rnd.state_dict())


def test_target_is_frozen_and_predictor_trains() -> None:
    rnd = RandomNetworkDistillation(RndConfig(), AZ, EL)
    target_before = [p.clone() for p in rnd.target.parameters()]
    predictor_before = [p.clone() for p in rnd.predictor.parameters()]
    loss = rnd.update(scene_obs(3, 8))
    assert loss.dim() == 0 and not loss.requires_grad
    assert all(torch.equal(a, b) for a, b in zip(target_before, rnd.target.parameters(), strict=True))
    assert any(
        not torch.equal(a, b) for a, b in zip(predictor_before, rnd.predictor.parameters(), strict=True)
    )


def test_intrinsic_reward_is_normalised_by_running_std() -> None:
    torch.manual_seed(0)
    rnd = RandomNetworkDistillation(RndConfig(), AZ, EL)
    for seed in range(20):
        reward = rnd.intrinsic_reward(scene_obs(seed, 8))
    assert reward.shape == (8,) and (reward >= 0).all()
    assert 0.1 < reward.mean().item() < 10.0  # in units of the running std, whatever the raw scale
    expected = rnd._error(rnd._normalised(rnd._pooled(scene_obs(19, 8)))) / rnd.reward_stats.std
    torch.testing.assert_close(reward, expected.clamp_max(5.0))


def test_first_reward_is_bounded_despite_empty_statistics() -> None:
    """One drone, first step: the batch variance is 0; the floor and clip keep the reward sane."""
    torch.manual_seed(0)
    rnd = RandomNetworkDistillation(RndConfig(), AZ, EL)
    first = rnd.intrinsic_reward(scene_obs(0, 1))
    assert torch.isfinite(first).all() and 0 < first.item() <= 5.0
    assert rnd.reward_scale() >= 0.1 * rnd.reward_stats.mean


def test_running_mean_std_matches_batch_statistics() -> None:
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(1000, 3, generator=gen, dtype=torch.float64) * torch.tensor([1.0, 2.0, 5.0]) + 3.0
    stats = RunningMeanStd((3,), epsilon=0.0)
    stats.mean, stats.var = stats.mean.double(), stats.var.double()
    for chunk in data.split(137):
        stats.update(chunk)
    torch.testing.assert_close(stats.mean, data.mean(0))
    torch.testing.assert_close(stats.var, data.var(0, unbiased=False))
    assert stats.count.item() == 1000


def test_linear_anneal_schedule() -> None:
    schedule = LinearAnneal(start=1.0, end=0.2, steps=100)
    assert schedule.at(0) == 1.0 and schedule.at(-5) == 1.0
    assert schedule.at(50) == pytest.approx(0.6)
    assert schedule.at(100) == pytest.approx(0.2) and schedule.at(10_000) == pytest.approx(0.2)
    assert LinearAnneal(start=1.0, end=0.0, steps=0).at(0) == 0.0


def test_pool_must_divide_the_observation() -> None:
    with pytest.raises(ValueError, match="must divide"):
        RandomNetworkDistillation(RndConfig(pool=3), AZ, EL)
