"""policy.visit_prediction: a head on the core predicts the visit memory's features; PPO trains it."""

from __future__ import annotations

import pytest
import torch

from navi_actor.algorithms.losses import visit_prediction_loss
from navi_actor.algorithms.ppo import PPOLearner
from navi_actor.algorithms.update_metrics import VISIT_METRIC
from navi_actor.config import PPOConfig
from navi_actor.envs.point import PointGoalEnv
from navi_actor.inference.stepper import PolicyStepper
from navi_actor.memory import VisitMemoryConfig
from navi_actor.models import NaviPolicy, PolicyConfig
from navi_actor.runners.rollout_collector import RolloutCollector
from navi_actor.storage import RolloutStorage

AZ, EL, B = 16, 8, 3
EAGER = VisitMemoryConfig(source="positions", write_every=1, exclusion_window=0, radius=20.0, height=50.0)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def config(**extra: object) -> PolicyConfig:
    sizes = {"azimuth": AZ, "elevation": EL, "embed_dim": 32, "vit_dim": 32, "vit_layers": 1}
    return PolicyConfig(visit_input=False, temporal_core="gru", **sizes, **extra)  # type: ignore[arg-type]


def predicting_policy() -> NaviPolicy:
    torch.manual_seed(0)
    return NaviPolicy(config(visit_prediction=True, visits=EAGER, init_log_std=0.0, log_std_max=1.0)).eval()


def collected(policy: NaviPolicy, features: int) -> tuple[RolloutStorage, RolloutCollector]:
    env = PointGoalEnv(B, azimuth=AZ, elevation=EL, max_steps=1000)
    storage = RolloutStorage(
        16, B, obs_shape=env.observation_shape, action_dim=4, state_size=policy.state_size,
        sequence_length=8, visit_features=features,
    )  # fmt: skip
    collector = RolloutCollector(env, policy, storage, seed=0)
    collector.collect(0.99, 0.95)
    return storage, collector


def test_the_loss_is_smallest_at_the_targets_where_it_is_their_entropy() -> None:
    targets = torch.tensor([[0.0, 0.25, 0.5, 0.9]])
    logits = torch.logit(targets.clamp(1e-6, 1 - 1e-6)).requires_grad_(True)
    loss = visit_prediction_loss(logits, targets)
    loss.backward()
    assert logits.grad is not None and float(logits.grad.abs().max()) < 1e-6
    p = targets[:, 1:]
    entropy = -(p * p.log() + (1 - p) * (1 - p).log()).sum() / targets.numel()
    torch.testing.assert_close(loss.detach(), entropy, atol=1e-5, rtol=1e-5)
    assert float(visit_prediction_loss(logits.detach() + 1.0, targets)) > float(loss.detach())


def test_a_predicting_policy_acts_as_a_plain_one_without_poses_and_predicts_every_step() -> None:
    torch.manual_seed(0)
    plain = NaviPolicy(config()).eval()
    policy = predicting_policy()
    assert policy.visit_head is not None and plain.visit_head is None
    assert policy.keeps_visit_features and not plain.keeps_visit_features
    obs, start = torch.rand(B, 3, AZ, EL), torch.ones(B, dtype=torch.bool)
    torch.manual_seed(0)
    plain_policy = NaviPolicy(config(init_log_std=0.0, log_std_max=1.0)).eval()
    a = plain_policy.act(obs, plain_policy.initial_state(B), start, deterministic=True)
    b = policy.act(obs, policy.initial_state(B), start, deterministic=True)  # no visit features needed
    torch.testing.assert_close(a.action, b.action)  # the head only adds a loss, not an input
    assert b.visit_features is None
    PolicyStepper(policy, B)  # the brains have no poses, and this policy needs none to act
    T = 5
    out = policy.evaluate_sequences(
        torch.rand(T, B, 3, AZ, EL), torch.zeros(T, B, 4), policy.initial_state(B),
        torch.zeros(T, B, dtype=torch.bool),
    )  # fmt: skip
    assert out.visit_logits is not None and tuple(out.visit_logits.shape) == (T, B, EAGER.features)
    assert plain.evaluate_sequences(
        torch.rand(T, B, 3, AZ, EL), torch.zeros(T, B, 4), plain.initial_state(B),
        torch.zeros(T, B, dtype=torch.bool),
    ).visit_logits is None  # fmt: skip


def test_the_collector_records_the_targets_from_the_drones_poses() -> None:
    policy = predicting_policy()
    storage, collector = collected(policy, EAGER.features)
    assert collector.visits is not None
    assert int(collector.visits.steps.max()) == 16  # remembered once per acting step, not by the bootstrap
    assert float(storage.visit_features[storage.episode_starts].abs().max()) == 0.0  # no past yet
    assert float(storage.visit_features[2:].max()) > 0.0  # the drones were near their past positions


def test_ppo_trains_the_head_towards_the_recorded_features_and_reports_the_loss() -> None:
    policy = predicting_policy()
    storage, _ = collected(policy, EAGER.features)
    assert policy.visit_head is not None
    before = policy.visit_head.weight.detach().clone()
    learner = PPOLearner(policy, PPOConfig(epochs=1, num_minibatches=1, learning_rate=3e-3))
    losses = [learner.update(storage).metrics[VISIT_METRIC] for _ in range(30)]
    assert not torch.equal(before, policy.visit_head.weight.detach())
    assert losses[-1] < 0.8 * losses[0]  # it learns the features of this rollout
    plain = NaviPolicy(config()).eval()
    plain_storage, _ = collected(plain, 0)
    metrics = PPOLearner(plain, PPOConfig(epochs=1, num_minibatches=1)).update(plain_storage).metrics
    assert VISIT_METRIC not in metrics  # only a policy with the head reports it


def test_without_the_coefficient_the_head_gets_no_gradient() -> None:
    policy = predicting_policy()
    storage, _ = collected(policy, EAGER.features)
    assert policy.visit_head is not None
    before = policy.visit_head.weight.detach().clone()
    cfg = PPOConfig(epochs=1, num_minibatches=1, visit_prediction_coef=0.0)
    result = PPOLearner(policy, cfg).update(storage)
    assert result.metrics[VISIT_METRIC] > 0.0  # still reported
    torch.testing.assert_close(policy.visit_head.weight.detach(), before)
