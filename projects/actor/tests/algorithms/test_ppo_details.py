"""Learner details from the reference trainers: explained variance reported, zero value head, state-dependent
std, periodic KL-reference refresh, discount / GAE-lambda / log-std schedules."""

from __future__ import annotations

import math

import pytest
import torch
from point_rollouts import collected

from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import ActorSettings, PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.models.heads import STATE_STD_GATE_BIAS, gaussian_entropy, gaussian_log_prob

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_update_reports_explained_variance(small_config: PolicyConfig) -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(small_config)
    result = PPOLearner(policy, PPOConfig(epochs=1, num_minibatches=2)).update(collected(policy))
    assert "explained_variance" in result.metrics
    assert result.metrics["explained_variance"] <= 1.0


def test_zero_initialised_value_head_predicts_zero_everywhere(small_config: PolicyConfig) -> None:
    policy = NaviPolicy(small_config.model_copy(update={"value_head_init": "zero"}))
    obs = torch.rand(5, 3, 16, 8)
    out = policy.act(obs, policy.initial_state(5), torch.ones(5, dtype=torch.bool))
    assert torch.equal(out.value, torch.zeros(5))
    default = NaviPolicy(small_config).act(obs, policy.initial_state(5), torch.ones(5, dtype=torch.bool))
    assert not torch.equal(default.value, torch.zeros(5))


def test_state_dependent_std_starts_global_then_varies_per_state_with_consistent_log_probs(
    small_config: PolicyConfig,
) -> None:
    torch.manual_seed(1)
    policy = NaviPolicy(small_config.model_copy(update={"log_std_mode": "state"}))
    torch.manual_seed(1)
    weights = NaviPolicy(small_config).state_dict()  # the gate draws no random numbers: same start
    assert all(torch.equal(value, policy.state_dict()[name]) for name, value in weights.items())
    features = torch.randn(6, 32)
    _, log_std = policy.actor(features)
    start = small_config.init_log_std + math.log(torch.sigmoid(torch.tensor(STATE_STD_GATE_BIAS)).item())
    assert torch.allclose(log_std, torch.full((6, 4), start))  # every state at 0.95 of the global std
    assert policy.actor.log_std_layer is not None
    with torch.no_grad():
        policy.actor.log_std_layer.weight.normal_()
    _, log_std = policy.actor(features)
    assert log_std.std(dim=0).min() > 0  # differs between states
    assert log_std.min() >= small_config.log_std_min and log_std.max() <= small_config.init_log_std
    obs = torch.rand(1, 3, 3, 16, 8)
    state0, starts = policy.initial_state(3), torch.ones(1, 3, dtype=torch.bool)
    acted = policy.act(obs[0], state0, starts[0])
    evaluated = policy.evaluate_sequences(obs, acted.action[None], state0, starts)
    assert torch.allclose(evaluated.log_prob[0], acted.log_prob, atol=1e-5)
    assert evaluated.entropy[0].std() > 0  # the entropy of a state-dependent std differs per drone
    # the log-prob is that of the Gaussian with the state's own std, not the global one
    global_std = torch.full_like(acted.action_mean, small_config.init_log_std)
    assert not torch.allclose(acted.log_prob, gaussian_log_prob(acted.action, acted.action_mean, global_std))


def test_state_std_learns_at_the_ceiling_and_never_exceeds_the_falling_ceiling(
    small_config: PolicyConfig,
) -> None:
    # The entropy bonus pushes the std up. A state part added to the global value and hard-clamped
    # at log_std_max lost its gradient there: a measured run's std sat at the clamp in every state.
    torch.manual_seed(3)
    policy = NaviPolicy(small_config.model_copy(update={"log_std_mode": "state"}))
    assert policy.actor.log_std_layer is not None
    with torch.no_grad():
        policy.actor.log_std_param.fill_(small_config.log_std_max)  # the global std at the ceiling
        policy.actor.log_std_layer.bias.fill_(8.0)  # and every state's gate nearly open
    features = torch.randn(6, 32)
    gaussian_entropy(policy.actor(features)[1]).sum().backward()
    assert policy.actor.log_std_layer.weight.grad is not None
    assert float(policy.actor.log_std_layer.bias.grad.abs().min()) > 0  # still learning per state
    # the falling ceiling bounds the global value, and so every state (the gate only lowers it)
    learner = PPOLearner(policy, PPOConfig(final_log_std_max=-2.0), total_updates=10)
    learner.set_time_spent(0.5)
    learner._apply_log_std_ceiling()
    with torch.no_grad():
        policy.actor.log_std_layer.weight.normal_(std=3.0)
        log_std = policy.actor(features)[1]
    assert float(log_std.max()) <= learner.log_std_ceiling() + 1e-6


def test_reference_policy_is_refreshed_every_n_updates(small_config: PolicyConfig) -> None:
    torch.manual_seed(2)
    policy = NaviPolicy(small_config)
    config = PPOConfig(epochs=1, num_minibatches=2, reference_kl_coef=0.1, reference_refresh_updates=2,
                       target_kl=None, learning_rate=1e-2)  # fmt: skip
    learner = PPOLearner(policy, config)
    assert learner.reference_policy is not None  # starts as a copy of the initial policy
    storage = collected(policy)

    def same() -> bool:
        assert learner.reference_policy is not None
        reference = learner.reference_policy.state_dict()
        return all(torch.equal(value, reference[key]) for key, value in policy.state_dict().items())

    assert same()
    learner.update(storage)
    assert not same()  # one update: the reference still holds the initial weights
    result = learner.update(storage)
    assert same() and result.metrics["reference_kl"] >= 0.0  # refreshed after the second update


def test_discount_and_log_std_schedules_follow_the_budget(small_config: PolicyConfig) -> None:
    policy = NaviPolicy(small_config)
    learner = PPOLearner(policy, PPOConfig(final_log_std_max=-2.0), total_updates=10)
    assert learner.discount(0.99, 0.95, 0.999, 0.9) == (0.99, 0.95)
    learner.set_time_spent(0.5)
    gamma, gae_lambda = learner.discount(0.99, 0.95, 0.999, 0.9)
    assert gamma == pytest.approx(0.9945) and gae_lambda == pytest.approx(0.925)
    assert learner.discount(0.99, 0.95) == (0.99, 0.95)  # no final values: constant
    assert learner.log_std_ceiling() == pytest.approx(
        small_config.log_std_max + 0.5 * (-2.0 - small_config.log_std_max)
    )
    with torch.no_grad():
        policy.actor.log_std_param.fill_(0.5)
    learner._apply_log_std_ceiling()
    halfway = small_config.log_std_max + 0.5 * (-2.0 - small_config.log_std_max)  # below the 0.5 filled in
    assert float(policy.actor.log_std_param.detach().max()) == pytest.approx(halfway)


def test_settings_refuse_inconsistent_schedules() -> None:
    with pytest.raises(ValueError, match="reference_kl_coef"):
        ActorSettings(ppo={"reference_refresh_updates": 3})
    with pytest.raises(ValueError, match=r"final_log_std_max must be >= policy\.log_std_min"):
        ActorSettings(ppo={"final_log_std_max": -6.0})
    # the falling ceiling bounds a state-dependent std too (the gate only lowers the global value)
    assert ActorSettings(policy={"log_std_mode": "state"}).ppo.final_log_std_max == -1.0
