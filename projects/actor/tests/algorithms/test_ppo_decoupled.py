"""Decoupled PPO for rollouts acted by older weights (collect-ahead, Ray workers).

What must hold: without an older acting version nothing changes (no replay, the plain objective);
with one, the learner replays the rollout under its weights at the update's start, the clip and the
KL early stop measure the update's own step (the same whoever acted), and the importance weight
``pi_prox / pi_behaviour`` scales each sample's gradient.
"""

from __future__ import annotations

import copy

import pytest
import torch
from point_rollouts import collected

from navi_actor.algorithms.losses import clipped_surrogate_loss
from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.config import PPOConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.storage import RolloutStorage

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_decoupled_surrogate_clips_around_the_proximal_policy_and_weights_by_who_acted() -> None:
    behaviour = torch.log(torch.tensor([0.5, 1.0, 2.0]))  # older weights' probabilities (relative)
    proximal = torch.zeros(3)
    advantages = torch.tensor([1.0, -1.0, 2.0])
    new = torch.log(torch.tensor([1.5, 1.1, 0.9])).requires_grad_()
    loss, clip_fraction, approx_kl = clipped_surrogate_loss(new, behaviour, advantages, 0.2, proximal)
    # r = pi/pi_prox: 1.5 (clipped to 1.2 for A>0), 1.1 (A<0: min(-1.1, -1.1)), 0.9; weights 2, 1, 0.5
    assert loss.item() == pytest.approx(-(2.0 * 1.2 - 1.1 + 0.5 * 0.9 * 2.0) / 3)
    assert clip_fraction.item() == pytest.approx(1 / 3)
    ratios = torch.tensor([1.5, 1.1, 0.9])
    assert approx_kl.item() == pytest.approx(float(((ratios - 1) - ratios.log()).mean()), rel=1e-5)
    loss.backward()
    assert new.grad is not None  # d(-mean(w r A))/d log pi = -w r A / 3 where unclipped; 0 where clipped
    expected = torch.tensor([0.0, -1.0 * 1.1 * -1.0, -0.5 * 0.9 * 2.0]) / 3
    assert torch.allclose(new.grad, expected, atol=1e-6)


def test_decoupled_surrogate_is_the_plain_one_when_the_proximal_policy_acted() -> None:
    old, new, advantages = torch.randn(50), torch.randn(50), torch.randn(50)
    plain = clipped_surrogate_loss(new, old, advantages, 0.2)
    decoupled = clipped_surrogate_loss(new, old, advantages, 0.2, old.clone())
    for a, b in zip(plain, decoupled, strict=True):
        assert a.item() == pytest.approx(b.item(), rel=1e-6)


def acted_earlier(storage: RolloutStorage, seed: int = 3) -> RolloutStorage:
    """The same rollout as if older weights had acted it: other recorded log-probabilities."""
    older = copy.deepcopy(storage)
    noise = torch.randn(storage.log_probs.shape, generator=torch.Generator().manual_seed(seed))
    older.log_probs = storage.log_probs + 0.3 * noise
    older.acting_version = -1  # before the learner's first update
    return older


def learner(policy: NaviPolicy, **overrides: object) -> PPOLearner:
    config = {"epochs": 3, "num_minibatches": 2, "learning_rate": 1e-3, "target_kl": None, **overrides}
    return PPOLearner(copy.deepcopy(policy), PPOConfig(**config))  # type: ignore[arg-type]


def test_a_rollout_older_weights_acted_is_replayed_under_the_weights_at_the_update_start(
    small_config: PolicyConfig,
) -> None:
    torch.manual_seed(0)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    serial = learner(policy).update(storage, torch.Generator().manual_seed(0))
    assert storage.proximal_log_probs is None and "proximal_eval" not in serial.timings

    older = acted_earlier(storage)
    start = learner(policy)
    replayed = start.update(older, torch.Generator().manual_seed(0))
    assert older.proximal_log_probs is not None and replayed.timings["proximal_eval"] > 0
    # the replay is the acting weights' own log-probabilities (those weights are the start's here)
    assert torch.allclose(older.proximal_log_probs, storage.log_probs, atol=1e-4)
    # a rollout tagged with the learner's own version is not replayed
    older.acting_version = start.update_index
    start.update(older, torch.Generator().manual_seed(0))
    assert older.proximal_log_probs is None


def test_the_kl_stop_and_clip_see_the_same_step_whoever_acted(small_config: PolicyConfig) -> None:
    """Every epoch's KL and clip fraction measure the update's own step away from its start weights:
    about the same for the rollout acted now and for the one older weights acted, where the coupled
    objective reads the lag itself (KL 0.04, 40 % clipped before any step)."""
    torch.manual_seed(1)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    older = acted_earlier(storage)
    now, lagged, coupled = (
        learner(policy).update(rollout, torch.Generator().manual_seed(0)).per_epoch
        for rollout in (storage, older, _untagged(older))
    )
    for epoch_now, epoch_lagged, epoch_coupled in zip(now, lagged, coupled, strict=True):
        assert abs(epoch_lagged["approx_kl"] - epoch_now["approx_kl"]) < 0.002
        assert abs(epoch_lagged["clip_fraction"] - epoch_now["clip_fraction"]) < 0.05
        assert epoch_coupled["approx_kl"] > 0.03 and epoch_coupled["clip_fraction"] > 0.3


def _untagged(storage: RolloutStorage) -> RolloutStorage:
    """The lagged rollout as the trainer treated it before decoupling: no acting version."""
    plain = copy.deepcopy(storage)
    plain.acting_version = None
    return plain


def test_the_kl_early_stop_keeps_the_serial_epochs_on_a_lagged_rollout(small_config: PolicyConfig) -> None:
    torch.manual_seed(2)
    policy = NaviPolicy(small_config)
    storage = collected(policy)
    older = acted_earlier(storage)
    target = 0.01
    assert learner(policy, target_kl=target).update(storage).epochs_run == 3  # acted now: all epochs
    assert learner(policy, target_kl=target).update(_untagged(older)).epochs_run == 1  # the lag trips it
    assert learner(policy, target_kl=target).update(older).epochs_run == 3  # decoupled: the update's step
