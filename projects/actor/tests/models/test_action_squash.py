"""policy.action_squash: the tanh log-probability is the change of variables of the Gaussian, executed
actions stay inside (-1, 1), the entropy estimate is the squashed entropy and pulls a saturated mean
back, and the default clip mode draws and scores exactly what it always did."""

from __future__ import annotations

import math

import pytest
import torch
from torch.distributions import Independent, Normal, TanhTransform, TransformedDistribution

from navi_actor.models import NaviPolicy, PolicyConfig, physics_action, raw_action
from navi_actor.models.heads import (
    BC_TANH_EPS,
    action_entropy,
    action_log_prob,
    gaussian_log_prob,
    tanh_log_det_jacobian,
)

AZ, EL = 16, 8


def small(squash: str, **extra: object) -> NaviPolicy:
    torch.manual_seed(0)
    config = PolicyConfig(
        visit_input=False,
        temporal_core="gru",
        azimuth=AZ,
        elevation=EL,
        embed_dim=32,
        vit_dim=32,
        vit_layers=1,
        **extra,
    )
    return NaviPolicy(config.model_copy(update={"action_squash": squash}))


def squashed(mean: torch.Tensor, log_std: torch.Tensor) -> TransformedDistribution:
    """torch's own tanh-Gaussian: the independent oracle of the change of variables."""
    return TransformedDistribution(Independent(Normal(mean, log_std.exp()), 1), [TanhTransform()])


def test_tanh_log_prob_is_the_change_of_variables_of_the_gaussian() -> None:
    gen = torch.Generator().manual_seed(0)
    mean = torch.randn(256, 4, generator=gen, dtype=torch.float64)
    log_std = torch.rand(256, 4, generator=gen, dtype=torch.float64) * 2 - 1.5
    raw = mean + log_std.exp() * torch.randn(256, 4, generator=gen, dtype=torch.float64)
    raw = raw.clamp(-4, 4)  # atanh(tanh(u)) is exact enough in float64 here
    oracle = squashed(mean, log_std).log_prob(torch.tanh(raw))  # density of a, inverted by atanh
    direct = gaussian_log_prob(raw, mean, log_std) - torch.log1p(-torch.tanh(raw).square()).sum(-1)
    ours = action_log_prob(raw.float(), mean.float(), log_std.float(), "tanh")
    torch.testing.assert_close(ours.double(), oracle, atol=2e-4, rtol=1e-5)
    torch.testing.assert_close(ours.double(), direct, atol=2e-4, rtol=1e-5)
    # clip: the plain Gaussian density of the raw sample
    assert torch.equal(action_log_prob(raw, mean, log_std, "clip"), gaussian_log_prob(raw, mean, log_std))


def test_the_jacobian_is_finite_and_exact_where_tanh_rounds_to_one() -> None:
    raw = torch.tensor([[0.0, 5.0, -12.0, 40.0]])
    assert torch.tanh(raw[0, 2:]).abs().eq(1.0).all()  # float32 tanh is exactly +-1 there ...
    # log(1 - tanh(u)^2) = -2 log cosh(u), with log cosh(u) = |u| + log1p(exp(-2|u|)) - log 2
    expected = sum(-2 * (abs(u) + math.log1p(math.exp(-2 * abs(u))) - math.log(2)) for u in (0, 5, 12, 40))
    assert torch.isfinite(tanh_log_det_jacobian(raw)).all()  # ... and the log-density still finite
    assert abs(float(tanh_log_det_jacobian(raw)) - expected) < 1e-3


def test_physics_and_raw_actions_for_both_modes() -> None:
    raw = torch.tensor([-3.0, -0.5, 0.0, 0.5, 3.0])
    assert torch.equal(physics_action(raw, "clip"), raw.clamp(-1, 1))
    assert torch.equal(physics_action(raw, "tanh"), torch.tanh(raw))
    demonstrated = torch.tensor([-1.0, -0.9, 0.0, 0.9, 1.0])
    assert torch.equal(raw_action(demonstrated, "clip"), demonstrated)
    targets = raw_action(demonstrated, "tanh")
    torch.testing.assert_close(torch.tanh(targets[1:4]), demonstrated[1:4])
    torch.testing.assert_close(torch.tanh(targets[[0, 4]]), torch.tensor([-1 + BC_TANH_EPS, 1 - BC_TANH_EPS]))
    with pytest.raises(ValueError, match="unknown action_squash 'sigmoid'; valid choices: clip, tanh"):
        physics_action(raw, "sigmoid")


def test_tanh_entropy_estimates_the_squashed_entropy_and_pulls_saturation_back() -> None:
    gen = torch.Generator().manual_seed(1)
    mean = torch.tensor([0.0, 0.8, 2.0, -3.0])
    log_std = torch.tensor([0.0, -0.5, -1.0, 0.3])
    n = 200_000
    raw = mean + log_std.exp() * torch.randn(n, 4, generator=gen)
    estimate = action_entropy(raw, mean.expand(n, 4), log_std.expand(n, 4), "tanh").mean()
    oracle = -squashed(mean.double(), log_std.double()).log_prob(
        torch.tanh(raw.double()).clamp(-1 + 1e-12, 1 - 1e-12)
    )
    assert abs(float(estimate) - float(oracle.mean())) < 0.02
    # the Gaussian entropy of u is blind to saturation; the squashed one is not
    gaussian = action_entropy(raw[:1], mean[None], log_std[None], "clip")
    assert float(estimate) < float(gaussian) - 1.0
    saturated = torch.full((1, 4), 3.0, requires_grad=True)
    u = saturated.detach() + 0.1 * torch.randn(1, 4, generator=gen)
    action_entropy(u, saturated, torch.full((1, 4), math.log(0.1)), "tanh").sum().backward()
    assert saturated.grad is not None and (saturated.grad < -1.5).all()  # ascent moves the mean to 0


def test_tanh_policy_executes_inside_the_range_and_rescores_exactly() -> None:
    policy = small("tanh", init_log_std=0.0, log_std_max=1.0)
    T, B = 6, 32
    gen = torch.Generator().manual_seed(2)
    obs = torch.rand(T, B, 3, AZ, EL, generator=gen)
    starts = torch.zeros(T, B, dtype=torch.bool)
    starts[0] = starts[3, :5] = True
    state, actions, log_probs = policy.initial_state(B), [], []
    for t in range(T):
        out = policy.act(obs[t], state, starts[t])
        state = out.state
        actions.append(out.action)
        log_probs.append(out.log_prob)
    raw = torch.stack(actions)
    executed = policy.physics_action(raw)
    assert executed.abs().max() < 1.0 and raw.abs().max() > 1.0  # raw samples leave the range, a does not
    torch.testing.assert_close(executed, torch.tanh(raw))
    evaluation = policy.evaluate_sequences(obs, raw, policy.initial_state(B), starts)
    assert (evaluation.log_prob - torch.stack(log_probs)).abs().max() < 1e-4  # PPO ratios start at 1
    mean = evaluation.action_mean.detach()
    log_std = policy.actor.log_std_param.detach().expand_as(mean)
    expected = gaussian_log_prob(raw, mean, log_std) - tanh_log_det_jacobian(raw)
    torch.testing.assert_close(evaluation.log_prob.detach(), expected, atol=1e-4, rtol=1e-5)
    deterministic = policy.act(obs[0], policy.initial_state(B), starts[0], deterministic=True)
    torch.testing.assert_close(
        policy.physics_action(deterministic.action), torch.tanh(deterministic.action_mean)
    )


def test_clip_mode_draws_and_scores_exactly_as_before() -> None:
    """Clip is the old policy bit for bit: the sample is mean + std * N(0, 1) from the same draws, its
    log-prob the Gaussian's, and a tanh policy with the same weights and seed draws the same raw u."""
    obs, starts = torch.rand(8, 3, AZ, EL), torch.ones(8, dtype=torch.bool)
    # forward mean 0: the same weights in both modes (otherwise tanh starts at atanh of it)
    wide = {"init_log_std": 0.5, "log_std_max": 1.0, "init_forward_mean": 0.0}
    clip, tanh = (small(mode, **wide) for mode in ("clip", "tanh"))
    torch.manual_seed(7)
    acted = clip.act(obs, clip.initial_state(8), starts)
    torch.manual_seed(7)
    noise = torch.randn(8, 4)
    log_std = clip.actor.log_std_param.detach().expand(8, 4)
    assert torch.equal(acted.action, acted.action_mean + log_std.exp() * noise)
    assert torch.equal(acted.log_prob, gaussian_log_prob(acted.action, acted.action_mean, log_std))
    torch.manual_seed(7)
    squashed_act = tanh.act(obs, tanh.initial_state(8), starts)
    assert torch.equal(squashed_act.action, acted.action)
    assert not torch.allclose(squashed_act.log_prob, acted.log_prob)


def test_chunk_means_are_squashed_like_the_action() -> None:
    from navi_actor.inference.stepper import PolicyStepper

    policy = small("tanh", action_chunk=3)
    obs = torch.rand(2, 3, AZ, EL)
    acted = policy.act(obs, policy.initial_state(2), torch.ones(2, dtype=torch.bool), deterministic=True)
    chunk = PolicyStepper(policy, 2, deterministic=True).act_chunk(obs)
    assert acted.action_chunk is not None
    torch.testing.assert_close(chunk, torch.tanh(acted.action_chunk))


def test_the_initial_forward_action_is_the_executed_one_in_both_modes() -> None:
    for squash in ("clip", "tanh"):
        policy = small(squash, init_forward_mean=0.5)
        obs = torch.rand(4, 3, AZ, EL)
        acted = policy.act(obs, policy.initial_state(4), torch.ones(4, dtype=torch.bool), deterministic=True)
        flown = policy.physics_action(acted.action)[:, 0]
        torch.testing.assert_close(flown, torch.full((4,), 0.5), atol=0.02, rtol=0)  # gain 0.01 weights
