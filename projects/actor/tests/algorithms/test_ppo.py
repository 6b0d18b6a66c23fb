"""PPO losses (known answers) and learner behaviour: KL stop, warm-up, accumulation, LR schedule."""

from __future__ import annotations

import pytest
import torch
from point_rollouts import collected

from navi_actor.algorithms.losses import clipped_surrogate_loss, clipped_value_loss, kl_to_reference
from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_surrogate_known_answers() -> None:
    old = torch.zeros(3)
    new = torch.log(torch.tensor([1.5, 1.0, 0.5]))
    adv = torch.tensor([1.0, 2.0, -1.0])
    loss, clip_fraction, approx_kl = clipped_surrogate_loss(new, old, adv, clip_range=0.2)
    # min(1.5*1, 1.2*1)=1.2 ; 2 ; min(0.5*-1, 0.8*-1)=-0.8  -> mean 0.8, negated
    assert loss.item() == pytest.approx(-(1.2 + 2.0 - 0.8) / 3)
    assert clip_fraction.item() == pytest.approx(2 / 3)
    assert approx_kl.item() > 0


def test_value_loss_known_answers() -> None:
    values, old, returns = torch.tensor([2.0]), torch.tensor([0.0]), torch.tensor([1.0])
    assert clipped_value_loss(values, old, returns, None).item() == pytest.approx(0.5)
    # clipped value 0.2 -> error 0.64 > 1.0? no: unclipped (2-1)^2=1, clipped (0.2-1)^2=0.64 -> max = 1
    assert clipped_value_loss(values, old, returns, 0.2).item() == pytest.approx(0.5)
    assert clipped_value_loss(torch.tensor([1.5]), old, torch.tensor([3.0]), 0.2).item() == pytest.approx(
        0.5 * (3.0 - 0.2) ** 2
    )


def test_kl_to_reference_is_zero_only_for_identical_policies() -> None:
    log_probs = torch.randn(10)
    assert kl_to_reference(log_probs, log_probs).item() == pytest.approx(0.0, abs=1e-7)
    assert kl_to_reference(log_probs, log_probs + 0.3).item() > 0


def test_kl_early_stop_cuts_the_epochs(small_config: PolicyConfig) -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    learner = PPOLearner(policy, PPOConfig(epochs=4, num_minibatches=2, learning_rate=1e-2, target_kl=1e-9))
    result = learner.update(storage, torch.Generator().manual_seed(0))
    assert result.early_stopped and result.epochs_run == 1
    relaxed = PPOLearner(policy, PPOConfig(epochs=3, num_minibatches=2, target_kl=None))
    result = relaxed.update(storage, torch.Generator().manual_seed(0))
    assert not result.early_stopped and result.epochs_run == 3 and len(result.per_epoch) == 3
    assert {"policy_eval", "backward", "clip", "optimizer_step", "minibatch_fetch"} <= set(result.timings)


def test_value_warmup_leaves_the_actor_head_untouched(small_config: PolicyConfig) -> None:
    torch.manual_seed(1)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    actor_before = [p.detach().clone() for p in policy.actor.parameters()]
    critic_before = [p.detach().clone() for p in policy.critic.parameters()]
    learner = PPOLearner(
        policy, PPOConfig(epochs=1, num_minibatches=2, value_warmup_updates=1, target_kl=None)
    )
    learner.update(storage)
    assert all(torch.equal(a, b) for a, b in zip(actor_before, policy.actor.parameters(), strict=True))
    assert not all(torch.equal(a, b) for a, b in zip(critic_before, policy.critic.parameters(), strict=True))
    learner.update(storage)  # warm-up over: the actor now learns
    assert not all(torch.equal(a, b) for a, b in zip(actor_before, policy.actor.parameters(), strict=True))


def test_gradient_accumulation_takes_one_optimizer_step_per_group(small_config: PolicyConfig) -> None:
    torch.manual_seed(2)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    learner = PPOLearner(
        policy, PPOConfig(epochs=2, num_minibatches=4, gradient_accumulation=2, target_kl=None)
    )
    learner.update(storage)
    steps = {int(state["step"].item()) for state in learner.optimizer.state.values()}
    assert steps == {2 * 4 // 2}


def test_linear_lr_annealing_and_resume_schedule(small_config: PolicyConfig) -> None:
    policy = NaviPolicy(small_config)
    learner = PPOLearner(policy, PPOConfig(learning_rate=1.0, lr_schedule="linear"), total_updates=4)
    seen = []
    for _ in range(4):
        seen.append(learner.current_learning_rate())
        learner.update_index += 1
    assert seen == pytest.approx([1.0, 0.75, 0.5, 0.25])
    learner.schedule(2)  # a resumed run anneals over its own budget from the restored counter
    assert learner.current_learning_rate() == pytest.approx(1.0)
    learner.update_index += 1
    assert learner.current_learning_rate() == pytest.approx(0.5)
    constant = PPOLearner(policy, PPOConfig(learning_rate=0.1, lr_schedule="constant"), total_updates=4)
    constant.update_index = 3
    assert constant.current_learning_rate() == pytest.approx(0.1)


def test_lr_anneals_over_a_time_budget_and_the_nearer_budget_wins(small_config: PolicyConfig) -> None:
    policy = NaviPolicy(small_config)
    learner = PPOLearner(policy, PPOConfig(learning_rate=1.0, lr_schedule="linear"))
    assert learner.current_learning_rate() == pytest.approx(1.0)  # unbounded: constant
    learner.set_time_spent(0.25)
    assert learner.current_learning_rate() == pytest.approx(0.75)
    learner.set_time_spent(1.5)  # past the budget: never negative
    assert learner.current_learning_rate() == 0.0
    learner.schedule(4)
    learner.update_index += 2  # half of the steps, a tenth of the time: the steps set the rate
    learner.set_time_spent(0.1)
    assert learner.current_learning_rate() == pytest.approx(0.5)
    learner.set_time_spent(0.8)
    assert learner.current_learning_rate() == pytest.approx(0.2)
    learner.set_time_spent(None)
    assert learner.current_learning_rate() == pytest.approx(0.5)
    constant = PPOLearner(policy, PPOConfig(learning_rate=0.1, lr_schedule="constant"))
    constant.set_time_spent(0.9)
    assert constant.current_learning_rate() == pytest.approx(0.1)


def test_reference_kl_penalty_is_reported_and_decays(small_config: PolicyConfig) -> None:
    torch.manual_seed(3)
    policy, reference = NaviPolicy(small_config), NaviPolicy(small_config)
    storage = collected(policy)
    config = PPOConfig(
        epochs=1, num_minibatches=2, reference_kl_coef=1.0, reference_kl_decay=0.5, target_kl=None
    )
    learner = PPOLearner(policy, config, reference_policy=reference)
    assert learner.reference_kl_coef() == 1.0
    result = learner.update(storage)
    assert result.metrics["reference_kl"] > 0
    assert learner.reference_kl_coef() == 0.5
    assert not any(p.requires_grad for p in reference.parameters())


def test_divergence_stops_the_update_with_a_clear_error(small_config: PolicyConfig) -> None:
    torch.manual_seed(4)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    storage.returns[0, 0] = float("inf")  # a poisoned target makes the value loss non-finite
    learner = PPOLearner(policy, PPOConfig(epochs=2, num_minibatches=2, target_kl=None))
    # the value loss is named (with the default symmetry loss the policy loss can be non-finite too)
    with pytest.raises(FloatingPointError, match=r"non-finite (policy_loss, )?value_loss"):
        learner.update(storage)
