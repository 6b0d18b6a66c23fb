"""GAE against a hand-written scalar loop and hand-computed numbers (terminated vs truncated)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from navi_actor.algorithms.gae import gae_advantages, normalize_advantages


def reference_gae(rewards, values, terminated, truncated, *, final_values, last_values, gamma, lam):
    """One drone at a time, one step at a time: the textbook definition."""
    T, B = len(rewards), len(rewards[0])
    advantages = [[0.0] * B for _ in range(T)]
    for b in range(B):
        running = 0.0
        for t in reversed(range(T)):
            if terminated[t][b]:
                next_value, carry = 0.0, 0.0
            elif truncated[t][b]:
                next_value, carry = final_values[t][b], 0.0
            else:
                next_value = values[t + 1][b] if t + 1 < T else last_values[b]
                carry = 1.0
            delta = rewards[t][b] + gamma * next_value - values[t][b]
            running = delta + gamma * lam * carry * running
            advantages[t][b] = running
    return advantages


def test_single_step_terminated_has_no_future() -> None:
    adv, ret = gae_advantages(
        rewards=torch.tensor([[1.0]]),
        values=torch.tensor([[0.5]]),
        terminated=torch.tensor([[True]]),
        truncated=torch.tensor([[False]]),
        final_values=torch.tensor([[9.0]]),
        last_values=torch.tensor([7.0]),
        gamma=0.9,
        gae_lambda=0.8,
    )
    assert adv.item() == pytest.approx(0.5)  # 1 + 0 - 0.5
    assert ret.item() == pytest.approx(1.0)


def test_truncation_bootstraps_from_final_observation_value() -> None:
    # Step 0 truncated: successor is V(final_obs)=2, not values[1]=100 (a new episode).
    adv, _ = gae_advantages(
        rewards=torch.tensor([[1.0], [0.0]]),
        values=torch.tensor([[0.5], [100.0]]),
        terminated=torch.tensor([[False], [False]]),
        truncated=torch.tensor([[True], [False]]),
        final_values=torch.tensor([[2.0], [0.0]]),
        last_values=torch.tensor([100.0]),
        gamma=0.5,
        gae_lambda=1.0,
    )
    assert adv[0, 0].item() == pytest.approx(1.0 + 0.5 * 2.0 - 0.5)
    assert adv[1, 0].item() == pytest.approx(0.0 + 0.5 * 100.0 - 100.0)


def test_hand_computed_three_step_chain() -> None:
    gamma, lam = 0.9, 0.5
    rewards, values = [1.0, 2.0, 3.0], [0.1, 0.2, 0.3]
    last = 0.4
    d2 = 3.0 + gamma * last - 0.3
    d1 = 2.0 + gamma * 0.3 - 0.2
    d0 = 1.0 + gamma * 0.2 - 0.1
    expected = [d0 + gamma * lam * (d1 + gamma * lam * d2), d1 + gamma * lam * d2, d2]
    adv, _ = gae_advantages(
        torch.tensor(rewards).unsqueeze(1),
        torch.tensor(values).unsqueeze(1),
        torch.zeros(3, 1, dtype=torch.bool),
        torch.zeros(3, 1, dtype=torch.bool),
        final_values=torch.zeros(3, 1),
        last_values=torch.tensor([last]),
        gamma=gamma,
        gae_lambda=lam,
    )
    assert adv.squeeze(1).tolist() == pytest.approx(expected, rel=1e-6)


@settings(max_examples=40)
@given(
    T=st.integers(1, 12),
    B=st.integers(1, 4),
    seed=st.integers(0, 2**31 - 1),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
)
def test_matches_reference_loop(T: int, B: int, seed: int, gamma: float, lam: float) -> None:
    g = torch.Generator().manual_seed(seed)
    rewards, values, final_values = (torch.randn(T, B, generator=g, dtype=torch.float64) for _ in range(3))
    last_values = torch.randn(B, generator=g, dtype=torch.float64)
    terminated = torch.rand(T, B, generator=g) < 0.2
    truncated = (torch.rand(T, B, generator=g) < 0.2) & ~terminated
    adv, ret = gae_advantages(
        rewards,
        values,
        terminated,
        truncated,
        final_values=final_values,
        last_values=last_values,
        gamma=gamma,
        gae_lambda=lam,
    )
    expected = reference_gae(
        rewards.tolist(),
        values.tolist(),
        terminated.tolist(),
        truncated.tolist(),
        final_values=final_values.tolist(),
        last_values=last_values.tolist(),
        gamma=gamma,
        lam=lam,
    )
    assert torch.allclose(adv, torch.tensor(expected, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(ret, adv + values)


def test_shape_mismatch_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"\[T, B\]"):
        gae_advantages(
            torch.zeros(3, 2),
            torch.zeros(3, 1),
            torch.zeros(3, 2, dtype=torch.bool),
            torch.zeros(3, 2, dtype=torch.bool),
            final_values=torch.zeros(3, 2),
            last_values=torch.zeros(2),
            gamma=0.9,
            gae_lambda=0.9,
        )


def test_normalisation_is_zero_mean_unit_std() -> None:
    adv = normalize_advantages(torch.arange(12.0).reshape(4, 3) * 3 + 1)
    assert adv.mean().abs().item() < 1e-6
    assert adv.std().item() == pytest.approx(1.0, abs=1e-5)
