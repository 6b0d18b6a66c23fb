"""AR(1) action noise: each tick is still a sample of the policy's Gaussian, consecutive ticks correlate."""

from __future__ import annotations

import pytest
import torch

from navi_actor.models.correlated_noise import CorrelatedNoise
from navi_actor.models.heads import action_log_prob


def fly(correlation: float, ticks: int, drones: int = 4000) -> torch.Tensor:
    """The standard-normal noise ``[ticks, drones, 4]`` of a policy with mean 0.3 and log-std -0.5."""
    torch.manual_seed(0)
    noise = CorrelatedNoise(drones, 4, correlation, "clip", torch.device("cpu"))
    mean, log_std = torch.full((drones, 4), 0.3), torch.full((drones, 4), -0.5)
    start = torch.ones(drones, dtype=torch.bool)
    eps = []
    for _ in range(ticks):
        white = mean + torch.exp(log_std) * torch.randn(drones, 4)
        action, _ = noise.step(start, white, mean, log_std)
        eps.append((action - mean) / torch.exp(log_std))
        start = torch.zeros_like(start)
    return torch.stack(eps)


@pytest.mark.parametrize("correlation", [0.5, 0.8, 0.95])
def test_every_tick_is_standard_normal_and_neighbours_correlate_by_rho(correlation: float) -> None:
    eps = fly(correlation, ticks=12)
    for tick in (0, 1, 11):
        assert abs(float(eps[tick].mean())) < 0.03
        assert float(eps[tick].std()) == pytest.approx(1.0, abs=0.03)
    lag1 = float((eps[1:] * eps[:-1]).mean())
    lag3 = float((eps[3:] * eps[:-3]).mean())
    assert lag1 == pytest.approx(correlation, abs=0.03)
    assert lag3 == pytest.approx(correlation**3, abs=0.03)


def test_zero_correlation_returns_the_policys_own_sample_and_log_prob() -> None:
    torch.manual_seed(1)
    noise = CorrelatedNoise(5, 4, 0.0, "clip", torch.device("cpu"))
    mean, log_std = torch.randn(5, 4), torch.full((5, 4), -1.0)
    white = mean + torch.exp(log_std) * torch.randn(5, 4)
    for start in (True, False):
        action, log_prob = noise.step(torch.full((5,), start), white, mean, log_std)
        torch.testing.assert_close(action, white)
        torch.testing.assert_close(log_prob, action_log_prob(white, mean, log_std))


def test_an_episode_start_takes_fresh_noise_and_the_log_prob_is_the_executed_actions() -> None:
    torch.manual_seed(2)
    noise = CorrelatedNoise(2, 4, 0.9, "tanh", torch.device("cpu"))
    mean, log_std = torch.zeros(2, 4), torch.zeros(2, 4)
    noise.step(torch.ones(2, dtype=torch.bool), torch.full((2, 4), 2.0), mean, log_std)
    white = torch.full((2, 4), -1.0)
    action, log_prob = noise.step(torch.tensor([True, False]), white, mean, log_std)
    torch.testing.assert_close(action[0], white[0])  # restarted: this tick's own draw
    expected = 0.9 * 2.0 + (1 - 0.9**2) ** 0.5 * -1.0
    torch.testing.assert_close(action[1], torch.full((4,), expected))
    torch.testing.assert_close(log_prob, action_log_prob(action, mean, log_std, "tanh"))


@pytest.mark.parametrize("correlation", [-0.1, 1.0])
def test_a_correlation_outside_0_1_is_refused(correlation: float) -> None:
    with pytest.raises(ValueError, match="noise correlation"):
        CorrelatedNoise(1, 4, correlation, "clip", torch.device("cpu"))
